package interop

import (
	"context"
	"encoding/json"
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
	"github.com/snodo/snodo/intercept"
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

// statusRecorder tells onStatus the status a handler writes.
type statusRecorder struct {
	nethttp.ResponseWriter
	onStatus func(int)
}

func (r *statusRecorder) WriteHeader(code int) {
	r.onStatus(code)
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() { r.ResponseWriter.(nethttp.Flusher).Flush() }

func startHTTPServer(t *testing.T, versions []string, stateless bool, setup ...func(*mcp.Server)) *sdkHTTPServer {
	t.Helper()
	s := gosdkserver.NewServer(versions)
	for _, f := range setup {
		f(s)
	}
	h := mcp.NewStreamableHTTPHandler(func(*nethttp.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless, PropagateRequestCancellation: stateless})
	srv := &sdkHTTPServer{ended: make(chan string, 256)}
	srv.Server = httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		srv.mu.Lock()
		i := len(srv.log)
		// 200 unless the handler writes another status first.
		srv.log = append(srv.log, httpExchange{method: r.Method, header: r.Header.Clone(), body: string(body), status: 200})
		srv.mu.Unlock()
		rec := &statusRecorder{ResponseWriter: w, onStatus: func(code int) {
			srv.mu.Lock()
			srv.log[i].status = code
			srv.mu.Unlock()
		}}
		h.ServeHTTP(rec, r)
		select {
		case srv.ended <- string(body):
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

func connectHTTP(t *testing.T, url string, interceptors ...intercept.Interceptor) (*snodo.Client, *mcphttp.Transport) {
	t.Helper()
	tr, err := mcphttp.New(mcphttp.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := allHandlers()
	opts.Interceptors = interceptors
	c, err := snodo.Connect(ctx, tr, opts)
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
	if c.Server().Era != snodo.EraLegacy || c.Server().ProtocolVersion != "2025-11-25" || c.Server().Implementation.Name != "interop-gosdk" {
		t.Fatalf("era %v version %s server %+v", c.Server().Era, c.Server().ProtocolVersion, c.Server().Implementation)
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
	srv := startHTTPServer(t, []string{"2026-07-28", "2025-11-25"}, true, addRegionTool)
	c, _ := connectHTTP(t, srv.URL)
	if c.Server().Era != snodo.EraModern || c.Server().ProtocolVersion != "2026-07-28" || c.Server().Implementation.Name != "interop-gosdk" {
		t.Fatalf("era %v version %s server %+v", c.Server().Era, c.Server().ProtocolVersion, c.Server().Implementation)
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
	// x-mcp-header: the SDK checks the Mcp-Param headers against the
	// arguments (-32020 when one is missing or differs); the client learns
	// the annotations from tools/list.
	for _, err := range c.Tools(ctx) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := mustCall(t, c, "region", map[string]any{"region": "eu-west1", "zone": map[string]any{"id": 7}}); got != "region eu-west1" {
		t.Errorf("region: %q", got)
	}
	ex := srv.exchanges()
	if h := ex[len(ex)-1].header; h.Get("Mcp-Param-Region") != "eu-west1" || h.Get("Mcp-Param-Zone") != "7" || h.Get("Mcp-Name") != "region" {
		t.Errorf("tools/call headers %v", h)
	}
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

// A client that has not listed the tools sends no Mcp-Param headers; the
// SDK answers -32020, and the client reads tools/list and retries once.
func TestHTTPGoSDKHeaderMismatchRetry(t *testing.T) {
	srv := startHTTPServer(t, []string{"2026-07-28"}, true, addRegionTool)
	c, _ := connectHTTP(t, srv.URL)
	defer c.Close()
	if got := mustCall(t, c, "region", map[string]any{"region": "eu-west1"}); got != "region eu-west1" {
		t.Errorf("region: %q", got)
	}
	var calls []int
	for _, ex := range srv.exchanges() {
		if strings.Contains(ex.body, `"method":"tools/call"`) {
			calls = append(calls, ex.status)
		}
	}
	if len(calls) != 2 || calls[0] != 400 || calls[1] != 200 {
		t.Errorf("tools/call statuses %v, want [400 200]", calls)
	}
}

// addRegionTool adds a tool whose arguments are mirrored into headers.
func addRegionTool(s *mcp.Server) {
	schema := json.RawMessage(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"zone":{"type":"object","properties":{"id":{"type":"integer","x-mcp-header":"Zone"}}}}}`)
	s.AddTool(&mcp.Tool{Name: "region", InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct {
			Region string `json:"region"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "region " + args.Region}}}, nil
	})
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
	_, err = snodo.Connect(context.Background(), tr, nil)
	var e *snodo.Error
	if !errors.As(err, &e) || e.Code != jsonrpc.CodeConnectionClosed || strings.Contains(err.Error(), "initialize") {
		t.Fatalf("Connect: %v", err)
	}
}
