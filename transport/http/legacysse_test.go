package http_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	mcphttp "github.com/snodo/snodo/transport/http"
)

// sseWait only bounds a wait that a broken test would make endless.
const sseWait = 30 * time.Second

// sseOnly is a server of the HTTP+SSE transport scripted by the test: GET
// runs stream, which writes the stream; each POST to /message is recorded
// and accepted with 202.
type sseOnly struct {
	*httptest.Server
	posts atomic.Int32
	in    chan jsonrpc.Message
}

func newSSEOnly(t *testing.T, stream func(w nethttp.ResponseWriter, r *nethttp.Request, s *sseOnly)) *sseOnly {
	t.Helper()
	s := &sseOnly{in: make(chan jsonrpc.Message, 64)}
	s.Server = httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.Method == nethttp.MethodGet {
			w.Header().Set("Content-Type", "text/event-stream")
			stream(w, r, s)
			return
		}
		s.posts.Add(1)
		body, _ := io.ReadAll(r.Body)
		if m, err := jsonrpc.Decode(body); err == nil {
			s.in <- m
		}
		w.WriteHeader(nethttp.StatusAccepted)
	}))
	t.Cleanup(func() {
		s.CloseClientConnections()
		s.Close()
	})
	return s
}

func event(w nethttp.ResponseWriter, typ, data string) {
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
	w.(nethttp.Flusher).Flush()
}

func dialSSE(cfg mcphttp.Config) (*mcphttp.SSE, error) {
	ctx, cancel := context.WithTimeout(context.Background(), sseWait)
	defer cancel()
	return mcphttp.DialSSE(ctx, cfg)
}

