package front

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/snodo/snodo/internal/gateway"
)

func modernHeaders(method, name string) []string {
	h := []string{"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: " + method}
	if name != "" {
		h = append(h, "Mcp-Name: "+name)
	}
	return h
}

// TestModernEndToEnd: 2026-07-28 requests through the front: discover,
// a call with progress on its SSE stream, an input_required result passed
// as is, and a listen whose stream's close cancels it in the hub.
func TestModernEndToEnd(t *testing.T) {
	_, srv, hub := testFront(t, "", nil)
	url := srv.URL + "/mcp"

	resp := do(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+modernMeta+`}}`, modernHeaders("server/discover", "")...)
	var disc struct {
		Result struct {
			SupportedVersions []string        `json:"supportedVersions"`
			Capabilities      json.RawMessage `json:"capabilities"`
			Instructions      string          `json:"instructions"`
			Meta              map[string]any  `json:"_meta"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&disc); err != nil || resp.StatusCode != 200 {
		t.Fatalf("discover: %s %v", resp.Status, err)
	}
	if len(disc.Result.SupportedVersions) == 0 || disc.Result.SupportedVersions[0] != "2026-07-28" || disc.Result.Instructions != "a fake gateway" ||
		!strings.Contains(string(disc.Result.Capabilities), "listChanged") || disc.Result.Meta[metaServerInfo] == nil {
		t.Errorf("discover result %+v", disc.Result)
	}
	if resp.Header.Get("Mcp-Session-Id") != "" {
		t.Error("a session ID minted for a stateless host")
	}

	resp = do(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo__progress",`+
		`"_meta":{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		modernHeaders("tools/call", "demo__progress")...)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	msgs := sseMessages(t, resp.Body)
	if len(msgs) != 3 || !strings.Contains(msgs[0], `"progress":1`) || !strings.Contains(msgs[1], `"progress":2`) || !strings.Contains(msgs[2], `"id":2,"result"`) {
		t.Errorf("stream %q", msgs)
	}

	resp = do(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"demo__input",`+modernMeta+`}}`, modernHeaders("tools/call", "demo__input")...)
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `"resultType":"input_required"`) || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("input_required: %s %s", resp.Header.Get("Content-Type"), body)
	}
	if r := hub.last(); r.Ask != nil || !r.Modern || string(r.ClientCapabilities) != "{}" || !strings.Contains(string(r.ClientInfo), `"t"`) {
		t.Errorf("hub request %+v", r)
	}

	// A name that needs Base64 in its header.
	resp = do(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"démo",`+modernMeta+`}}`,
		modernHeaders("tools/call", "=?base64?ZMOpbW8=?=")...)
	if resp.StatusCode != 200 {
		t.Errorf("Base64 Mcp-Name: %s", resp.Status)
	}

	// subscriptions/listen: the acknowledgement and an event, then the
	// host closes the stream and the hub's Listen ends.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+modernMeta+`}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for _, h := range modernHeaders("subscriptions/listen", "") {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	lresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(lresp.Body)
	var got []string
	for len(got) < 2 && sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			got = append(got, d)
		}
	}
	if len(got) != 2 || !strings.Contains(got[0], "subscriptions/acknowledged") || !strings.Contains(got[1], "tools/list_changed") || !strings.Contains(got[1], `"sub-1"`) {
		t.Errorf("listen stream %q", got)
	}
	cancel()
	lresp.Body.Close()
	if cause := <-hub.released; !errors.Is(cause, context.Canceled) {
		t.Errorf("listen ended by %v", cause)
	}
}

