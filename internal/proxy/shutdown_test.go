package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// slowServer is a 2026-07-28 server whose tools/call never ends by
// itself: it tells started when a call arrives and cancelled when the
// call's request ends on the client (the stream's end, in this era).
type slowServer struct {
	fakeServer
	started, cancelled chan string
}

func (s slowServer) Request(ctx context.Context, req *jsonrpc.Request, opts transport.RequestOptions) (*jsonrpc.Response, error) {
	if req.Method != "tools/call" {
		return s.fakeServer.Request(ctx, req, opts)
	}
	name, _ := jsonArg(req.Params, "name")
	s.started <- name
	<-ctx.Done()
	s.cancelled <- name
	return nil, ctx.Err()
}

func jsonArg(params json.RawMessage, key string) (string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(params, &m); err != nil {
		return "", err
	}
	var v string
	err := json.Unmarshal(m[key], &v)
	return v, err
}

// wait bounds a wait that the code under test must end; it never paces the
// test.
const wait = time.Minute

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("%s: nothing within %v", what, wait)
		panic("unreachable")
	}
}

// lockedBuffer is the proxy's output, read while the proxy writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	err error // returned by every Write when set
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return 0, b.err
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startSlow serves a host on a pipe, over slowServer, and starts one
// tools/call of a legacy host (ID 1) and one of a 2026-07-28 host (ID 2).
func startSlow(t *testing.T, ctx context.Context, out io.Writer) (srv slowServer, hostIn *io.PipeWriter, served chan error) {
	t.Helper()
	srv = slowServer{started: make(chan string, 2), cancelled: make(chan string, 2)}
	c, err := snodo.Connect(context.Background(), srv, &snodo.Options{Era: snodo.EraModern})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	p := New(Config{}, pr, out)
	served = make(chan error, 1)
	go func() { served <- p.Serve(ctx, c) }()
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow-legacy"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow-modern","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	} {
		if _, err := io.WriteString(pw, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{recv(t, srv.started, "first call on the server"): true, recv(t, srv.started, "second call on the server"): true}
	if !got["slow-legacy"] || !got["slow-modern"] {
		t.Fatalf("calls on the server: %v", got)
	}
	return srv, pw, served
}

func assertCancelledOnServer(t *testing.T, srv slowServer) {
	t.Helper()
	got := map[string]bool{recv(t, srv.cancelled, "cancellation on the server"): true, recv(t, srv.cancelled, "cancellation on the server"): true}
	if !got["slow-legacy"] || !got["slow-modern"] {
		t.Errorf("calls cancelled on the server: %v", got)
	}
}

// The end of the host's input (a host that exited or was killed) cancels
// every call in flight on the server at once, and Serve returns: nobody is
// left to read an answer, and none is written.
func TestProxyHostEOFCancelsCallsInFlight(t *testing.T) {
	out := &lockedBuffer{}
	srv, hostIn, served := startSlow(t, context.Background(), out)
	hostIn.Close()
	assertCancelledOnServer(t, srv)
	if err := recv(t, served, "Serve's return after the host's EOF"); err != nil {
		t.Errorf("Serve: %v", err)
	}
	if s := out.String(); s != "" {
		t.Errorf("the proxy answered a host that is gone:\n%s", s)
	}
}

// A write to the host that fails (its pipe broke) ends the proxy as the
// end of its input does, though the input is still open.
func TestProxyHostBrokenPipeCancelsCallsInFlight(t *testing.T) {
	out := &lockedBuffer{}
	srv, hostIn, served := startSlow(t, context.Background(), out)
	out.mu.Lock()
	out.err = errors.New("broken pipe")
	out.mu.Unlock()
	// A ping is answered at once: the answer's write fails.
	if _, err := io.WriteString(hostIn, `{"jsonrpc":"2.0","id":3,"method":"ping"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	assertCancelledOnServer(t, srv)
	recv(t, served, "Serve's return after a failed write to the host")
}

// When Serve's context ends (snodo-run proxy: SIGINT or SIGTERM), every
// host request in flight, of either era, is cancelled on the server and
// answered with a -32000 error that says why, before Serve returns.
func TestProxyShutdownAnswersRequestsInFlight(t *testing.T) {
	out := &lockedBuffer{}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	srv, _, served := startSlow(t, ctx, out)
	cancel(errors.New("received terminated"))
	assertCancelledOnServer(t, srv)
	if err := recv(t, served, "Serve's return after its context ended"); err != nil {
		t.Errorf("Serve: %v", err)
	}
	answers := map[string]*jsonrpc.Error{}
	for _, line := range strings.Split(out.String(), "\n") {
		if line == "" {
			continue
		}
		m, err := jsonrpc.Decode([]byte(line))
		if err != nil {
			t.Fatalf("the proxy wrote %q: %v", line, err)
		}
		if r, ok := m.(*jsonrpc.Response); ok {
			answers[r.ID.String()] = r.Error
		}
	}
	for _, id := range []string{"1", "2"} {
		e, ok := answers[id]
		switch {
		case !ok:
			t.Errorf("request %s in flight was not answered at shutdown:\n%s", id, out.String())
		case e == nil:
			t.Errorf("request %s answered with a result at shutdown", id)
		case e.Code != jsonrpc.CodeConnectionClosed || !strings.Contains(e.Message, "shutting down") || !strings.Contains(e.Message, "received terminated"):
			t.Errorf("request %s answered %d %q, want -32000 saying the proxy is shutting down and why", id, e.Code, e.Message)
		}
	}
}