// An endpoint event naming another origin — another host, another port,
// plain http from https, or credentials in the URL — is refused: DialSSE
// fails with an error wrapping ErrCrossOriginEndpoint, and nothing is
// POSTed, neither there nor anywhere.
func TestSSEEndpointOfAnotherOriginIsRefused(t *testing.T) {
	var other atomic.Int32
	elsewhere := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) { other.Add(1) }))
	defer elsewhere.Close()
	for _, endpoint := range []string{
		elsewhere.URL + "/message",
		"//" + strings.TrimPrefix(elsewhere.URL, "http://") + "/message",
		"https://127.0.0.1/message",
		"http://user:secret@HOST/message",
	} {
		t.Run(endpoint, func(t *testing.T) {
			s := newSSEOnly(t, func(w nethttp.ResponseWriter, r *nethttp.Request, s *sseOnly) {
				event(w, "endpoint", strings.ReplaceAll(endpoint, "HOST", r.Host))
				<-r.Context().Done()
			})
			tr, err := dialSSE(mcphttp.Config{URL: s.URL + "/sse", Header: nethttp.Header{"Authorization": {"Bearer secret"}}})
			if err == nil {
				tr.Close()
				t.Fatal("DialSSE accepted the endpoint")
			}
			if !errors.Is(err, mcphttp.ErrCrossOriginEndpoint) || !errors.Is(err, transport.ErrConnection) {
				t.Fatalf("got %v, want a -32000 error wrapping ErrCrossOriginEndpoint", err)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error shows the credentials: %v", err)
			}
			if n := s.posts.Load() + other.Load(); n != 0 {
				t.Errorf("%d requests sent to an endpoint", n)
			}
		})
	}
	// The same origin written otherwise (a default port, upper case) is
	// the same origin.
	s := newSSEOnly(t, func(w nethttp.ResponseWriter, r *nethttp.Request, s *sseOnly) {
		event(w, "endpoint", "HTTP://"+strings.ToUpper(r.Host)+"/message?session=a#frag")
		<-r.Context().Done()
	})
	tr, err := dialSSE(mcphttp.Config{URL: s.URL + "/sse"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if got := tr.Endpoint(); !strings.HasPrefix(got, s.URL+"/message?session=") || strings.Contains(got, "frag") {
		t.Errorf("endpoint %s", tr.Endpoint())
	}
}

// A stream whose first event is not endpoint, or that ends before one, or
// that is not an SSE stream at all, fails DialSSE with a clear -32000
// error; and nothing is POSTed.
func TestSSEMissingEndpointIsRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		stream func(w nethttp.ResponseWriter, r *nethttp.Request, s *sseOnly)
		want   string
		is     error
	}{
		"message first": {func(w nethttp.ResponseWriter, r *nethttp.Request, s *sseOnly) {
			event(w, "message", `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`)
			<-r.Context().Done()
		}, `first event of the SSE stream is "message", not endpoint`, mcphttp.ErrNoEndpoint},
		"ends first": {func(w nethttp.ResponseWriter, r *nethttp.Request, s *sseOnly) {
			fmt.Fprint(w, ": keep-alive\n\n")
		}, "the SSE stream ended before its endpoint event", mcphttp.ErrNoEndpoint},
		"empty endpoint": {func(w nethttp.ResponseWriter, r *nethttp.Request, s *sseOnly) {
			event(w, "endpoint", " ")
			<-r.Context().Done()
		}, "endpoint event of the SSE stream is not a URL", mcphttp.ErrNoEndpoint},
		"not SSE": {func(w nethttp.ResponseWriter, r *nethttp.Request, s *sseOnly) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{}`)
		}, `Content-Type "application/json", not an SSE stream`, nil},
		"refused": {func(w nethttp.ResponseWriter, r *nethttp.Request, s *sseOnly) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(nethttp.StatusMethodNotAllowed)
		}, "the GET of the SSE stream with HTTP 405", nil},
	} {
		t.Run(name, func(t *testing.T) {
			s := newSSEOnly(t, tc.stream)
			tr, err := dialSSE(mcphttp.Config{URL: s.URL})
			if err == nil {
				tr.Close()
				t.Fatal("DialSSE succeeded")
			}
			if !errors.Is(err, transport.ErrConnection) || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("got %v, want a -32000 error saying %q", err, tc.want)
			}
			if n := s.posts.Load(); n != 0 {
				t.Errorf("%d POSTs", n)
			}
		})
	}
	// A server that sends nothing: ctx bounds the wait.
	s := newSSEOnly(t, func(w nethttp.ResponseWriter, r *nethttp.Request, s *sseOnly) {
		w.(nethttp.Flusher).Flush()
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if _, err := mcphttp.DialSSE(ctx, mcphttp.Config{URL: s.URL}); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "no endpoint event") {
		t.Fatalf("got %v, want the context's end, saying no endpoint event came", err)
	}
}

// An event larger than Config.MaxMessageBytes — in its data, or one line
// without end — ends the stream: the call in flight fails with a -32000
// error wrapping ErrTooLarge and ErrStreamEnded, and so does every later
// call; the oversized event is never buffered whole.
func TestSSEOversizedEventFailsTheCalls(t *testing.T) {
	for name, big := range map[string]string{
		"data lines": strings.Repeat("data: "+strings.Repeat("x", 500)+"\n", 10) + "\n",
		"one line":   "data: " + strings.Repeat("x", 1<<20),
	} {
		t.Run(name, func(t *testing.T) {
			s := newSSEOnly(t, func(w nethttp.ResponseWriter, r *nethttp.Request, s *sseOnly) {
				event(w, "endpoint", "/message")
				select {
				case <-s.in: // the request
				case <-r.Context().Done():
					return
				}
				fmt.Fprint(w, "event: message\n"+big)
				w.(nethttp.Flusher).Flush()
				<-r.Context().Done()
			})
			tr, err := dialSSE(mcphttp.Config{URL: s.URL, MaxMessageBytes: 4096})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			ctx, cancel := context.WithTimeout(context.Background(), sseWait)
			defer cancel()
			_, err = tr.Request(ctx, &jsonrpc.Request{Method: "tools/call"}, transport.RequestOptions{})
			if !errors.Is(err, transport.ErrConnection) || !errors.Is(err, mcphttp.ErrTooLarge) || !errors.Is(err, mcphttp.ErrStreamEnded) {
				t.Fatalf("got %v, want -32000 wrapping ErrTooLarge and ErrStreamEnded", err)
			}
			if _, err := tr.Request(ctx, &jsonrpc.Request{Method: "ping"}, transport.RequestOptions{}); !errors.Is(err, mcphttp.ErrStreamEnded) {
				t.Fatalf("a later call: %v", err)
			}
		})
	}
}

// A stream cut while calls are in flight fails each of them with a -32000
// error that wraps ErrStreamEnded and says the transport cannot resume;
// the transport stops (later calls fail the same way, Done is closed) and
// leaves no goroutine behind (TestMain checks).
func TestSSEStreamCutFailsCallsInFlight(t *testing.T) {
	cut := make(chan struct{})
	s := newSSEOnly(t, func(w nethttp.ResponseWriter, r *nethttp.Request, s *sseOnly) {
		event(w, "endpoint", "/message")
		select {
		case <-cut:
		case <-r.Context().Done():
		}
		// The handler returns: the response, and so the stream, ends.
	})
	tr, err := dialSSE(mcphttp.Config{URL: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	const calls = 3
	errs := make(chan error, calls)
	for i := 0; i < calls; i++ {
		go func() {
			_, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "tools/call"}, transport.RequestOptions{})
			errs <- err
		}()
	}
	for i := 0; i < calls; i++ {
		select {
		case <-s.in:
		case <-time.After(sseWait):
			t.Fatal("the calls were not POSTed")
		}
	}
	close(cut)
	for i := 0; i < calls; i++ {
		select {
		case err := <-errs:
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != jsonrpc.CodeConnectionClosed || je.Kind != jsonrpc.KindTransport ||
				!errors.Is(err, mcphttp.ErrStreamEnded) || !strings.Contains(err.Error(), "cannot resume") {
				t.Fatalf("call in flight: %v, want -32000 wrapping ErrStreamEnded", err)
			}
		case <-time.After(sseWait):
			t.Fatal("a call in flight did not fail")
		}
	}
	select {
	case <-tr.Done():
	case <-time.After(sseWait):
		t.Fatal("Done was not closed")
	}
	if _, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "ping"}, transport.RequestOptions{}); !errors.Is(err, mcphttp.ErrStreamEnded) {
		t.Fatalf("a later call: %v", err)
	}
	if err := tr.Notify(context.Background(), &jsonrpc.Notification{Method: "notifications/initialized"}, transport.NotifyOptions{}); !errors.Is(err, mcphttp.ErrStreamEnded) {
		t.Fatalf("a later notification: %v", err)
	}
}

// A POST refused with a failure status fails its call with the status
// (a -32000 error wrapping *transport.StatusError), or with the server's
// JSON-RPC error response when that is its body; Config.Header goes with
// the GET and every POST.
func TestSSERefusedPostAndHeaders(t *testing.T) {
	var bad atomic.Int32
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			bad.Add(1)
		}
		if r.Method == nethttp.MethodGet {
			w.Header().Set("Content-Type", "text/event-stream")
			event(w, "endpoint", "/message")
			<-r.Context().Done()
			return
		}
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"rpc"`) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(nethttp.StatusBadRequest)
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"bad params"}}`)
			return
		}
		nethttp.Error(w, "no such session", nethttp.StatusNotFound)
	}))
	defer func() { srv.CloseClientConnections(); srv.Close() }()
	tr, err := dialSSE(mcphttp.Config{URL: srv.URL, Header: nethttp.Header{"Authorization": {"Bearer tok"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), sseWait)
	defer cancel()
	_, err = tr.Request(ctx, &jsonrpc.Request{Method: "x"}, transport.RequestOptions{})
	var se *transport.StatusError
	if !errors.As(err, &se) || se.Status != 404 || !strings.Contains(err.Error(), "no such session") {
		t.Fatalf("got %v, want the 404", err)
	}
	resp, err := tr.Request(ctx, &jsonrpc.Request{ID: jsonrpc.Int64ID(9), Method: "rpc"}, transport.RequestOptions{})
	if err != nil || resp.Error == nil || resp.Error.Code != -32602 || resp.ID != jsonrpc.Int64ID(9) {
		t.Fatalf("got %+v, %v, want the server's -32602 as the response", resp, err)
	}
	if n := bad.Load(); n != 0 {
		t.Errorf("%d requests without the configured Authorization header", n)
	}
}

// The GET of the stream follows no redirect to another origin, as every
// request of the transport: the configured headers stay with the URL's
// origin.
func TestSSERedirectToAnotherOriginIsNotFollowed(t *testing.T) {
	var reached atomic.Int32
	elsewhere := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) { reached.Add(1) }))
	defer elsewhere.Close()
	s := newSSEOnly(t, func(w nethttp.ResponseWriter, r *nethttp.Request, s *sseOnly) {
		w.Header().Del("Content-Type")
		nethttp.Redirect(w, r, elsewhere.URL+"/sse", nethttp.StatusTemporaryRedirect)
	})
	_, err := dialSSE(mcphttp.Config{URL: s.URL + "/sse", Header: nethttp.Header{"Authorization": {"Bearer secret"}}})
	if !errors.Is(err, mcphttp.ErrCrossOriginRedirect) || !errors.Is(err, transport.ErrConnection) {
		t.Fatalf("got %v, want a -32000 error wrapping ErrCrossOriginRedirect", err)
	}
	if reached.Load() != 0 {
		t.Error("the redirect was followed")
	}
}

// A server that never answers the POST of a request holds nothing once the
// caller gives the call up: the POST ends with it (the server sees its
// request's context end), and the server is told the call is cancelled.
func TestSSEUnansweredPostEndsWithTheCall(t *testing.T) {
	ended := make(chan struct{})
	cancelled := make(chan struct{}, 1)
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.Method == nethttp.MethodGet {
			w.Header().Set("Content-Type", "text/event-stream")
			event(w, "endpoint", "/message")
			<-r.Context().Done()
			return
		}
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"method":"notifications/cancelled"`) {
			cancelled <- struct{}{}
			w.WriteHeader(nethttp.StatusAccepted)
			return
		}
		<-r.Context().Done() // never answered
		close(ended)
	}))
	defer func() { srv.CloseClientConnections(); srv.Close() }()
	tr, err := dialSSE(mcphttp.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	_, err = tr.Request(context.Background(), &jsonrpc.Request{Method: "tools/call"}, transport.RequestOptions{Timeout: 50 * time.Millisecond})
	if !errors.Is(err, transport.ErrTimeout) {
		t.Fatalf("got %v, want the timeout", err)
	}
	for name, ch := range map[string]<-chan struct{}{"the POST did not end": ended, "no notifications/cancelled": cancelled} {
		select {
		case <-ch:
		case <-time.After(sseWait):
			t.Fatal(name)
		}
	}
}
