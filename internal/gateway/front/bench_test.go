package front

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/snodo/snodo/internal/gateway"
)

// BenchmarkModernCall: one 2026-07-28 tools/call through the front (JSON
// answer, fake hub) over a kept-alive loopback connection.
func BenchmarkModernCall(b *testing.B) {
	sections, _ := gateway.ParseConfig([]byte(`{}`), ".json")
	f, _ := New(sections, newFakeHub(), nil, nil, nil)
	srv := httptest.NewServer(f.Handler())
	defer srv.Close()
	defer f.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo__echo","arguments":{"a":1},` + modernMeta + `}}`
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "demo__echo")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkSessionMemory reports the heap a legacy session holds.
func BenchmarkSessionMemory(b *testing.B) {
	sections, _ := gateway.ParseConfig([]byte(`{}`), ".json")
	f, _ := New(sections, newFakeHub(), nil, nil, nil)
	defer f.Close()
	h := f.Handler()
	const n = 2000
	var before, after runtime.MemStats
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range n {
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(initBody))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/session")
		f.mu.Lock()
		for id, s := range f.sessions {
			s.cancel(nil)
			delete(f.sessions, id)
		}
		f.mu.Unlock()
	}
}
