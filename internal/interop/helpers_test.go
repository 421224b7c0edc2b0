package interop

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/transport/stdio"
)

// elicitCalls counts the elicitation handler's answers.
var elicitCalls atomic.Int64

// elicitHandler is the one native elicitation handler of these tests: it
// answers a legacy server's elicitation/create request and a modern
// server's input_required round alike.
var elicitHandler = snodo.HandlerFunc(func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	elicitCalls.Add(1)
	var p struct {
		Message         string `json:"message"`
		RequestedSchema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"requestedSchema"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	// Fill in every string field of the form.
	content := map[string]any{}
	for name, schema := range p.RequestedSchema.Properties {
		var s struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(schema, &s)
		switch s.Type {
		case "string":
			content[name] = "Ada"
		case "boolean":
			content[name] = true
		case "number", "integer":
			content[name] = 7
		}
	}
	return json.Marshal(map[string]any{"action": "accept", "content": content})
})

var samplingHandler = snodo.HandlerFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"snodo-test","stopReason":"endTurn"}`), nil
})

var rootsHandler = snodo.HandlerFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`{"roots":[{"uri":"file:///work","name":"work"}]}`), nil
})

// allHandlers are the options of a client with every handler, new at
// each call, for the test to add to.
func allHandlers() *snodo.Options {
	return &snodo.Options{
		Handlers: map[string]snodo.Handler{
			abi.MethodElicitationCreate: elicitHandler,
			abi.MethodSamplingCreate:    samplingHandler,
			abi.MethodRootsList:         rootsHandler,
		},
		ClientInfo: snodo.Implementation{Name: "snodo-interop", Version: "1.0.0"},
	}
}

// server is a running server behind the wire recorder.
type server struct {
	conn *stdio.Conn
	log  string
}

// startServer runs argv (or, with role set, the test binary in that role)
// behind the tee recorder, and checks the recorded wire when the test ends.
func startServer(t *testing.T, role string, argv ...string) *server {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if role != "" {
		argv = []string{self}
	}
	cmd, _ := json.Marshal(argv)
	logPath := filepath.Join(t.TempDir(), "wire.log")
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := stdio.Connect(ctx, stdio.Config{
		Command: self,
		Env: []stdio.EnvVar{
			stdio.Set(roleEnv, "tee"),
			stdio.Set(teeLogEnv, logPath),
			stdio.Set(teeCmdEnv, string(cmd)),
			stdio.Set(teeChildRoleEnv, role),
		},
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer wcancel()
		if _, err := conn.Wait(wctx); err != nil {
			t.Errorf("server did not exit: %v", err)
		}
		cancel()
		checkWire(t, logPath)
	})
	return &server{conn: conn, log: logPath}
}

func textOf(r *snodo.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

func mustCall(t *testing.T, c *snodo.Client, name string, args any, opts ...snodo.CallOption) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, name, args, opts...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error %s", name, textOf(res))
	}
	return textOf(res)
}

// listenSeesToolAndResourceChanges listens for tool list changes and
// updates of interop://counter, has the server's "grow" tool change both,
// and checks that both events arrive before ctx ends.
func listenSeesToolAndResourceChanges(t *testing.T, ctx context.Context, c *snodo.Client) {
	t.Helper()
	accepted, sub, err := c.Listen(ctx, snodo.SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{"interop://counter"}})
	if err != nil {
		t.Fatal(err)
	}
	if !accepted.ToolsListChanged || len(accepted.ResourceSubscriptions) != 1 {
		t.Errorf("accepted %+v", accepted)
	}
	mustCall(t, c, "grow", nil)
	seen := map[string]bool{}
	for len(seen) < 2 {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("listen: %v (seen %v)", err, seen)
		}
		seen[ev.Method] = true
	}
	if !seen["notifications/tools/list_changed"] || !seen["notifications/resources/updated"] {
		t.Errorf("events %v", seen)
	}
	if err := sub.Close(); err != nil {
		t.Error(err)
	}
}

// withLogHook is allHandlers with f receiving the server's log messages.
func withLogHook(f func(snodo.LogMessage)) *snodo.Options {
	opts := allHandlers()
	opts.OnLog = f
	return opts
}
