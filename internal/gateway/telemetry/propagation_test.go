package telemetry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo"
	mcphttp "github.com/snodo/snodo/transport/http"
)

// TestClientSpanReachesBackend: a backend request made with the context
// ClientSpan returns carries the client span's trace context to the
// server, in _meta (the Snodo client) and in the traceparent HTTP header
// (the Streamable HTTP transport). The server is the Go SDK's.
func TestClientSpanReachesBackend(t *testing.T) {
	type seen struct{ meta, header string }
	got := make(chan seen, 1)
	s := mcp.NewServer(&mcp.Implementation{Name: "backend", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "tp"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		var v seen
		v.meta, _ = req.Params.Meta["traceparent"].(string)
		if req.Extra != nil {
			v.header = req.Extra.Header.Get("Traceparent")
		}
		select {
		case got <- v:
		default:
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer srv.Close()

	tel := start(t, `{}`)
	defer tel.Shutdown(context.Background())
	ctx := context.Background()
	tr, err := mcphttp.New(mcphttp.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	c, err := snodo.Connect(ctx, tr, &snodo.Options{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	sctx, end := tel.ServerSpan(ctx, "tools/call", "backend__tp", nil, nil)
	cctx, cend := tel.ClientSpan(sctx, "tools/call", "tp", "backend")
	if _, err := c.CallTool(cctx, "tp", nil); err != nil {
		t.Fatal(err)
	}
	cend(nil)
	end(nil)
	sc := trace.SpanContextFromContext(cctx)
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	v := <-got
	if v.meta != want {
		t.Errorf("_meta traceparent %q, want the client span's %q", v.meta, want)
	}
	if v.header != want {
		t.Errorf("traceparent header %q, want the client span's %q", v.header, want)
	}
}
