package interop

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
)

// everythingArgv returns the command that runs the pinned
// @modelcontextprotocol/server-everything over stdio, failing the test
// with what to install when it is missing.
func everythingArgv(t *testing.T) []string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: server-everything needs node 20 (see .ci/deps.d/20-npm-interop.sh)")
	}
	dir, err := filepath.Abs("everything")
	if err != nil {
		t.Fatal(err)
	}
	entry := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("@modelcontextprotocol/server-everything is not installed (%v): run .ci/deps.d/20-npm-interop.sh", err)
	}
	return []string{node, entry, "stdio"}
}

// The client against @modelcontextprotocol/server-everything: a legacy
// server (it refuses server/discover), whose tools ask the client for
// sampling, elicitation and roots and report progress.
func TestServerEverything(t *testing.T) {
	srv := startServer(t, "", everythingArgv(t)...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := snodo.Connect(ctx, srv.conn, allHandlers())
	if err != nil {
		t.Fatal(err)
	}
	if c.Server().Era != snodo.EraLegacy || c.Server().ProtocolVersion != "2025-11-25" || c.Server().Implementation.Name != "mcp-servers/everything" {
		t.Fatalf("era %v version %s server %+v", c.Server().Era, c.Server().ProtocolVersion, c.Server().Implementation)
	}

	// The tools that need client capabilities are registered once the
	// server has seen them; wait for them, a bounded number of times.
	var names []string
	for range 100 {
		names = names[:0]
		for tool, err := range c.Tools(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		if slices.Contains(names, "trigger-sampling-request") && slices.Contains(names, "trigger-elicitation-request") && slices.Contains(names, "get-roots-list") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{"echo", "get-sum", "trigger-sampling-request", "trigger-elicitation-request", "get-roots-list", "trigger-long-running-operation"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tool %s missing from %v", want, names)
		}
	}

	if got := mustCall(t, c, "echo", map[string]string{"message": "hi there"}); !strings.Contains(got, "hi there") {
		t.Errorf("echo: %q", got)
	}
	if got := mustCall(t, c, "get-sum", map[string]int{"a": 2, "b": 3}); !strings.Contains(got, "5") {
		t.Errorf("get-sum: %q", got)
	}
	res, err := c.CallTool(ctx, "get-tiny-image", nil)
	if err != nil || !slices.ContainsFunc(res.Content, func(c snodo.Content) bool { return c.Type == "image" && c.Data != "" && c.MIMEType != "" }) {
		t.Errorf("get-tiny-image: %+v %v", res, err)
	}
	res, err = c.CallTool(ctx, "get-resource-links", map[string]int{"count": 2})
	if err != nil || !slices.ContainsFunc(res.Content, func(c snodo.Content) bool { return c.Type == "resource_link" && c.URI != "" }) {
		t.Errorf("get-resource-links: %+v %v", res, err)
	}
	res, err = c.CallTool(ctx, "get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 1})
	if err != nil || !slices.ContainsFunc(res.Content, func(c snodo.Content) bool {
		return c.Type == "resource" && c.Resource != nil && c.Resource.URI != ""
	}) {
		t.Errorf("get-resource-reference: %+v %v", res, err)
	}
	res, err = c.CallTool(ctx, "get-structured-content", map[string]string{"location": "Chicago"})
	if err != nil || len(res.StructuredContent) == 0 {
		t.Errorf("get-structured-content: %+v %v", res, err)
	}

	// The server asks the client: sampling, elicitation, roots.
	if got := mustCall(t, c, "trigger-sampling-request", map[string]any{"prompt": "Capital of France?", "maxTokens": 20}); !strings.Contains(got, "Paris") {
		t.Errorf("trigger-sampling-request: %q", got)
	}
	before := elicitCalls.Load()
	got := mustCall(t, c, "trigger-elicitation-request", nil)
	if elicitCalls.Load() != before+1 || !strings.Contains(got, "accept") {
		t.Errorf("trigger-elicitation-request: %q", got)
	}
	if got := mustCall(t, c, "get-roots-list", nil); !strings.Contains(got, "file:///work") {
		t.Errorf("get-roots-list: %q", got)
	}

	// Progress.
	var mu sync.Mutex
	var progress []snodo.Progress
	mustCall(t, c, "trigger-long-running-operation", map[string]any{"duration": 0.3, "steps": 3}, snodo.WithProgress(func(p snodo.Progress) {
		mu.Lock()
		progress = append(progress, p)
		mu.Unlock()
	}))
	mu.Lock()
	if len(progress) != 3 || progress[2].Progress != 3 || progress[2].Total == nil || *progress[2].Total != 3 {
		t.Errorf("progress %+v", progress)
	}
	mu.Unlock()

	// Prompts, resources, completion, ping.
	for p, err := range c.Prompts(ctx) {
		if err != nil || p.Name == "" {
			t.Fatalf("prompts: %+v %v", p, err)
		}
	}
	var first *snodo.Resource
	for r, err := range c.Resources(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = r
		}
	}
	if first == nil {
		t.Fatal("no resources")
	}
	rr, err := c.ReadResource(ctx, first.URI)
	if err != nil || len(rr.Contents) == 0 {
		t.Errorf("read %s: %+v %v", first.URI, rr, err)
	}
	for _, err := range c.ResourceTemplates(ctx) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Ping(ctx); err != nil {
		t.Error(err)
	}
	if err := c.SetLogLevel(ctx, "error"); err != nil {
		t.Error(err)
	}
}

// URL-mode elicitation against server-everything: the client advertises
// the url mode only when asked to, the server's tool appears only then, and
// the same handler gets the url request; the -32042 error path reaches the
// caller as a *snodo.Error with its code and data.
func TestServerEverythingURLElicitation(t *testing.T) {
	srv := startServer(t, "", everythingArgv(t)...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var modes []string
	h := snodo.HandlerFunc(func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		var p struct {
			Mode string `json:"mode"`
			URL  string `json:"url"`
		}
		_ = json.Unmarshal(params, &p)
		mu.Lock()
		modes = append(modes, p.Mode+" "+p.URL)
		mu.Unlock()
		return json.RawMessage(`{"action":"accept"}`), nil
	})
	c, err := snodo.Connect(ctx, srv.conn, &snodo.Options{
		Handlers:         map[string]snodo.Handler{abi.MethodElicitationCreate: h},
		ElicitationModes: []string{"form", "url"},
	})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for range 100 {
		for tool, err := range c.Tools(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			found = found || tool.Name == "trigger-url-elicitation"
		}
		if found {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !found {
		t.Fatal("trigger-url-elicitation not offered to a client with url elicitation")
	}
	mustCall(t, c, "trigger-url-elicitation", map[string]string{"url": "https://example.com/login"})
	mu.Lock()
	if len(modes) != 1 || modes[0] != "url https://example.com/login" {
		t.Errorf("handler saw %q", modes)
	}
	mu.Unlock()

	_, err = c.CallTool(ctx, "trigger-url-elicitation", map[string]any{"url": "https://example.com/other", "errorPath": true})
	var e *snodo.Error
	if !errors.As(err, &e) || e.Kind != jsonrpc.KindServer || e.Code != jsonrpc.CodeURLElicitationRequired || len(e.Data) == 0 {
		t.Errorf("error path: %v", err)
	}
	if els, ok := snodo.URLElicitationsRequired(err); !ok || len(els) != 1 || !strings.HasPrefix(els[0].URL, "https://") || els[0].ElicitationID == "" {
		t.Errorf("URLElicitationsRequired: %+v %v (data %s)", els, ok, e.Data)
	}
}
