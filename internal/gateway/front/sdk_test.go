package front

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds a token to every request of the SDK's transport.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestGoSDKHostLegacy: the official Go SDK's Streamable HTTP client, in a
// legacy session, lists tools, calls one, receives its progress on the
// request's stream, and answers the elicitation the hub asks through the
// front.
func TestGoSDKHostLegacy(t *testing.T) {
	_, srv, hub := testFront(t, "", fakePolicy{})
	ctx := context.Background()
	progress := make(chan float64, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "sdk-host", Version: "1.0.0"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if r.Params.Message != "Name?" {
				t.Errorf("elicitation message %q", r.Params.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		ProgressNotificationHandler: func(ctx context.Context, r *mcp.ProgressNotificationClientRequest) {
			progress <- r.Params.Progress
		},
	})
	tr := &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{"alice", http.DefaultTransport}}}
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("negotiated %q", v)
	}
	if n := cs.InitializeResult().ServerInfo.Name; n != "fake-gateway" {
		t.Errorf("serverInfo %q", n)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "demo__echo" {
		t.Fatalf("tools %+v", tools.Tools)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "demo__echo", Arguments: map[string]any{"x": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != `{"x":1}` {
		t.Errorf("echo %q", got)
	}
	if r := hub.last(); r.Identity == nil || r.Identity.Name != "alice" || r.Modern || r.Session == "" || r.ProtocolVersion != "2025-11-25" || !strings.Contains(string(r.ClientInfo), "sdk-host") {
		t.Errorf("hub request %+v", r)
	}
	p := &mcp.CallToolParams{Name: "demo__progress"}
	p.SetProgressToken("tok")
	if res, err = cs.CallTool(ctx, p); err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "done" {
		t.Errorf("progress call %q", got)
	}
	// The SDK hands notifications to their handler on its own schedule:
	// the wait is bounded only so that a lost notification fails the test.
	for want := 1.0; want <= 2; want++ {
		select {
		case got := <-progress:
			if got != want {
				t.Errorf("progress %v, want %v", got, want)
			}
		case <-time.After(time.Minute):
			t.Fatalf("progress %v never came", want)
		}
	}
	if res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "demo__ask"}); err != nil {
		t.Fatal(err)
	}
	var ans struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &ans); err != nil || ans.Action != "accept" || ans.Content["name"] != "Ada" {
		t.Errorf("elicitation answer %q (%v)", res.Content[0].(*mcp.TextContent).Text, err)
	}
}

// TestGoSDKHostModern: the Go SDK's client in the 2026-07-28 era discovers
// the gateway, lists and calls tools with no session.
func TestGoSDKHostModern(t *testing.T) {
	f, srv, hub := testFront(t, "", nil)
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "sdk-host", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 {
		t.Fatalf("tools %+v", tools.Tools)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "demo__echo", Arguments: map[string]any{"y": 2}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != `{"y":2}` {
		t.Errorf("echo %q", got)
	}
	if r := hub.last(); !r.Modern || r.Session != "" || r.ProtocolVersion != "2026-07-28" || r.Ask != nil {
		t.Errorf("hub request %+v", r)
	}
	f.mu.Lock()
	n := len(f.sessions)
	f.mu.Unlock()
	if n != 0 {
		t.Errorf("%d sessions held for a stateless host", n)
	}
}
