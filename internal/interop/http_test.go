package interop

import (
	"context"
	"errors"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/interop/gosdkserver"
	"github.com/snodo/snodo/jsonrpc"
	mcphttp "github.com/snodo/snodo/transport/http"
)

// httpExchange is one HTTP request the Go SDK's handler received.
type httpExchange struct {
	method string
	header nethttp.Header
	body   string
	status int
}

// sdkHTTPServer serves the interop server with the official Go SDK's
// Streamable HTTP handler, recording every exchange.
type sdkHTTPServer struct {
	*httptest.Server
	mu  sync.Mutex
	log []httpExchange
	// ended receives the body of each POST whose handler has returned.
	ended chan string
}

type statusRecorder struct {
	nethttp.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() { r.ResponseWriter.(nethttp.Flusher).Flush() }

func startHTTPServer(t *testing.T, versions []string, stateless bool) *sdkHTTPServer {
	t.Helper()
	s := gosdkserver.NewServer(versions)
	h := mcp.NewStreamableHTTPHandler(func(*nethttp.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless, PropagateRequestCancellation: stateless})
	srv := &sdkHTTPServer{ended: make(chan string, 256)}
	srv.Server = httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		rec := &statusRecorder{ResponseWriter: w, status: 200}
		ex := httpExchange{method: r.Method, header: r.Header.Clone(), body: string(body)}
		h.ServeHTTP(rec, r)
		ex.status = rec.status
		srv.mu.Lock()
		srv.log = append(srv.log, ex)
		srv.mu.Unlock()
		select {
		case srv.ended <- ex.body:
		default:
		}
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}

func (s *sdkHTTPServer) exchanges() []httpExchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]httpExchange(nil), s.log...)
}

func connectHTTP(t *testing.T, url string, opts ...snodo.Option) (*snodo.Client, *mcphttp.Transport) {
	t.Helper()
	tr, err := mcphttp.New(mcphttp.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := snodo.Connect(ctx, tr, append(allHandlers(), opts...)...)
	if err != nil {
		tr.Close()
		t.Fatal(err)
	}
	return c, tr
}

var legacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// The Go SDK's stateful Streamable HTTP handler serves the initialize era:
// server/discover is refused with -32022 naming legacy versions, Connect
// negotiates 2025-11-25 with initialize and carries the session ID the
// server issued; the server's elicitation, sampling and roots requests
// arrive on SSE streams and are answered by the same handlers with POSTs;
// progress, timeouts (with notifications/cancelled), emulated listen; and
// Close ends the session with DELETE.
func TestHTTPGoSDKLegacy(t *testing.T) {
	srv := startHTTPServer(t, legacyVersions, false)
	c, _ := connectHTTP(t, srv.URL)
	if c.Era() != snodo.EraLegacy || c.ProtocolVersion() != "2025-11-25" || c.ServerInfo().Name != "interop-gosdk" {
		t.Fatalf("era %v version %s server %+v", c.Era(), c.ProtocolVersion(), c.ServerInfo())
	}
	exerciseCommon(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		t.Error(err)
	}
	listenSeesToolAndResourceChanges(t, ctx, c)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	var session string
	var deleted, cancelled, answered, getStream bool
	for _, ex := range srv.exchanges() {
		if strings.Contains(ex.body, `"method":"initialize"`) {
			continue
		}
		if strings.Contains(ex.body, `"method":"server/discover"`) {
			continue
		}
		id := ex.header.Get("Mcp-Session-Id")
		if id == "" {
			t.Errorf("%s without a session ID: %s", ex.method, ex.body)
			continue
		}
		if session == "" {
			session = id
		} else if id != session {
			t.Errorf("session ID changed: %s, then %s", session, id)
		}
		if ex.method != nethttp.MethodDelete && ex.header.Get("Mcp-Protocol-Version") != "2025-11-25" {
			t.Errorf("%s %s: MCP-Protocol-Version %q", ex.method, ex.body, ex.header.Get("Mcp-Protocol-Version"))
		}
		deleted = deleted || ex.method == nethttp.MethodDelete
		getStream = getStream || ex.method == nethttp.MethodGet
		cancelled = cancelled || strings.Contains(ex.body, `"notifications/cancelled"`)
		answered = answered || (strings.Contains(ex.body, `"result":{"action":"accept"`) && ex.status == nethttp.StatusAccepted)
	}
	if !deleted || !cancelled || !answered || !getStream {
		t.Errorf("DELETE %v, notifications/cancelled %v, elicitation answered with a POST (202) %v, GET stream %v", deleted, cancelled, answered, getStream)
	}
}

// The Go SDK's stateless handler serves 2026-07-28: Connect discovers it,
// every POST carries MCP-Protocol-Version, Mcp-Method and (for tools/call
// and resources/read) Mcp-Name, which the SDK validates; input requests
// come back as input_required results; progress on the response stream; a
// timed-out request closes its stream (no notifications/cancelled);
// subscriptions/listen carries the change events; no session, no DELETE.
func TestHTTPGoSDKModern(t *testing.T) {
	srv := startHTTPServer(t, []string{"2026-07-28", "2025-11-25"}, true)
	c, _ := connectHTTP(t, srv.URL)
	if c.Era() != snodo.EraModern || c.ProtocolVersion() != "2026-07-28" || c.ServerInfo().Name != "interop-gosdk" {
		t.Fatalf("era %v version %s server %+v", c.Era(), c.ProtocolVersion(), c.ServerInfo())
	}
	exerciseCommon(t, c)
	// The requests given up by timeout and by ctx (1000 steps of 50 ms)
	// closed their streams, and the server stopped their tools.
	stopped := 0
	deadline := time.After(10 * time.Second)
	for stopped < 2 {
		select {
		case body := <-srv.ended:
			if strings.Contains(body, `"steps":1000`) {
				stopped++
			}
		case <-deadline:
			t.Fatalf("%d of the 2 abandoned tool calls were stopped on the server", stopped)
		}
	}
	if got := mustCall(t, c, "multi", nil); got != "three rounds: snodo-test: Paris, 1 roots" {
		t.Errorf("multi: %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	listenSeesToolAndResourceChanges(t, ctx, c)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ex := range srv.exchanges() {
		if ex.method != nethttp.MethodPost {
			t.Errorf("%s request in the 2026-07-28 era", ex.method)
			continue
		}
		if strings.Contains(ex.body, `"notifications/cancelled"`) {
			t.Errorf("notifications/cancelled over 2026-07-28 HTTP: %s", ex.body)
		}
		if ex.header.Get("Mcp-Method") == "" || ex.header.Get("Mcp-Protocol-Version") != "2026-07-28" {
			t.Errorf("POST %s: Mcp-Method %q, MCP-Protocol-Version %q", ex.body, ex.header.Get("Mcp-Method"), ex.header.Get("Mcp-Protocol-Version"))
		}
		if ex.status >= 400 {
			t.Errorf("POST %s: HTTP %d", ex.body, ex.status)
		}
	}
}

// A refused connection is an error, not a legacy server.
func TestHTTPConnectionRefusedDoesNotFallBack(t *testing.T) {
	srv := httptest.NewServer(nethttp.NotFoundHandler())
	url := srv.URL
	srv.Close()
	tr, err := mcphttp.New(mcphttp.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	_, err = snodo.Connect(context.Background(), tr)
	var e *snodo.Error
	if !errors.As(err, &e) || e.Code != jsonrpc.CodeConnectionClosed || strings.Contains(err.Error(), "initialize") {
		t.Fatalf("Connect: %v", err)
	}
}
