package interop

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/tasks"
)

// The client against server-everything's task tool simulate-research-query
// (legacy experimental tasks, execution.taskSupport "required"): CallTool
// calls it as a task and waits, polling at the server's interval, showing
// its status messages; with ambiguous set, the task becomes input_required
// and the server's elicitation arrives while the client waits on
// tasks/result. WithTask gives the handle, which GetTask, Tasks and
// CancelTask follow; a client that has not listed the tools learns from the
// server's error; a caller that gives up cancels the task on the server.
func TestServerEverythingTasks(t *testing.T) {
	srv := startServer(t, "", everythingArgv(t)...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := snodo.Connect(ctx, srv.conn, allHandlers())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(c.Server().Capabilities.Raw), `"tasks"`) {
		t.Fatalf("server-everything does not offer tasks: %s", c.Server().Capabilities.Raw)
	}

	// The learn-from-the-error path first, before any tools/list: the
	// caller gives up at the first status, which cancels the task.
	// The tool is registered once the server has seen the client's
	// capabilities: until then it is "not found", a bounded number of
	// times.
	var id string
	for range 100 {
		gaveUp, stop := context.WithCancel(ctx)
		var res *snodo.CallToolResult
		res, err = c.CallTool(gaveUp, "simulate-research-query", map[string]any{"topic": "quit"}, snodo.WithTaskStatus(func(tk tasks.Task) {
			id = tk.TaskID
			stop()
		}))
		stop()
		if err != nil || !res.IsError || !strings.Contains(textOf(res), "not found") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !errors.Is(err, context.Canceled) || id == "" {
		t.Fatalf("given-up call: %v (task %q)", err, id)
	}
	got, err := c.GetTask(ctx, id)
	if err != nil || got.Status != tasks.Cancelled {
		t.Fatalf("the abandoned task: %+v %v", got, err)
	}

	// The tools that need client capabilities are registered once the
	// server has seen them; wait for them, a bounded number of times.
	var support string
	for range 100 {
		var names []string
		for tool, err := range c.Tools(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
			if tool.Name == "simulate-research-query" {
				support = tool.TaskSupport()
			}
		}
		if slices.Contains(names, "trigger-elicitation-request") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if support != "required" {
		t.Fatalf("simulate-research-query taskSupport %q", support)
	}

	var mu sync.Mutex
	var messages []string
	status := snodo.WithTaskStatus(func(tk tasks.Task) {
		mu.Lock()
		messages = append(messages, string(tk.Status)+": "+tk.StatusMessage)
		mu.Unlock()
	})
	got1 := mustCall(t, c, "simulate-research-query", map[string]any{"topic": "tides"}, status)
	if !strings.Contains(got1, "Research Report: tides") {
		t.Errorf("result %q", got1)
	}
	mu.Lock()
	if !slices.ContainsFunc(messages, func(m string) bool { return strings.HasPrefix(m, "working: ") && strings.HasSuffix(m, "...") }) ||
		!strings.HasPrefix(messages[len(messages)-1], "completed") {
		t.Errorf("statuses %q", messages)
	}
	messages = nil
	mu.Unlock()

	before := elicitCalls.Load()
	got2 := mustCall(t, c, "simulate-research-query", map[string]any{"topic": "python", "ambiguous": true}, status)
	if elicitCalls.Load() != before+1 || !strings.Contains(got2, "Clarification") || strings.Contains(got2, "unavailable") {
		t.Errorf("ambiguous: %d elicitations, result %q", elicitCalls.Load()-before, got2)
	}
	mu.Lock()
	if !slices.ContainsFunc(messages, func(m string) bool { return strings.HasPrefix(m, "input_required") }) {
		t.Errorf("statuses %q: no input_required", messages)
	}
	mu.Unlock()

	var h tasks.Task
	res, err := c.CallTool(ctx, "simulate-research-query", map[string]any{"topic": "later"}, snodo.WithTask(&h))
	if err != nil || res != nil || h.TaskID == "" || h.Status != tasks.Working || h.PollInterval() != time.Second {
		t.Fatalf("WithTask: %+v %v, handle %+v", res, err, h)
	}
	listed := false
	for tk, err := range c.Tasks(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		listed = listed || tk.TaskID == h.TaskID
	}
	if !listed {
		t.Errorf("tasks/list does not list %s", h.TaskID)
	}
	ct, err := c.CancelTask(ctx, h.TaskID)
	if err != nil || ct.Status != tasks.Cancelled {
		t.Errorf("CancelTask: %+v %v", ct, err)
	}
}

// The same task tool over Streamable HTTP: the task's elicitation comes on
// the SSE stream of tasks/result and is answered by POST; the result comes
// when the task ends.
func TestHTTPServerEverythingTasks(t *testing.T) {
	url := startEverythingHTTP(t)
	c, _ := connectHTTP(t, url)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Until the tool is registered it is "not found", a bounded number of
	// times; the first call learns from the server that it is a task.
	var got string
	before := elicitCalls.Load()
	for range 100 {
		res, err := c.CallTool(ctx, "simulate-research-query", map[string]any{"topic": "python", "ambiguous": true})
		if err != nil {
			t.Fatal(err)
		}
		got = textOf(res)
		if !res.IsError || !strings.Contains(got, "not found") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(got, "Research Report: python") || !strings.Contains(got, "Clarification") ||
		strings.Contains(got, "unavailable") || elicitCalls.Load() != before+1 {
		t.Errorf("%d elicitations, result %q", elicitCalls.Load()-before, got)
	}
}
