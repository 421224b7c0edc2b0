package snodo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	mcphttp "github.com/snodo/snodo/transport/http"
)

// expiringServer is a scripted initialize-era Streamable HTTP server that
// issues session IDs s1, s2, … and answers 404 to a message naming a
// session it does not know. restart forgets every session and cuts the
// open GET streams, as a restarted server does.
type expiringServer struct {
	*httptest.Server
	mu      sync.Mutex
	next    int
	live    map[string]bool
	cut     chan struct{} // closed at restart
	seen    []string      // "method session" of every message
	expire  bool          // every request but initialize is answered 404
	getMode string        // "sse" (held open, retry 100 ms), "drop" (one event, then dropped), or "" (405)
}

func newExpiringServer(t *testing.T) *expiringServer {
	t.Helper()
	s := &expiringServer{live: map[string]bool{}, cut: make(chan struct{})}
	s.Server = httptest.NewServer(nethttp.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *expiringServer) restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.live)
	close(s.cut)
	s.cut = make(chan struct{})
}

func (s *expiringServer) count(what string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, x := range s.seen {
		if x == what || strings.HasPrefix(x, what+" ") {
			n++
		}
	}
	return n
}

func (s *expiringServer) serve(w nethttp.ResponseWriter, r *nethttp.Request) {
	data, _ := io.ReadAll(r.Body)
	sid := r.Header.Get("Mcp-Session-Id")
	method := r.Method
	var req *jsonrpc.Request
	if msg, err := jsonrpc.Decode(data); err == nil {
		switch m := msg.(type) {
		case *jsonrpc.Request:
			req, method = m, m.Method
		case *jsonrpc.Notification:
			method = m.Method
		}
	}
	s.mu.Lock()
	s.seen = append(s.seen, method+" "+sid)
	known := s.live[sid]
	cut, mode, expire := s.cut, s.getMode, s.expire
	if method == "initialize" {
		s.next++
		sid = fmt.Sprintf("s%d", s.next)
		s.live[sid] = true
		known = true
	}
	s.mu.Unlock()
	switch {
	case r.Method == nethttp.MethodDelete:
		w.WriteHeader(200)
		return
	case !known, expire && req != nil && method != "initialize":
		nethttp.Error(w, "Not Found: unknown session", 404)
		return
	case r.Method == nethttp.MethodGet:
		switch mode {
		case "":
			w.WriteHeader(405)
			return
		case "drop":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "retry: 100\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fmt.Fprint(w, "retry: 100\n\n")
		w.(nethttp.Flusher).Flush()
		select {
		case <-cut:
		case <-r.Context().Done():
		}
		return
	case req == nil:
		w.WriteHeader(202)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	id := string(req.ID.AppendJSON(nil))
	switch method {
	case "initialize":
		w.Header().Set("Mcp-Session-Id", sid)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"expiring","version":"1"}}}`, id)
	default:
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[]}}`, id)
	}
}

