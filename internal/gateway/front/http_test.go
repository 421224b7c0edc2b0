package front

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo/internal/gateway"
)

// testFront serves a Front over httptest with a fake hub; everything ends
// with the test.
func testFront(t *testing.T, config string, pol gateway.Policy) (*Front, *httptest.Server, *fakeHub) {
	t.Helper()
	if config == "" {
		config = "{}"
	}
	sections, err := gateway.ParseConfig([]byte(config), ".json")
	if err != nil {
		t.Fatal(err)
	}
	hub := newFakeHub()
	f, err := New(sections, hub, pol, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f.Handler())
	t.Cleanup(func() {
		f.Close()
		srv.CloseClientConnections()
		srv.Close()
	})
	return f, srv, hub
}

const (
	modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	initBody   = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`
)

// do sends one request to the MCP endpoint; headers are "Name: value"
// lines, and a plain JSON POST's Content-Type and Accept are set unless
// given.
func do(t *testing.T, method, url string, body string, headers ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// initSession starts a legacy session with the token (or none).
func initSession(t *testing.T, url, token string) string {
	t.Helper()
	var hs []string
	if token != "" {
		hs = append(hs, "Authorization: Bearer "+token)
	}
	resp := do(t, http.MethodPost, url, initBody, hs...)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("initialize: %s %s", resp.Status, b)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	if len(sid) != 32 {
		t.Fatalf("session ID %q is not 128 bits in hex", sid)
	}
	return sid
}

// errorOf reads a JSON-RPC error response body.
func errorOf(t *testing.T, resp *http.Response) (code int64, msg string) {
	t.Helper()
	var m struct {
		Error struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body %q is not a JSON-RPC error: %v", b, err)
	}
	return m.Error.Code, m.Error.Message
}

// sseMessages reads the data of every event of an SSE body to its end.
func sseMessages(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// TestBadInputNeverReachesTheHub: each bad request gets its HTTP status
// and a JSON-RPC error that says what is wrong, and the hub is never
// called.
func TestBadInputNeverReachesTheHub(t *testing.T) {
	_, srv, hub := testFront(t, `{"maxBodyBytes":1024,"allowedOrigins":["https://ok.example"]}`, fakePolicy{})
	url := srv.URL + "/mcp"
	alice := "Authorization: Bearer alice"
	sid := initSession(t, url, "alice")
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	modernCall := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"demo__echo",` + modernMeta + `}}`
	modernHeaders := []string{alice, "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: demo__echo"}
	big := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"` + strings.Repeat("x", 2000) + `"}}`

	cases := []struct {
		name    string
		method  string
		body    string
		headers []string
		status  int
		code    int64
		says    string
	}{
		{"foreign origin", "POST", list, []string{alice, "Mcp-Session-Id: " + sid, "Origin: https://evil.example"}, 403, -32600, "allowedOrigins"},
		{"no token", "POST", list, []string{"Mcp-Session-Id: " + sid}, 401, -32600, "Bearer"},
		{"wrong token", "POST", list, []string{"Authorization: Bearer mallory", "Mcp-Session-Id: " + sid}, 401, -32600, "token"},
		{"refused identity", "POST", list, []string{"Authorization: Bearer banned"}, 403, -32600, "banned"},
		{"oversized body", "POST", big, []string{alice, "Mcp-Session-Id: " + sid}, 413, -32600, "1024 bytes"},
		{"malformed JSON", "POST", `{"jsonrpc":"2.0","id":`, []string{alice, "Mcp-Session-Id: " + sid}, 400, -32700, "JSON"},
		{"batch", "POST", "[" + list + "]", []string{alice, "Mcp-Session-Id: " + sid}, 400, -32600, "batching is not supported"},
		{"not JSON-RPC", "POST", `{"jsonrpc":"1.0","id":1,"method":"tools/list"}`, []string{alice, "Mcp-Session-Id: " + sid}, 400, -32600, `"2.0"`},
		{"wrong content type", "POST", list, []string{alice, "Mcp-Session-Id: " + sid, "Content-Type: text/plain"}, 415, -32600, "application/json"},
		{"wrong accept", "POST", list, []string{alice, "Mcp-Session-Id: " + sid, "Accept: application/json"}, 406, -32600, "text/event-stream"},
		{"forged session", "POST", list, []string{alice, "Mcp-Session-Id: 00000000000000000000000000000000"}, 404, -32600, "initialize"},
		{"another identity's session", "POST", list, []string{"Authorization: Bearer bob", "Mcp-Session-Id: " + sid}, 404, -32600, "unknown"},
		{"no session", "POST", list, []string{alice}, 400, -32600, "Mcp-Session-Id"},
		{"session protocol version", "POST", list, []string{alice, "Mcp-Session-Id: " + sid, "MCP-Protocol-Version: 2025-03-26"}, 400, -32600, "negotiated"},
		{"resume handle not issued", "GET", "", []string{alice, "Mcp-Session-Id: " + sid, "Accept: text/event-stream", "Last-Event-ID: 42"}, 400, -32600, "cannot be resumed"},
		{"forged session GET", "GET", "", []string{alice, "Mcp-Session-Id: ffffffffffffffffffffffffffffffff", "Accept: text/event-stream"}, 404, -32600, "unknown"},
		{"GET accept", "GET", "", []string{alice, "Mcp-Session-Id: " + sid, "Accept: application/json"}, 406, -32600, "text/event-stream"},
		{"forged session DELETE", "DELETE", "", []string{alice, "Mcp-Session-Id: ffffffffffffffffffffffffffffffff"}, 404, -32600, "unknown"},
		{"PUT", "PUT", list, []string{alice}, 405, -32600, "not allowed"},
		{"modern header version mismatch", "POST", modernCall, []string{alice, "MCP-Protocol-Version: 2025-11-25", "Mcp-Method: tools/call", "Mcp-Name: demo__echo"}, 400, -32020, "MCP-Protocol-Version"},
		{"modern missing Mcp-Method", "POST", modernCall, modernHeaders[:2], 400, -32020, "Mcp-Method"},
		{"modern Mcp-Name mismatch", "POST", modernCall, append(modernHeaders[:3:3], "Mcp-Name: other__tool"), 400, -32020, "Mcp-Name"},
		{"modern unsupported version", "POST", strings.Replace(modernCall, `"2026-07-28"`, `"2099-01-01"`, 1), append([]string{alice, "MCP-Protocol-Version: 2099-01-01"}, modernHeaders[2:]...), 400, -32022, "2099-01-01"},
		{"modern params not an object", "POST", `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":[1]}`, []string{alice}, 400, -32602, "object"},
		{"modern unknown method", "POST", `{"jsonrpc":"2.0","id":6,"method":"tasks/frobnicate","params":{` + modernMeta + `}}`, []string{alice, "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tasks/frobnicate"}, 404, -32601, "not served"},
		{"modern initialize", "POST", `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{` + modernMeta + `}}`, []string{alice, "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: initialize"}, 400, -32600, "server/discover"},
		{"legacy discover", "POST", `{"jsonrpc":"2.0","id":8,"method":"server/discover"}`, []string{alice}, 400, -32022, "protocolVersion"},
		{"response to nothing", "POST", `{"jsonrpc":"2.0","id":"gw-99","result":{}}`, []string{alice, "Mcp-Session-Id: " + sid}, 400, -32600, "no request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := do(t, c.method, url, c.body, c.headers...)
			if resp.StatusCode != c.status {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, c.status, b)
			}
			if c.status == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate %q, want Bearer", resp.Header.Get("WWW-Authenticate"))
			}
			code, msg := errorOf(t, resp)
			if code != c.code || !strings.Contains(msg, c.says) {
				t.Errorf("error %d %q, want %d saying %q", code, msg, c.code, c.says)
			}
			if n := hub.calls.Load(); n != 0 {
				t.Fatalf("the hub was called %d times", n)
			}
		})
	}
}

