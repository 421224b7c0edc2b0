package lbtest

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// replica is a stand-in for one gateway replica: it answers which replica
// it is, issues an Mcp-Session-Id on an initialize, knows the sessions it
// issued, and can be made not ready.
type replica struct {
	name     string
	srv      *httptest.Server
	notReady atomic.Bool
	drop     atomic.Bool // close the connection of a POST without answering
	mu       sync.Mutex
	sessions map[string]bool
	posts    atomic.Int64
	streamGo chan struct{} // closed to let a GET stream send its second event
}

func newReplica(t *testing.T, name string) *replica {
	r := &replica{name: name, sessions: map[string]bool{}, streamGo: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *replica) addr() string { return strings.TrimPrefix(r.srv.URL, "http://") }

func (r *replica) serve(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("X-Replica", r.name)
	switch {
	case req.URL.Path == "/readyz":
		if r.notReady.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ready\n")
	case req.URL.Path == "/mcp" && req.Method == http.MethodPost:
		r.posts.Add(1)
		if r.drop.Load() {
			// As a replica that crashes while serving: the connection
			// closes and not a byte is answered.
			io.Copy(io.Discard, req.Body)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		var msg struct {
			Method string `json:"method"`
		}
		if err := json.NewDecoder(io.LimitReader(req.Body, 1<<20)).Decode(&msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if sid := req.Header.Get("Mcp-Session-Id"); sid != "" && !r.known(sid) {
			http.Error(w, "unknown session", http.StatusNotFound)
			return
		}
		if msg.Method == "initialize" {
			w.Header().Set("Mcp-Session-Id", r.issue())
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":{"replica":%q}}`, r.name)
	case req.URL.Path == "/mcp" && req.Method == http.MethodGet:
		if !r.known(req.Header.Get("Mcp-Session-Id")) {
			http.Error(w, "unknown session", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: first from %s\n\n", r.name)
		w.(http.Flusher).Flush()
		select {
		case <-r.streamGo:
		case <-req.Context().Done():
			return
		}
		fmt.Fprintf(w, "data: second from %s\n\n", r.name)
	default:
		http.NotFound(w, req)
	}
}

func (r *replica) issue() string {
	b := make([]byte, 16)
	rand.Read(b)
	sid := r.name + "-" + hex.EncodeToString(b)
	r.mu.Lock()
	r.sessions[sid] = true
	r.mu.Unlock()
	return sid
}

func (r *replica) known(sid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[sid]
}

func twoReplicas(t *testing.T) (a, b *replica, h *HAProxy) {
	a, b = newReplica(t, "a"), newReplica(t, "b")
	h = Start(t, []string{a.addr(), b.addr()})
	return a, b, h
}

// post sends one JSON-RPC request of method through the front, with the
// session ID sid when not empty, and returns the status, the replica that
// answered and the Mcp-Session-Id it issued.
func post(t *testing.T, c *http.Client, front, method, sid string) (status int, replica, issued string) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{}}`, method)
	req, err := http.NewRequest(http.MethodPost, front+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	} else {
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Replica"), resp.Header.Get("Mcp-Session-Id")
}

func TestShippedHAProxyConfigIsValid(t *testing.T) {
	cfg := ShippedConfig(t)
	if out, err := Check(t, cfg); err != nil {
		t.Fatalf("haproxy -c -f %s: %v\n%s", cfg, err, out)
	}
}

// 2026-07-28 requests carry no Mcp-Session-Id: round robin spreads them
// over both replicas, over one kept-alive client connection as over new
// ones.
func TestHAProxySpreadsStatelessRequests(t *testing.T) {
	_, _, h := twoReplicas(t)
	for _, keepAlive := range []bool{true, false} {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: !keepAlive}}
		seen := map[string]int{}
		for range 20 {
			status, rep, issued := post(t, c, h.URL, "tools/list", "")
			if status != http.StatusOK || issued != "" {
				t.Fatalf("keep-alive %v: status %d, Mcp-Session-Id %q", keepAlive, status, issued)
			}
			seen[rep]++
		}
		c.CloseIdleConnections()
		if seen["a"] < 5 || seen["b"] < 5 {
			t.Errorf("keep-alive %v: 20 stateless requests reached the replicas %v; want both, round robin", keepAlive, seen)
		}
	}
}

// A replica that closes a request's connection without answering (it
// crashed while serving, before the health checks take it out) does not
// fail the request: haproxy sends it to the other replica.
func TestHAProxyRetriesARequestAReplicaDropped(t *testing.T) {
	a, b, h := twoReplicas(t)
	a.drop.Store(true)
	for _, keepAlive := range []bool{true, false} {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: !keepAlive}}
		for i := range 6 {
			status, rep, _ := post(t, c, h.URL, "tools/call", "")
			if status != http.StatusOK || rep != "b" {
				t.Errorf("keep-alive %v, request %d: status %d from %q; want 200 from b", keepAlive, i, status, rep)
			}
		}
		c.CloseIdleConnections()
	}
	if a.posts.Load() == 0 || b.posts.Load() < 12 {
		t.Errorf("a dropped %d requests, b served %d: the dropping replica was never tried", a.posts.Load(), b.posts.Load())
	}
}

// A legacy session's requests (POST, the GET stream, DELETE) all reach the
// replica that issued its Mcp-Session-Id, over new connections as over one
// kept-alive connection, while stateless requests in between stay spread.
func TestHAProxySticksLegacySessionToItsReplica(t *testing.T) {
	a, b, h := twoReplicas(t)
	c := &http.Client{}
	defer c.CloseIdleConnections()
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	type session struct{ id, replica string }
	var sessions []session
	for range 6 {
		status, rep, sid := post(t, c, h.URL, "initialize", "")
		if status != http.StatusOK || sid == "" || !strings.HasPrefix(sid, rep+"-") {
			t.Fatalf("initialize: status %d, replica %q, Mcp-Session-Id %q", status, rep, sid)
		}
		sessions = append(sessions, session{sid, rep})
	}
	byReplica := map[string]int{}
	for _, s := range sessions {
		byReplica[s.replica]++
	}
	if byReplica["a"] == 0 || byReplica["b"] == 0 {
		t.Fatalf("6 initializes reached %v; want both replicas", byReplica)
	}
	stateless := map[string]int{}
	for i := range 10 {
		for _, s := range sessions {
			cl := c
			if i%2 == 1 {
				cl = fresh
			}
			status, rep, _ := post(t, cl, h.URL, "tools/call", s.id)
			if status != http.StatusOK || rep != s.replica {
				t.Fatalf("request %d of session %s: status %d from replica %q; want 200 from %q", i, s.id, status, rep, s.replica)
			}
		}
		_, rep, _ := post(t, c, h.URL, "tools/list", "")
		stateless[rep]++
	}
	if stateless["a"] == 0 || stateless["b"] == 0 {
		t.Errorf("stateless requests between session requests reached %v; want both replicas", stateless)
	}

	// The GET stream of a session reaches its replica and is streamed, not
	// buffered: the first event arrives while the replica holds the second.
	s := sessions[0]
	owner := map[string]*replica{"a": a, "b": b}[s.replica]
	req, _ := http.NewRequest(http.MethodGet, h.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.id)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Replica") != s.replica {
		t.Fatalf("GET stream: status %d from %q; want 200 from %q", resp.StatusCode, resp.Header.Get("X-Replica"), s.replica)
	}
	rd := bufio.NewReader(resp.Body)
	if line, err := rd.ReadString('\n'); err != nil || line != "data: first from "+s.replica+"\n" {
		t.Fatalf("GET stream first event: %q, %v", line, err)
	}
	close(owner.streamGo)
	rest, err := io.ReadAll(rd)
	if err != nil || !strings.Contains(string(rest), "data: second from "+s.replica) {
		t.Fatalf("GET stream rest: %q, %v", rest, err)
	}

	// DELETE of the session goes to its replica too.
	req, _ = http.NewRequest(http.MethodDelete, h.URL+"/mcp", nil)
	req.Header.Set("Mcp-Session-Id", s.id)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("X-Replica"); got != s.replica {
		t.Errorf("DELETE reached %q; want %q", got, s.replica)
	}
}

// A made-up Mcp-Session-Id is not stored in the stick table (only IDs a
// replica issued are) and sticks to nothing: it is balanced, and the
// replica answers 404.
func TestHAProxyDoesNotStoreMadeUpSessionIDs(t *testing.T) {
	_, _, h := twoReplicas(t)
	c := &http.Client{}
	defer c.CloseIdleConnections()
	seen := map[string]int{}
	for i := range 20 {
		status, rep, _ := post(t, c, h.URL, "tools/list", fmt.Sprintf("made-up-%d", i%2))
		if status != http.StatusNotFound {
			t.Fatalf("made-up session: status %d; want the replica's 404", status)
		}
		seen[rep]++
	}
	if seen["a"] == 0 || seen["b"] == 0 {
		t.Errorf("requests with made-up session IDs reached %v; want both replicas (nothing to stick to)", seen)
	}
	if n, err := h.TableEntries(); err != nil || n != 0 {
		t.Errorf("stick table holds %d entries (%v) after made-up session IDs only; want 0", n, err)
	}
	if _, _, sid := post(t, c, h.URL, "initialize", ""); sid == "" {
		t.Fatal("initialize issued no session")
	}
	if n, err := h.TableEntries(); err != nil || n != 1 {
		t.Errorf("stick table holds %d entries (%v) after one initialize; want 1", n, err)
	}
}

// A replica whose /readyz stops answering 200, and then one that is gone,
// is taken out by the health check: every request reaches the other, and
// a session of the lost replica is redispatched (the other answers 404, so
// the host initializes again).
func TestHAProxyTakesOutAReplicaThatIsDownOrNotReady(t *testing.T) {
	a, b, h := twoReplicas(t)
	c := &http.Client{}
	defer c.CloseIdleConnections()
	var bSession string
	for bSession == "" {
		_, rep, sid := post(t, c, h.URL, "initialize", "")
		if rep == "b" {
			bSession = sid
		}
	}
	state := func(name string) func([]Server) bool {
		return func(s []Server) bool {
			for _, x := range s {
				if x.Name == name {
					return x.Status == "DOWN"
				}
			}
			return false
		}
	}
	allToA := func(step string) {
		t.Helper()
		for range 10 {
			if status, rep, _ := post(t, c, h.URL, "tools/list", ""); status != http.StatusOK || rep != "a" {
				t.Fatalf("%s: stateless request got %d from %q; want 200 from a", step, status, rep)
			}
		}
		if status, rep, _ := post(t, c, h.URL, "tools/call", bSession); status != http.StatusNotFound || rep != "a" {
			t.Fatalf("%s: request of b's session got %d from %q; want a's 404 (unknown session)", step, status, rep)
		}
	}

	b.notReady.Store(true)
	h.WaitFor(t, "gw2 (b, /readyz 503) down", state("gw2"))
	allToA("b not ready")

	b.notReady.Store(false)
	h.WaitChecked(t)
	before := a.posts.Load()
	seen := map[string]int{}
	for range 10 {
		_, rep, _ := post(t, c, h.URL, "tools/list", "")
		seen[rep]++
	}
	if seen["b"] == 0 || a.posts.Load() == before {
		t.Fatalf("after b is ready again, requests reached %v; want both replicas", seen)
	}

	b.srv.CloseClientConnections()
	b.srv.Close()
	h.WaitFor(t, "gw2 (b, closed) down", state("gw2"))
	allToA("b closed")
}

// A request whose Content-Length is over the body limit is refused with
// 413 by haproxy; no replica sees it.
func TestHAProxyRefusesBodiesOverTheLimit(t *testing.T) {
	a, b, h := twoReplicas(t)
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(h.URL, "http://"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", 4<<20+1)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("body of 4 MiB + 1: status %d; want 413", resp.StatusCode)
	}
	if n := a.posts.Load() + b.posts.Load(); n != 0 {
		t.Errorf("replicas saw %d POSTs; want none", n)
	}
	// At the limit, the request goes through.
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	body += strings.Repeat(" ", 4<<20-len(body))
	c := &http.Client{}
	defer c.CloseIdleConnections()
	r, err := c.Post(h.URL+"/mcp", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Errorf("body of exactly 4 MiB: status %d; want 200", r.StatusCode)
	}
}

// fatalRecorder is a testing.TB whose Fatal records the message and ends
// the calling goroutine, as testing's does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// Without haproxy on PATH, StartHAProxy fails the test and says what to
// install; it does not skip.
func TestMissingHAProxyFailsWithInstallHint(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		StartHAProxy(rec, []string{"127.0.0.1:1"})
	}()
	<-done
	if !strings.Contains(rec.msg, "install haproxy (.ci/deps.d/70-haproxy.sh)") {
		t.Errorf("StartHAProxy without haproxy: failure %q; want it to name .ci/deps.d/70-haproxy.sh", rec.msg)
	}
	if t.Skipped() {
		t.Error("the test was skipped")
	}
}

// A host that sends a request's headers and then stalls its body gets 408
// from haproxy (timeout http-request); no replica sees the request.
func TestHAProxyAnswersAStalledBodyItself(t *testing.T) {
	a, b, h := twoReplicas(t)
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(h.URL, "http://"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Bounds the wait only: haproxy answers after its 10 s http-request timeout.
	_ = conn.SetDeadline(time.Now().Add(90 * time.Second))
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("stalled body: %v; want haproxy's 408", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("stalled body: status %d; want 408", resp.StatusCode)
	}
	if n := a.posts.Load() + b.posts.Load(); n != 0 {
		t.Errorf("replicas saw %d POSTs; want none", n)
	}
}

// Through haproxy a host reaches /mcp only: /metrics, /readyz (which names
// the backends that are not ready), /healthz and any other path are
// answered 404 by haproxy; no replica sees them. The health checks still
// reach /readyz on each replica.
func TestHAProxyServesOnlyMCPToHosts(t *testing.T) {
	a, b, h := twoReplicas(t)
	c := &http.Client{}
	defer c.CloseIdleConnections()
	for _, path := range []string{"/metrics", "/readyz", "/healthz", "/", "/mcp/../metrics", "/MCP", "/mcpx"} {
		req, err := http.NewRequest(http.MethodGet, h.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = path // sent as written, not cleaned
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("X-Replica") != "" {
			t.Errorf("GET %s: status %d from replica %q; want haproxy's 404", path, resp.StatusCode, resp.Header.Get("X-Replica"))
		}
	}
	if status, _, _ := post(t, c, h.URL, "tools/list", ""); status != http.StatusOK {
		t.Errorf("POST /mcp: status %d; want 200", status)
	}
	if n := a.posts.Load() + b.posts.Load(); n != 1 {
		t.Errorf("replicas saw %d POSTs; want the one to /mcp", n)
	}
}