// connectExpiring connects to srv in the initialize era, with a logger whose
// debug lines go to the returned buffer.
func connectExpiring(t *testing.T, srv *expiringServer) (*snodo.Client, *syncBuffer) {
	t.Helper()
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tr, err := mcphttp.New(mcphttp.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	c, err := snodo.Connect(context.Background(), tr, &snodo.Options{Era: snodo.EraLegacy, Logger: logger})
	if err != nil {
		tr.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, &logs
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A server that ended the session answers 404 to a request naming it: the
// client starts a new session (initialize with the same params,
// notifications/initialized), sends the refused request once more in it,
// and says so in its log.
func TestHTTPSessionExpiredStartsNewSession(t *testing.T) {
	srv := newExpiringServer(t)
	c, logs := connectExpiring(t, srv)
	ctx := context.Background()
	if _, err := snodo.ListTools(c, ctx, ""); err != nil {
		t.Fatal(err)
	}
	srv.restart()
	if _, err := snodo.ListTools(c, ctx, ""); err != nil {
		t.Fatalf("after the server forgot the session: %v", err)
	}
	for what, want := range map[string]int{
		"initialize":                   2,
		"notifications/initialized s2": 1,
		"tools/list s1":                2, // the one before, the refused one
		"tools/list s2":                1, // sent again once
	} {
		if got := srv.count(what); got != want {
			t.Errorf("%q: %d messages, want %d", what, got, want)
		}
	}
	if !strings.Contains(logs.String(), "the server ended the session") || !strings.Contains(logs.String(), "new session started") {
		t.Errorf("log:\n%s", logs)
	}
}

// Callers refused at once share one new session, and each sends its
// request again once.
func TestHTTPSessionExpiredConcurrentCallersShareOneRenewal(t *testing.T) {
	srv := newExpiringServer(t)
	c, _ := connectExpiring(t, srv)
	srv.restart()
	const callers = 50
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := snodo.ListTools(c, context.Background(), "")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.count("initialize"); n != 2 {
		t.Errorf("%d initialize requests, want Connect's and one renewal", n)
	}
	if n := srv.count("tools/list s2"); n != callers {
		t.Errorf("%d requests in the new session, want %d", n, callers)
	}
}

// A server that refuses the new session's requests too gets one new
// session and one retry per call, never a loop: the call fails with the
// expired session's error.
func TestHTTPSessionExpiredRetriedOnlyOnce(t *testing.T) {
	srv := newExpiringServer(t)
	c, _ := connectExpiring(t, srv)
	srv.mu.Lock()
	srv.expire = true
	srv.mu.Unlock()
	_, err := snodo.ListTools(c, context.Background(), "")
	if !errors.Is(err, mcphttp.ErrSessionExpired) || !errors.Is(err, transport.ErrConnection) {
		t.Fatalf("err %v, want the session expired", err)
	}
	if n, m := srv.count("initialize"), srv.count("tools/list"); n != 2 || m != 2 {
		t.Errorf("%d initialize and %d tools/list, want 2 and 2", n, m)
	}
}

// nextBounded waits for sub's next event or end, for at most a minute: the
// bound only keeps a broken build from hanging.
func nextBounded(t *testing.T, sub *snodo.Subscription) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := sub.Next(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("the subscription did not end")
	}
	return err
}

// In the initialize era a Listen is carried on the GET stream. When the
// restarted server has forgotten the session, the reopened stream gets 404
// and the subscription ends with an error saying the session expired,
// instead of waiting for ever.
func TestHTTPLegacyListenEndsWhenSessionForgotten(t *testing.T) {
	srv := newExpiringServer(t)
	srv.getMode = "sse"
	c, logs := connectExpiring(t, srv)
	_, sub, err := c.Listen(context.Background(), snodo.SubscriptionFilter{ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	srv.restart()
	err = nextBounded(t, sub)
	if !errors.Is(err, mcphttp.ErrSessionExpired) || !errors.Is(err, transport.ErrConnection) {
		t.Fatalf("subscription ended with %v, want the session expired", err)
	}
	if !strings.Contains(logs.String(), "notification stream ended") {
		t.Errorf("log:\n%s", logs)
	}
	// The client works on, in a new session, and listens again.
	if _, err := snodo.ListTools(c, context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	_, sub2, err := c.Listen(context.Background(), snodo.SubscriptionFilter{ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	sub2.Close()
}

// A GET stream the server drops after each event is given up after 5
// reopenings in a row, and the Listen it carried ends with that error.
func TestHTTPLegacyListenEndsWhenStreamGivesUp(t *testing.T) {
	srv := newExpiringServer(t)
	srv.getMode = "drop"
	c, _ := connectExpiring(t, srv)
	_, sub, err := c.Listen(context.Background(), snodo.SubscriptionFilter{ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	err = nextBounded(t, sub)
	if !errors.Is(err, transport.ErrConnection) || !strings.Contains(err.Error(), "could not be reopened after 5 attempts") {
		t.Fatalf("subscription ended with %v", err)
	}
}

// The log level asked for with WithLogLevel went with the old session: the
// call sent again in the new one sends logging/setLevel there first.
func TestHTTPSessionExpiredLogLevelSentAgain(t *testing.T) {
	srv := newExpiringServer(t)
	c, _ := connectExpiring(t, srv)
	ctx := context.Background()
	if _, err := snodo.ListTools(c, ctx, "", snodo.WithLogLevel("debug")); err != nil {
		t.Fatal(err)
	}
	srv.restart()
	if _, err := snodo.ListTools(c, ctx, "", snodo.WithLogLevel("debug")); err != nil {
		t.Fatal(err)
	}
	if n, m := srv.count("logging/setLevel s1"), srv.count("logging/setLevel s2"); n != 1 || m != 1 {
		t.Errorf("logging/setLevel: %d in s1, %d in s2; want 1 and 1", n, m)
	}
}
