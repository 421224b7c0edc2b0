package runtime

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/interop/gosdkserver"
	"github.com/snodo/snodo/transport"
)

// sseOnlyServer serves the interop server with the Go SDK's HTTP+SSE
// handler (2024-11-05) only: GET opens the stream, POSTs go to the
// session endpoint it names, and a POST to the SSE URL itself — what a
// Streamable HTTP client sends first — is answered with refusal, as such
// servers do (the SDK's 400, or 405). It records each request's method
// and whether it named a session.
type sseOnlyServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []string // "GET", "POST session", "POST bare"
}

func newSSEOnlyServer(t *testing.T, refusal int) *sseOnlyServer {
	t.Helper()
	s := gosdkserver.NewServer([]string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"})
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := &sseOnlyServer{}
	srv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		what := r.Method
		if r.Method == http.MethodPost {
			what += " bare"
			if r.URL.Query().Get("sessionid") != "" {
				what = "POST session"
			}
		}
		srv.mu.Lock()
		srv.reqs = append(srv.reqs, what)
		srv.mu.Unlock()
		if what == "POST bare" && refusal != 0 {
			http.Error(w, http.StatusText(refusal), refusal)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}

func (s *sseOnlyServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...)
}

// lockedBuffer is a log destination for goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A URL whose server speaks only HTTP+SSE: Streamable HTTP is tried first,
// its initialize POST is refused (405 here, 400 from the Go SDK's own
// handler), and the Runner falls back to GET the same URL as an SSE
// stream, saying so in its log; calls then go over the stream.
func TestRemoteFallsBackToSSE(t *testing.T) {
	for _, refusal := range []int{http.StatusMethodNotAllowed, 0} {
		t.Run(http.StatusText(refusal), func(t *testing.T) {
			srv := newSSEOnlyServer(t, refusal)
			var log lockedBuffer
			ctx := context.Background()
			rt, err := Start(ctx, Config{
				Server: Server{URL: srv.URL},
				Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close(ctx)
			if srv := rt.Client().Server(); srv.Era != snodo.EraLegacy || srv.Implementation.Name != "interop-gosdk" {
				t.Fatalf("server %+v", rt.Client().Server())
			}
			res, err := rt.Client().CallTool(ctx, "count", map[string]int{"steps": 2, "delay_ms": 1})
			if err != nil || textOf(res) != "counted to 2" {
				t.Fatalf("count: %+v, %v", res, err)
			}
			if !strings.Contains(log.String(), "trying the HTTP+SSE transport") {
				t.Errorf("the log does not say the transport fell back:\n%s", log.String())
			}
			reqs := strings.Join(srv.requests(), ", ")
			if !strings.HasPrefix(reqs, "POST bare, POST bare, GET, POST session") || strings.Count(reqs, "POST bare") != 2 {
				t.Errorf("requests: %s; want the Streamable HTTP probe and initialize, then the SSE stream and its session", reqs)
			}
		})
	}
}

// Server.Transport http forbids the fallback: the refused initialize is
// the error, and the SSE stream is never opened. Server.Transport sse goes
// straight to the stream, without a Streamable HTTP POST.
func TestRemoteTransportForced(t *testing.T) {
	ctx := context.Background()
	srv := newSSEOnlyServer(t, http.StatusMethodNotAllowed)
	_, err := Start(ctx, Config{Server: Server{URL: srv.URL, Transport: TransportHTTP}})
	var se *transport.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusMethodNotAllowed {
		t.Fatalf("got %v, want the 405 to the initialize POST", err)
	}
	for _, r := range srv.requests() {
		if r != "POST bare" {
			t.Fatalf("requests %v: the SSE stream was opened", srv.requests())
		}
	}

	srv = newSSEOnlyServer(t, http.StatusMethodNotAllowed)
	rt, err := Start(ctx, Config{Server: Server{URL: srv.URL, Transport: TransportSSE}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Client().CallTool(ctx, "count", map[string]int{"steps": 1, "delay_ms": 1}); err != nil {
		t.Error(err)
	}
	rt.Close(ctx)
	if reqs := srv.requests(); len(reqs) == 0 || reqs[0] != "GET" || strings.Contains(strings.Join(reqs, ","), "bare") {
		t.Errorf("requests %v: want the SSE stream first and no Streamable HTTP POST", reqs)
	}

	// HTTP+SSE carries the legacy era only; a command has no transport.
	for _, cfg := range []Config{
		{Server: Server{URL: srv.URL, Transport: TransportSSE}, Protocol: "modern"},
		{Server: Server{URL: srv.URL, Transport: "websocket"}},
		{Server: Server{Command: "true", Transport: TransportSSE}},
	} {
		if rt, err := Start(ctx, cfg); err == nil {
			rt.Close(ctx)
			t.Errorf("%+v: started", cfg)
		}
	}
}
