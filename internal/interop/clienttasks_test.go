package interop

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snodo/snodo"
)

// The client against server-everything's trigger-elicitation-request-async
// and trigger-sampling-request-async (TypeScript SDK, legacy experimental
// tasks): the server registers them only for a client that declares
// tasks.requests.elicitation.create and .sampling.createMessage, sends the
// request with params.task, gets the client's CreateTaskResult, polls the
// client's tasks/get until completed and fetches the handler's answer
// with tasks/result. The wire recorder checks every message.
func TestServerEverythingClientTasks(t *testing.T) {
	srv := startServer(t, "", everythingArgv(t)...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := snodo.Connect(ctx, srv.conn, allHandlers())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// The tools are registered once the server has seen the client's
	// capabilities: wait for them, a bounded number of times.
	var names []string
	for range 100 {
		names = names[:0]
		for tool, err := range c.Tools(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		if slices.Contains(names, "trigger-elicitation-request-async") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !slices.Contains(names, "trigger-elicitation-request-async") || !slices.Contains(names, "trigger-sampling-request-async") {
		t.Fatalf("the async tools are not offered: %v", names)
	}

	before := elicitCalls.Load()
	got := mustCall(t, c, "trigger-elicitation-request-async", map[string]any{})
	if !strings.Contains(got, "[COMPLETED]") || !strings.Contains(got, "Task created: ") || !strings.Contains(got, "io.modelcontextprotocol/related-task") {
		t.Errorf("async elicitation: %s", got)
	}
	if elicitCalls.Load() != before+1 {
		t.Errorf("the elicitation handler ran %d times", elicitCalls.Load()-before)
	}

	got = mustCall(t, c, "trigger-sampling-request-async", map[string]any{"prompt": "Capital of France?"})
	if !strings.Contains(got, "Paris") || !strings.Contains(got, "Task created: ") {
		t.Errorf("async sampling: %s", got)
	}
}
