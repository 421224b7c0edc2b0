package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snodo/snodo/internal/interop/gosdkserver"
)

// sseOnlyServer is the interop server behind the Go SDK's HTTP+SSE
// handler (2024-11-05) only, in this test process: a POST to its URL, the
// Streamable HTTP initialize among them, is answered 400, as that handler
// does. It counts the GETs (SSE streams opened).
type sseOnlyServer struct {
	*httptest.Server
	mu   sync.Mutex
	gets int
}

func newSSEOnlyServer(t *testing.T) *sseOnlyServer {
	t.Helper()
	s := gosdkserver.NewServer([]string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"})
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := &sseOnlyServer{}
	srv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			srv.mu.Lock()
			srv.gets++
			srv.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}

func (s *sseOnlyServer) streams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets
}

// "snodo-run tools call --url URL" reaches a server that speaks only
// HTTP+SSE: Streamable HTTP is refused, snodo-run falls back to the SSE
// stream at the same URL and says so under --verbose; --transport sse and
// an mcpServers entry of type sse go there directly; --transport http
// forbids the fallback, with an error that says what to do.
func TestURLSSEOnlyServer(t *testing.T) {
	srv := newSSEOnlyServer(t)
	r := ok(t, cli(t, "--url", srv.URL+"/sse", "-v", "tools", "call", "count", "--args", `{"steps":2,"delay_ms":0}`, "-o", "text"))
	contains(t, "tools call over the fallback", r.stdout, "counted to 2")
	contains(t, "--verbose", r.stderr, "trying the HTTP+SSE transport of 2024-11-05 at the same URL", "status=400")

	r = ok(t, cli(t, "--url", srv.URL+"/sse", "--transport", "sse", "tools", "call", "count", "--args", `{"steps":1,"delay_ms":0}`, "-o", "text"))
	contains(t, "--transport sse", r.stdout, "counted to 1")

	before := srv.streams()
	e := exits(t, cli(t, "--url", srv.URL+"/sse", "--transport", "http", "tools", "list"), exitConnection, "transport")
	contains(t, "--transport http", e.Message, "HTTP 400", "HTTP+SSE", "--transport sse")
	if srv.streams() != before {
		t.Errorf("--transport http opened the SSE stream")
	}

	cfg := filepath.Join(t.TempDir(), "mcp.json")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`{"mcpServers": {
  "sse":  {"type": "sse", "url": %[1]q},
  "auto": {"url": %[1]q},
  "http": {"type": "http", "url": %[1]q}
}}`, srv.URL+"/sse")), 0o644)
	for _, name := range []string{"sse", "auto"} {
		r = ok(t, cli(t, "--config", cfg, "--server", name, "tools", "list", "-o", "text"))
		contains(t, name, r.stdout, "count")
	}
	exits(t, cli(t, "--config", cfg, "--server", "http", "tools", "list"), exitConnection, "transport")
	// The flag beats the entry's type.
	r = ok(t, cli(t, "--config", cfg, "--server", "http", "--transport", "auto", "tools", "list", "-o", "text"))
	contains(t, "--transport auto over type http", r.stdout, "count")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--url", srv.URL, "--transport", "websocket", "tools", "list"}, "--transport must be auto, http or sse"},
		{[]string{"--url", srv.URL, "--transport", "sse", "--protocol", "modern", "tools", "list"}, "carries only the legacy era"},
		{[]string{"--transport", "sse", "tools", "list", "--", "demo"}, "--transport applies to a remote server"},
	} {
		e := exits(t, cli(t, tc.args...), exitUsage, "")
		contains(t, fmt.Sprint(tc.args), e.Message, tc.want)
	}
}