// TestOversizedBodyIsNotRead: a body without Content-Length that goes past
// maxBodyBytes is refused 413, and the front stops reading it.
func TestOversizedBodyIsNotRead(t *testing.T) {
	_, srv, hub := testFront(t, `{"maxBodyBytes":1024}`, nil)
	src := &countingReader{limit: 64 << 20}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", src)
	req.ContentLength = -1 // chunked
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %s, want 413", resp.Status)
	}
	if code, _ := errorOf(t, resp); code != -32600 {
		t.Errorf("code %d", code)
	}
	if n := src.n.Load(); n >= src.limit {
		t.Errorf("the whole %d-byte body was sent", n)
	}
	if hub.calls.Load() != 0 {
		t.Fatal("the hub was called")
	}
}

// TestSessionLimit: past maxSessions, initialize gets 503 with a JSON-RPC
// error that says what to do, and ending a session frees its place.
func TestSessionLimit(t *testing.T) {
	_, srv, hub := testFront(t, `{"maxSessions":2}`, nil)
	url := srv.URL + "/mcp"
	first := initSession(t, url, "")
	initSession(t, url, "")
	resp := do(t, http.MethodPost, url, initBody)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third session: %s, want 503", resp.Status)
	}
	if _, msg := errorOf(t, resp); !strings.Contains(msg, "maximum of 2 sessions") {
		t.Errorf("message %q", msg)
	}
	if resp := do(t, http.MethodDelete, url, "", "Mcp-Session-Id: "+first); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %s", resp.Status)
	}
	if hub.ended.Load() != 1 {
		t.Errorf("EndSession called %d times, want 1", hub.ended.Load())
	}
	initSession(t, url, "")
	if resp := do(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "Mcp-Session-Id: "+first); resp.StatusCode != http.StatusNotFound {
		t.Errorf("deleted session: %s, want 404", resp.Status)
	}
}

