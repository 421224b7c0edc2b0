package snodo_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	mcphttp "github.com/snodo/snodo/transport/http"
)

// httpCall is one request an HTTP test server received.
type httpCall struct {
	method string // HTTP method
	header nethttp.Header
	msg    jsonrpc.Message
}

// mcpHTTPServer is a scripted Streamable HTTP server: answer returns the
// status and JSON body for each JSON-RPC request.
type mcpHTTPServer struct {
	*httptest.Server
	mu    sync.Mutex
	calls []httpCall
}

func newMCPHTTPServer(t *testing.T, answer func(req *jsonrpc.Request, h nethttp.Header) (status int, body string, respHeader nethttp.Header)) *mcpHTTPServer {
	t.Helper()
	s := &mcpHTTPServer{}
	s.Server = httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		data, _ := io.ReadAll(r.Body)
		var msg jsonrpc.Message
		if len(data) > 0 {
			msg, _ = jsonrpc.Decode(data)
		}
		s.mu.Lock()
		s.calls = append(s.calls, httpCall{method: r.Method, header: r.Header.Clone(), msg: msg})
		s.mu.Unlock()
		req, ok := msg.(*jsonrpc.Request)
		switch {
		case r.Method == nethttp.MethodGet:
			w.WriteHeader(405)
		case r.Method == nethttp.MethodDelete:
			w.WriteHeader(200)
		case !ok:
			w.WriteHeader(202)
		default:
			status, body, rh := answer(req, r.Header)
			for k, v := range rh {
				w.Header()[k] = v
			}
			if strings.HasPrefix(body, "{") {
				w.Header().Set("Content-Type", "application/json")
				body = strings.ReplaceAll(body, `"id":ID`, `"id":`+string(req.ID.AppendJSON(nil)))
			}
			w.WriteHeader(status)
			io.WriteString(w, body)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *mcpHTTPServer) requests(method string) []httpCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []httpCall
	for _, c := range s.calls {
		switch m := c.msg.(type) {
		case *jsonrpc.Request:
			if m.Method == method {
				out = append(out, c)
			}
		case *jsonrpc.Notification:
			if m.Method == method {
				out = append(out, c)
			}
		case nil:
			if c.method == method {
				out = append(out, c)
			}
		}
	}
	return out
}

func httpTransport(t *testing.T, url string) *mcphttp.Transport {
	t.Helper()
	tr, err := mcphttp.New(mcphttp.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

const initResult = `{"jsonrpc":"2.0","id":ID,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"legacy-http","version":"1"}}}`

// A server without the 2026-07-28 endpoint answers the probe 400 without a
// JSON-RPC body: Connect falls back to initialize, carries the session ID
// the server issued in every later request, and Close deletes the session.
func TestHTTPLegacySession(t *testing.T) {
	for _, status := range []int{400, 404, 405} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			srv := newMCPHTTPServer(t, func(req *jsonrpc.Request, h nethttp.Header) (int, string, nethttp.Header) {
				switch req.Method {
				case "server/discover":
					return status, "Bad Request: unknown method", nil
				case "initialize":
					return 200, initResult, nethttp.Header{"Mcp-Session-Id": {"sess-42"}}
				}
				return 200, `{"jsonrpc":"2.0","id":ID,"result":{"tools":[]}}`, nil
			})
			c, err := snodo.Connect(context.Background(), httpTransport(t, srv.URL), nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.Server().Era != snodo.EraLegacy {
				t.Fatalf("era %v", c.Server().Era)
			}
			if _, err := snodo.ListTools(c, context.Background(), ""); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if init := srv.requests("initialize"); len(init) != 1 || init[0].header.Get("Mcp-Session-Id") != "" {
				t.Errorf("initialize %+v", init)
			}
			for _, m := range []string{"notifications/initialized", "tools/list", nethttp.MethodDelete} {
				rs := srv.requests(m)
				if len(rs) != 1 || rs[0].header.Get("Mcp-Session-Id") != "sess-42" {
					t.Errorf("%s: %d requests, session %v", m, len(rs), rs)
				}
			}
		})
	}
}

// A session ID that is not visible ASCII is refused.
func TestHTTPBadSessionID(t *testing.T) {
	srv := newMCPHTTPServer(t, func(req *jsonrpc.Request, h nethttp.Header) (int, string, nethttp.Header) {
		if req.Method == "initialize" {
			return 200, initResult, nethttp.Header{"Mcp-Session-Id": {"a b"}}
		}
		return 404, "", nil
	})
	_, err := snodo.Connect(context.Background(), httpTransport(t, srv.URL), nil)
	if err == nil || !strings.Contains(err.Error(), "Mcp-Session-Id") {
		t.Fatalf("Connect: %v", err)
	}
}

