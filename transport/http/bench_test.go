package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	mcphttp "github.com/snodo/snodo/transport/http"
)

// leanServer is an in-process MCP endpoint that answers every POST with
// the request's params as its result, in a JSON body, reading only the ID
// with a byte scan: with it, what is measured is the client. conns counts
// the connections it accepted.
type leanServer struct {
	*httptest.Server
	conns atomic.Int64
}

// newLeanServer starts a leanServer; before, when not nil, runs at the
// start of every request.
func newLeanServer(tb testing.TB, before ...func(r *nethttp.Request)) *leanServer {
	tb.Helper()
	s := &leanServer{}
	s.Server = httptest.NewUnstartedServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		for _, fn := range before {
			fn(r)
		}
		var buf [512]byte
		n, _ := io.ReadFull(r.Body, buf[:])
		body := buf[:n]
		id := scanMember(body, `"id":`)
		params := scanMember(body, `"params":`)
		if len(params) == 0 {
			params = []byte("{}")
		}
		out := make([]byte, 0, 64+len(id)+len(params))
		out = append(out, `{"jsonrpc":"2.0","id":`...)
		out = append(out, id...)
		out = append(out, `,"result":`...)
		out = append(out, params...)
		out = append(out, '}')
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		w.Write(out)
	}))
	s.Config.ConnState = func(_ net.Conn, st nethttp.ConnState) {
		if st == nethttp.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	tb.Cleanup(s.Close)
	return s
}

// scanMember returns the JSON value after key in a compact message: up to
// the comma or brace that closes it (strings without those characters,
// numbers, or a balanced object).
func scanMember(b []byte, key string) []byte {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return nil
	}
	v := b[i+len(key):]
	if len(v) > 0 && v[0] == '{' {
		depth := 0
		for j, c := range v {
			switch c {
			case '{':
				depth++
			case '}':
				depth--
				if depth == 0 {
					return v[:j+1]
				}
			}
		}
		return nil
	}
	if j := bytes.IndexAny(v, ",}"); j >= 0 {
		return v[:j]
	}
	return nil
}

var benchParams = json.RawMessage(`{"name":"echo","arguments":{"text":"hello, world"}}`)

// benchHeaders is what snodo.Client sends with a tools/call of the
// 2026-07-28 era.
var benchHeaders = fixedDialect{
	{Name: "MCP-Protocol-Version", Value: "2026-07-28"},
	{Name: "Mcp-Method", Value: "tools/call"},
	{Name: "Mcp-Name", Value: "echo"},
}

func benchTransport(b *testing.B, s *leanServer) *mcphttp.Transport {
	b.Helper()
	tr, err := mcphttp.New(mcphttp.Config{URL: s.URL + "/mcp"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tr.Close() })
	return tr
}

// meter is what a benchmark reports beside time: the connections the
// server accepted, and the process's CPU time per operation (client and
// in-process server together; the floor has the same server), which a
// busy machine disturbs less than wall time.
type meter struct {
	s     *leanServer
	conns int64
	cpu   time.Duration
}

func startMeter(s *leanServer) meter {
	cpu, _ := processCPU()
	return meter{s: s, conns: s.conns.Load(), cpu: cpu}
}

func (m meter) report(b *testing.B) {
	b.ReportMetric(float64(m.s.conns.Load()-m.conns), "conns")
	if cpu, ok := processCPU(); ok {
		b.ReportMetric(float64((cpu-m.cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkHTTPRoundTrip is one tools/call at a time over Streamable HTTP,
// with a timeout as snodo.Client gives it (60 s by default).
func BenchmarkHTTPRoundTrip(b *testing.B) {
	s := newLeanServer(b)
	tr := benchTransport(b, s)
	req := &jsonrpc.Request{Method: "tools/call", Params: benchParams}
	opts := transport.RequestOptions{Timeout: time.Minute, Dialect: benchHeaders}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	m := startMeter(s)
	for range b.N {
		resp, err := tr.Request(ctx, req, opts)
		if err != nil || len(resp.Result) == 0 {
			b.Fatal(resp, err)
		}
	}
	m.report(b)
}

// BenchmarkHTTPConcurrent64 is 64 callers with requests in flight at
// once; ns/op is per request, conns the connections the server accepted.
func BenchmarkHTTPConcurrent64(b *testing.B) {
	s := newLeanServer(b)
	tr := benchTransport(b, s)
	req := &jsonrpc.Request{Method: "tools/call", Params: benchParams}
	opts := transport.RequestOptions{Timeout: time.Minute, Dialect: benchHeaders}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	m := startMeter(s)
	run64(b, func() error {
		_, err := tr.Request(ctx, req, opts)
		return err
	})
	m.report(b)
}

func run64(b *testing.B, call func() error) {
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := call(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// floorClient is the raw net/http floor: the same POST (body and headers,
// the protocol's among them) with the standard library alone, on a client
// that keeps an idle connection per caller.
type floorClient struct {
	client *nethttp.Client
	url    string
}

func newFloor(b *testing.B, s *leanServer) *floorClient {
	tr := &nethttp.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	return &floorClient{client: &nethttp.Client{Transport: tr}, url: s.URL + "/mcp"}
}

// The same body the transport sends.
var floorBody = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, world"}}}`)

func (f *floorClient) call() error {
	req, err := nethttp.NewRequest(nethttp.MethodPost, f.url, bytes.NewReader(floorBody))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for _, h := range benchHeaders {
		req.Header.Set(h.Name, h.Value)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return err
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	return err
}

// BenchmarkHTTPFloorRoundTrip is the floor of BenchmarkHTTPRoundTrip.
func BenchmarkHTTPFloorRoundTrip(b *testing.B) {
	s := newLeanServer(b)
	f := newFloor(b, s)
	b.ReportAllocs()
	b.ResetTimer()
	m := startMeter(s)
	for range b.N {
		if err := f.call(); err != nil {
			b.Fatal(err)
		}
	}
	m.report(b)
}

// BenchmarkHTTPFloorConcurrent64 is the floor of BenchmarkHTTPConcurrent64.
func BenchmarkHTTPFloorConcurrent64(b *testing.B) {
	s := newLeanServer(b)
	f := newFloor(b, s)
	b.ReportAllocs()
	b.ResetTimer()
	m := startMeter(s)
	run64(b, f.call)
	m.report(b)
}