// TestIdleSessionsExpire: a session unused for sessionIdleTimeout is ended
// (the hub forgets it, the host gets 404); one in use is not.
func TestIdleSessionsExpire(t *testing.T) {
	f, srv, hub := testFront(t, `{"sessionIdleTimeout":"1h"}`, nil)
	url := srv.URL + "/mcp"
	idle := initSession(t, url, "")
	busy := initSession(t, url, "")
	// The busy session has a request in flight.
	answer := make(chan string, 1)
	go func() {
		defer close(answer)
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"demo__block"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", busy)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answer <- string(b)
		}
	}()
	<-hub.blocked
	f.expire(time.Now().Add(2 * time.Hour))
	if hub.ended.Load() != 1 {
		t.Fatalf("EndSession called %d times, want 1", hub.ended.Load())
	}
	if resp := do(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "Mcp-Session-Id: "+idle); resp.StatusCode != http.StatusNotFound {
		t.Errorf("expired session: %s, want 404", resp.Status)
	}
	if resp := do(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "Mcp-Session-Id: "+busy); resp.StatusCode != http.StatusOK {
		t.Errorf("busy session: %s, want 200", resp.Status)
	}
	// DELETE ends the busy session, which cancels its request.
	do(t, http.MethodDelete, url, "", "Mcp-Session-Id: "+busy)
	<-hub.released
	// The host, still waiting, is told why its request ended.
	if a := <-answer; !strings.Contains(a, `"code":-32000`) || !strings.Contains(a, "the host ended the session") {
		t.Errorf("the ended request was answered %q", a)
	}
}

type countingReader struct {
	n     atomic.Int64
	limit int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.n.Load() >= r.limit {
		return 0, io.EOF
	}
	n := min(int64(len(p)), r.limit-r.n.Load())
	copy(p, bytes.Repeat([]byte{' '}, int(n)))
	r.n.Add(n)
	return int(n), nil
}

// TestConfigErrors: bad front sections are refused with an error that
// names the section and says what to give.
func TestConfigErrors(t *testing.T) {
	for config, says := range map[string]string{
		`{"listen":""}`:                    "listen",
		`{"listen":8080}`:                  "config listen",
		`{"maxBodyBytes":0}`:               "positive number of bytes",
		`{"maxBodyBytes":"big"}`:           "config maxBodyBytes",
		`{"sessionIdleTimeout":"soon"}`:    `"30m"`,
		`{"sessionIdleTimeout":"-1s"}`:     "positive duration",
		`{"sessionIdleTimeout":30}`:        `"30m"`,
		`{"maxSessions":-1}`:               "maxSessions",
		`{"allowedOrigins":"https://a.b"}`: "config allowedOrigins",
	} {
		sections, err := gateway.ParseConfig([]byte(config), ".json")
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(sections, newFakeHub(), nil, nil, nil)
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v, want an error saying %s", config, err, says)
		}
	}
	sections, _ := gateway.ParseConfig([]byte(`{"listen":"127.0.0.1:0","maxSessions":5,"sessionIdleTimeout":"2m"}`), ".json")
	f, err := New(sections, newFakeHub(), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Listen() != "127.0.0.1:0" || f.maxSessions != 5 || f.idleTimeout != 2*time.Minute || f.maxBody != DefaultMaxBodyBytes {
		t.Errorf("decoded %q %d %v %d", f.Listen(), f.maxSessions, f.idleTimeout, f.maxBody)
	}
}