// A 401 at the probe is an error carrying the status and WWW-Authenticate,
// not a legacy server.
func TestHTTPUnauthorizedDoesNotFallBack(t *testing.T) {
	srv := newMCPHTTPServer(t, func(req *jsonrpc.Request, h nethttp.Header) (int, string, nethttp.Header) {
		return 401, "", nethttp.Header{"Www-Authenticate": {`Bearer resource_metadata="http://x/prm"`}}
	})
	_, err := snodo.Connect(context.Background(), httpTransport(t, srv.URL), nil)
	var se *transport.StatusError
	if !errors.As(err, &se) || se.Status != 401 || !strings.Contains(se.WWWAuthenticate, "resource_metadata") {
		t.Fatalf("Connect: %v", err)
	}
	if n := len(srv.requests("initialize")); n != 0 {
		t.Errorf("fell back to initialize")
	}
}

const httpDiscoverResult = `{"jsonrpc":"2.0","id":ID,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern-http","version":"1"}}}}`

// The tools of headerTools: two valid, the others invalid in one way each.
const headerTools = `{"jsonrpc":"2.0","id":ID,"result":{"tools":[
 {"name":"execute_sql","inputSchema":{"type":"object","properties":{
   "region":{"type":"string","x-mcp-header":"Region"},
   "priority":{"type":"integer","x-mcp-header":"Priority"},
   "verbose":{"type":"boolean","x-mcp-header":"Verbose"},
   "opts":{"type":"object","properties":{"tenant":{"type":"string","x-mcp-header":"Tenant"}}},
   "query":{"type":"string"}}}},
 {"name":"plain","inputSchema":{"type":"object"}},
 {"name":"empty","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}},
 {"name":"space","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A B"}}}},
 {"name":"dup","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}},
 {"name":"number","inputSchema":{"type":"object","properties":{"a":{"type":"number","x-mcp-header":"N"}}}},
 {"name":"items","inputSchema":{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"I"}}}}},
 {"name":"oneof","inputSchema":{"type":"object","oneOf":[{"properties":{"a":{"type":"string","x-mcp-header":"O"}}}]}}
]}}`

