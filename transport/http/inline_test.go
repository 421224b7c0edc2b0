package http_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	nethttp "net/http"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	mcphttp "github.com/snodo/snodo/transport/http"
)

// rawServer is a minimal HTTP/1.1 MCP endpoint on a listener of its own: a
// goroutine per connection reads each request with http.ReadRequest and
// answers it with the request's params as the result, in a JSON body.
// Unlike net/http's server, which starts a goroutine per request (its
// background read), it starts none, so the goroutines a test counts are
// the client's.
func rawServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { serveRaw(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

func serveRaw(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	bw := bufio.NewWriter(c)
	for {
		req, err := nethttp.ReadRequest(br)
		if err != nil {
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		id, params := scanMember(body, `"id":`), scanMember(body, `"params":`)
		out := `{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + string(params) + `}`
		bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(out)) + "\r\n\r\n" + out)
		if bw.Flush() != nil {
			return
		}
	}
}

func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// A request answered with a JSON body runs in its caller's goroutine:
// sequential requests on a kept connection start no goroutine each (one
// per request would grow its stack afresh through net/http's client every
// time). This holds with a context that can end and a timeout, as
// snodo.Client gives them.
func TestJSONRequestStartsNoGoroutine(t *testing.T) {
	tr, err := mcphttp.New(mcphttp.Config{URL: rawServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := &jsonrpc.Request{Method: "tools/call", Params: benchParams}
	opts := transport.RequestOptions{Timeout: time.Minute, Dialect: benchHeaders}
	call := func() {
		resp, err := tr.Request(ctx, req, opts)
		if err != nil {
			t.Fatal(err)
		}
		if string(resp.Result) != string(benchParams) {
			t.Fatalf("result %s, want %s", resp.Result, benchParams)
		}
	}
	call() // the connection and its reader and writer
	const n = 200
	before := goroutinesCreated()
	for range n {
		call()
	}
	if got := goroutinesCreated() - before; got >= n/4 {
		t.Errorf("%d sequential requests started %d goroutines, want fewer than %d", n, got, n/4)
	}
}

// A request whose POST has no answer yet (not even its status) ends as one
// whose answer is being read: at its timeout (-32001), when its context
// ends, at Close (ErrClosed), and with a response that arrives on the GET
// stream meanwhile; in the initialize era the server is sent
// notifications/cancelled for the first two, and the POST is closed.
func TestRequestEndsBeforeThePOSTIsAnswered(t *testing.T) {
	cases := []struct {
		name   string
		run    func(t *testing.T, tr *mcphttp.Transport, req *jsonrpc.Request, posted <-chan jsonrpc.ID, viaGET chan<- jsonrpc.ID) error
		check  func(t *testing.T, err error)
		cancel bool // notifications/cancelled is sent
	}{{
		name: "timeout",
		run: func(t *testing.T, tr *mcphttp.Transport, req *jsonrpc.Request, _ <-chan jsonrpc.ID, _ chan<- jsonrpc.ID) error {
			_, err := tr.Request(context.Background(), req, transport.RequestOptions{Dialect: legacyHeaders, Headers: session, Timeout: 50 * time.Millisecond})
			return err
		},
		check: func(t *testing.T, err error) {
			if !errors.Is(err, transport.ErrTimeout) {
				t.Fatalf("err %v, want a timeout", err)
			}
		},
		cancel: true,
	}, {
		name: "context",
		run: func(t *testing.T, tr *mcphttp.Transport, req *jsonrpc.Request, posted <-chan jsonrpc.ID, _ chan<- jsonrpc.ID) error {
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-posted; cancel() }()
			_, err := tr.Request(ctx, req, transport.RequestOptions{Dialect: legacyHeaders, Headers: session, Timeout: time.Minute})
			return err
		},
		check: func(t *testing.T, err error) {
			var e *jsonrpc.Error
			if !errors.As(err, &e) || e.Kind != jsonrpc.KindTransport || !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v, want the context's end", err)
			}
		},
		cancel: true,
	}, {
		name: "close",
		run: func(t *testing.T, tr *mcphttp.Transport, req *jsonrpc.Request, posted <-chan jsonrpc.ID, _ chan<- jsonrpc.ID) error {
			go func() { <-posted; tr.Close() }()
			_, err := tr.Request(context.Background(), req, transport.RequestOptions{Dialect: legacyHeaders, Headers: session, Timeout: time.Minute})
			return err
		},
		check: func(t *testing.T, err error) {
			if !errors.Is(err, mcphttp.ErrClosed) {
				t.Fatalf("err %v, want ErrClosed", err)
			}
		},
	}, {
		name: "response on the GET stream",
		run: func(t *testing.T, tr *mcphttp.Transport, req *jsonrpc.Request, posted <-chan jsonrpc.ID, viaGET chan<- jsonrpc.ID) error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := tr.Notify(ctx, &jsonrpc.Notification{Method: "notifications/initialized"}, transport.NotifyOptions{Dialect: legacyHeaders, Headers: session}); err != nil {
				t.Fatal(err)
			}
			go func() { viaGET <- <-posted }()
			type answer struct {
				resp *jsonrpc.Response
				err  error
			}
			answered := make(chan answer, 1)
			go func() {
				resp, err := tr.Request(ctx, req, transport.RequestOptions{Dialect: legacyHeaders, Headers: session, Timeout: time.Minute})
				answered <- answer{resp, err}
			}()
			var a answer
			select {
			case a = <-answered:
			case <-time.After(10 * time.Second):
				tr.Close()
				t.Fatal("the response on the GET stream did not end the request")
			}
			if a.err == nil && string(a.resp.Result) != `{"via":"get"}` {
				t.Fatalf("result %s", a.resp.Result)
			}
			return a.err
		},
		check: func(t *testing.T, err error) {
			if err != nil {
				t.Fatal(err)
			}
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			posted := make(chan jsonrpc.ID, 1)
			viaGET := make(chan jsonrpc.ID, 1)
			postClosed := make(chan struct{})
			srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
				switch m := rec.Msg.(type) {
				case *jsonrpc.Notification:
					w.WriteHeader(202)
				case *jsonrpc.Request:
					posted <- m.ID
					<-r.Context().Done() // no status, no body
					close(postClosed)
				default:
					send := sse(w)
					select {
					case id := <-viaGET:
						send("data: %s\n\n", result(id, `{"via":"get"}`))
					case <-r.Context().Done():
					}
					<-r.Context().Done()
				}
			})
			tr := newTransport(t, mcphttp.Config{URL: srv.URL})
			err := c.run(t, tr, &jsonrpc.Request{ID: jsonrpc.Int64ID(42), Method: "tools/call"}, posted, viaGET)
			c.check(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			select {
			case <-postClosed:
			case <-ctx.Done():
				t.Fatal("the POST was left open")
			}
			if c.cancel {
				n := srv.waitFor(t, ctx, isMethod("notifications/cancelled"))
				if !strings.Contains(string(n.Body), `"requestId":42`) {
					t.Errorf("cancelled %s", n.Body)
				}
			}
		})
	}
}
