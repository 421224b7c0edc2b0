package front

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/internal/gateway/telemetry"
)

// A host request's measurement carries its protocol version and transport
// (the front tells the telemetry what it knows of the request), as the MCP
// semantic conventions ask.
func TestRequestAttributesReachTheMetrics(t *testing.T) {
	sections, _ := gateway.ParseConfig([]byte(`{}`), ".json")
	tel, err := telemetry.New(context.Background(), sections, telemetry.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	f, err := New(sections, newFakeHub(), nil, tel, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f.Handler())
	defer srv.Close()
	defer f.Close()
	do(t, http.MethodPost, srv.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo__echo",`+modernMeta+`}}`, modernHeaders("tools/call", "demo__echo")...).Body.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var line string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "mcp_server_operation_duration_seconds_count{") {
			line = l
		}
	}
	if !strings.Contains(line, `mcp_protocol_version="2026-07-28"`) || !strings.Contains(line, `network_transport="tcp"`) {
		t.Errorf("the server operation's measurement lacks the protocol version or the transport: %q", line)
	}
}