// In the 2026-07-28 era over HTTP: Mcp-Method and Mcp-Name (Base64 when
// not header-safe) on every request; tools with invalid x-mcp-header
// annotations are left out of ListTools with a warning; the annotated
// arguments of a call are mirrored into Mcp-Param headers (null and absent
// ones omitted); a -32020 makes the client read tools/list again and
// retry once.
func TestHTTPModernHeaders(t *testing.T) {
	var mismatches int
	srv := newMCPHTTPServer(t, func(req *jsonrpc.Request, h nethttp.Header) (int, string, nethttp.Header) {
		switch req.Method {
		case "server/discover":
			return 200, httpDiscoverResult, nil
		case "tools/list":
			return 200, headerTools, nil
		case "tools/call":
			if strings.Contains(string(req.Params), `"mismatch"`) && mismatches == 0 {
				mismatches++
				return 400, `{"jsonrpc":"2.0","id":ID,"error":{"code":-32020,"message":"header mismatch"}}`, nil
			}
		}
		return 200, `{"jsonrpc":"2.0","id":ID,"result":{"content":[]}}`, nil
	})
	var warned []string
	c, err := snodo.Connect(context.Background(), httpTransport(t, srv.URL), &snodo.Options{OnWarning: func(msg string, args ...any) {
		warned = append(warned, fmt.Sprint(args...))
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	res, err := snodo.ListTools(c, ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "execute_sql,plain" {
		t.Errorf("tools %v", names)
	}
	if len(warned) != 6 {
		t.Errorf("%d warnings: %q", len(warned), warned)
	}
	args := map[string]any{"region": "us-west1", "priority": 42, "verbose": nil, "opts": map[string]any{"tenant": "Hello, 世界"}, "query": "SELECT 1"}
	if _, err := c.CallTool(ctx, "execute_sql", args); err != nil {
		t.Fatal(err)
	}
	calls := srv.requests("tools/call")
	h := calls[len(calls)-1].header
	want := map[string]string{
		"Mcp-Method":           "tools/call",
		"Mcp-Name":             "execute_sql",
		"Mcp-Protocol-Version": "2026-07-28",
		"Mcp-Param-Region":     "us-west1",
		"Mcp-Param-Priority":   "42",
		"Mcp-Param-Tenant":     "=?base64?" + base64.StdEncoding.EncodeToString([]byte("Hello, 世界")) + "?=",
	}
	for name, v := range want {
		if got := h.Get(name); got != v {
			t.Errorf("%s = %q, want %q", name, got, v)
		}
	}
	for _, name := range []string{"Mcp-Param-Verbose", "Mcp-Param-Query", "Mcp-Session-Id"} {
		if v, ok := h[nethttp.CanonicalHeaderKey(name)]; ok {
			t.Errorf("%s sent: %q", name, v)
		}
	}

	// A name that is not header-safe is Base64-encoded in Mcp-Name.
	if _, err := c.CallTool(ctx, "naïve tool", nil); err != nil {
		t.Fatal(err)
	}
	calls = srv.requests("tools/call")
	if got := calls[len(calls)-1].header.Get("Mcp-Name"); got != "=?base64?"+base64.StdEncoding.EncodeToString([]byte("naïve tool"))+"?=" {
		t.Errorf("Mcp-Name %q", got)
	}

	// -32020: tools/list again, then the call once more.
	lists := len(srv.requests("tools/list"))
	if _, err := c.CallTool(ctx, "mismatch", nil); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.requests("tools/list")); n != lists+1 {
		t.Errorf("tools/list read %d times after -32020", n-lists)
	}
	if n := len(srv.requests("tools/call")); n != len(calls)+2 {
		t.Errorf("%d tools/call after -32020, want 2", n-len(calls))
	}
	// resources/read carries the URI in Mcp-Name.
	_, _ = c.ReadResource(ctx, "file:///a b.txt")
	rr := srv.requests("resources/read")
	if len(rr) != 1 || rr[0].header.Get("Mcp-Name") != "file:///a b.txt" || rr[0].header.Get("Mcp-Method") != "resources/read" {
		t.Errorf("resources/read headers %v", rr)
	}
}

// A -32020 that persists after one refresh is returned.
func TestHTTPHeaderMismatchRetriedOnce(t *testing.T) {
	srv := newMCPHTTPServer(t, func(req *jsonrpc.Request, h nethttp.Header) (int, string, nethttp.Header) {
		switch req.Method {
		case "server/discover":
			return 200, httpDiscoverResult, nil
		case "tools/list":
			return 200, `{"jsonrpc":"2.0","id":ID,"result":{"tools":[]}}`, nil
		}
		return 400, `{"jsonrpc":"2.0","id":ID,"error":{"code":-32020,"message":"header mismatch"}}`, nil
	})
	c, err := snodo.Connect(context.Background(), httpTransport(t, srv.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.CallTool(context.Background(), "x", nil, snodo.WithTimeout(5*time.Second))
	var e *snodo.Error
	if !errors.As(err, &e) || e.Code != jsonrpc.CodeHeaderMismatch {
		t.Fatalf("err %v", err)
	}
	if n := len(srv.requests("tools/call")); n != 2 {
		t.Errorf("%d tools/call, want 2", n)
	}
}

// A 400 whose body is an error only a 2026-07-28 server sends (-32020,
// -32021) is not a reason to fall back to initialize.
func TestHTTPModernErrorAtProbeDoesNotFallBack(t *testing.T) {
	srv := newMCPHTTPServer(t, func(req *jsonrpc.Request, h nethttp.Header) (int, string, nethttp.Header) {
		return 400, `{"jsonrpc":"2.0","id":ID,"error":{"code":-32020,"message":"Mcp-Method header missing"}}`, nil
	})
	_, err := snodo.Connect(context.Background(), httpTransport(t, srv.URL), nil)
	var e *snodo.Error
	if !errors.As(err, &e) || e.Code != jsonrpc.CodeHeaderMismatch {
		t.Fatalf("Connect: %v", err)
	}
	if n := len(srv.requests("initialize")); n != 0 {
		t.Errorf("fell back to initialize")
	}
}

// Initialize era: a request the server sends on the GET stream is admitted
// by the client (its handler answers, under Options.MaxServerRequests) and
// answered with a POST carrying the session.
func TestHTTPServerRequestOnGETStream(t *testing.T) {
	answers := make(chan httpCall, 4)
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		data, _ := io.ReadAll(r.Body)
		msg, _ := jsonrpc.Decode(data)
		switch m := msg.(type) {
		case *jsonrpc.Request:
			switch m.Method {
			case "server/discover":
				w.WriteHeader(404)
			case "initialize":
				w.Header().Set("Mcp-Session-Id", "s-7")
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, strings.ReplaceAll(initResult, `"id":ID`, `"id":`+string(m.ID.AppendJSON(nil))))
			}
		case *jsonrpc.Response:
			answers <- httpCall{method: r.Method, header: r.Header.Clone(), msg: m}
			w.WriteHeader(202)
		case *jsonrpc.Notification:
			w.WriteHeader(202)
		default:
			if r.Method != nethttp.MethodGet {
				w.WriteHeader(200)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"e1\",\"method\":\"elicitation/create\",\"params\":{\"mode\":\"form\",\"message\":\"Name?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}}\n\n")
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"p1\",\"method\":\"ping\"}\n\n")
			w.(nethttp.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	var calls int
	c, err := snodo.Connect(context.Background(), httpTransport(t, srv.URL), &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: snodo.HandlerFunc(func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		calls++
		return json.RawMessage(`{"action":"decline"}`), nil
	})}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := map[string]string{}
	timeout := time.After(10 * time.Second)
	for len(got) < 2 {
		select {
		case a := <-answers:
			r := a.msg.(*jsonrpc.Response)
			got[r.ID.String()] = string(r.Result)
			if a.header.Get("Mcp-Session-Id") != "s-7" || a.header.Get("Mcp-Protocol-Version") != "2025-11-25" {
				t.Errorf("answer headers %v", a.header)
			}
		case <-timeout:
			t.Fatalf("answers %v", got)
		}
	}
	if got["e1"] != `{"action":"decline"}` || got["p1"] != `{}` || calls != 1 {
		t.Errorf("answers %v, %d handler calls", got, calls)
	}
}