// TestLegacyStreamsAndCancel: a legacy session's GET stream carries what
// hub.Watch emits; notifications/cancelled cancels the host's request in
// the hub; Close ends the stream.
func TestLegacyStreamsAndCancel(t *testing.T) {
	f, srv, hub := testFront(t, "", nil)
	url := srv.URL + "/mcp"
	sid := initSession(t, url, "")
	if resp := do(t, http.MethodPost, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id: "+sid); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %s", resp.Status)
	}
	get := do(t, http.MethodGet, url, "", "Mcp-Session-Id: "+sid, "Accept: text/event-stream")
	if get.StatusCode != 200 || get.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: %s", get.Status)
	}
	sc := bufio.NewScanner(get.Body)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "data: ") {
	}
	if !strings.Contains(sc.Text(), "notifications/tools/list_changed") {
		t.Fatalf("GET stream: %q", sc.Text())
	}
	if resp := do(t, http.MethodGet, url, "", "Mcp-Session-Id: "+sid, "Accept: text/event-stream"); resp.StatusCode != http.StatusConflict {
		t.Errorf("second GET: %s, want 409", resp.Status)
	}

	done := make(chan []string)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"demo__block"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- []string{err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- []string{resp.Status, string(b)}
	}()
	<-hub.blocked
	if resp := do(t, http.MethodPost, url, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1","reason":"user stop"}}`, "Mcp-Session-Id: "+sid); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("cancelled: %s", resp.Status)
	}
	if cause := <-hub.released; cause == nil || !strings.Contains(cause.Error(), "user stop") {
		t.Errorf("the request ended by %v", cause)
	}
	if r := <-done; len(r) != 2 || r[1] != "" {
		t.Errorf("a cancelled request was answered: %q", r)
	}

	f.Close()
	if sc.Scan() {
		for sc.Scan() {
		}
	}
	if hub.ended.Load() != 1 {
		t.Errorf("EndSession called %d times at Close, want 1", hub.ended.Load())
	}
}

// TestHealthReadyMetrics: /healthz while serving, /readyz following
// hub.Ready, /metrics 404 without telemetry.
func TestHealthReadyMetrics(t *testing.T) {
	_, srv, hub := testFront(t, "", nil)
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if c, _ := get("/healthz"); c != 200 {
		t.Errorf("/healthz %d", c)
	}
	if c, _ := get("/readyz"); c != 200 {
		t.Errorf("/readyz %d", c)
	}
	hub.ready = errors.New("backend fs has not connected")
	if c, b := get("/readyz"); c != 503 || !strings.Contains(b, "backend fs") {
		t.Errorf("/readyz %d %q", c, b)
	}
	if c, _ := get("/metrics"); c != 404 {
		t.Errorf("/metrics %d", c)
	}
}

// TestStreamsKeepAlive: a quiet GET stream and a quiet subscriptions/listen
// stream get SSE comments, so that proxies with idle timeouts keep them.
func TestStreamsKeepAlive(t *testing.T) {
	sections, _ := gateway.ParseConfig([]byte(`{}`), ".json")
	f, err := New(sections, newFakeHub(), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.keepAlive = 5 * time.Millisecond // before the server's goroutines start
	srv := httptest.NewServer(f.Handler())
	t.Cleanup(func() {
		f.Close()
		srv.CloseClientConnections()
		srv.Close()
	})
	url := srv.URL + "/mcp"
	sid := initSession(t, url, "")
	get := do(t, http.MethodGet, url, "", "Mcp-Session-Id: "+sid, "Accept: text/event-stream")
	listen := do(t, http.MethodPost, url, `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+modernMeta+`}}`,
		modernHeaders("subscriptions/listen", "")...)
	for name, resp := range map[string]*http.Response{"GET": get, "listen": listen} {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() && sc.Text() != ":" {
		}
		if sc.Text() != ":" {
			t.Errorf("%s stream ended without a keep-alive: %v", name, sc.Err())
		}
	}
}

// TestTelemetry: each request the hub serves gets a server span named by
// its method and target, and /metrics is the telemetry's handler.
func TestTelemetry(t *testing.T) {
	sections, _ := gateway.ParseConfig([]byte(`{}`), ".json")
	tel := &fakeTel{}
	f, err := New(sections, newFakeHub(), nil, tel, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f.Handler())
	defer srv.Close()
	defer f.Close()
	do(t, http.MethodPost, srv.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo__echo",`+modernMeta+`}}`, modernHeaders("tools/call", "demo__echo")...).Body.Close()
	tel.mu.Lock()
	spans := tel.spans
	tel.mu.Unlock()
	if len(spans) != 1 || spans[0] != "tools/call demo__echo" {
		t.Errorf("spans %q", spans)
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "fake_metric 1\n" {
		t.Errorf("/metrics %q", b)
	}
}
