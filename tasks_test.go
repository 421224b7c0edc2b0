package snodo_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	nethttp "net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/tasks"
	"github.com/snodo/snodo/transport"
)

// Task scripts for both eras: the legacy 2025-11-25 experimental tasks and
// the 2026-07-28 extension io.modelcontextprotocol/tasks.

const fullTaskCaps = `{"tools":{},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}}`

// legacyTaskServer is a legacy server with capabilities caps.
func legacyTaskServer(caps string, next func(fc *fakeCall) *jsonrpc.Response) func(fc *fakeCall) *jsonrpc.Response {
	return func(fc *fakeCall) *jsonrpc.Response {
		switch fc.Req.Method {
		case "server/discover":
			return errorResponse(fc, jsonrpc.CodeMethodNotFound, "Method not found", "")
		case "initialize":
			return result(fc, `{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"serverInfo":{"name":"tasks","version":"1"}}`)
		}
		return next(fc)
	}
}

func connectTasks(t *testing.T, modern bool, caps string, next func(fc *fakeCall) *jsonrpc.Response, opts ...*snodo.Options) (*snodo.Client, *fake) {
	t.Helper()
	if modern {
		return connectModern(t, next, opts...)
	}
	f := newFake(t, legacyTaskServer(caps, next))
	c, err := snodo.Connect(context.Background(), f, optionsOf(opts))
	if err != nil {
		t.Fatal(err)
	}
	return c, f
}

// task is a task in the era's spelling: the legacy Task, or the
// 2026-07-28 DetailedTask of a tasks/get answer; extra members are
// appended.
func task(modern bool, id, status, extra string) string {
	s := `{"taskId":"` + id + `","status":"` + status + `","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:30:00Z",`
	if modern {
		s = `{"resultType":"complete",` + s[1:] + `"ttlMs":60000`
	} else {
		s += `"ttl":60000`
	}
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// created is the answer that creates a task.
func created(modern bool, id, extra string) string {
	if modern {
		return strings.Replace(task(true, id, "working", extra), `"resultType":"complete"`, `"resultType":"task"`, 1)
	}
	return `{"task":` + task(false, id, "working", extra) + `}`
}

func poll(modern bool, ms int) string {
	if modern {
		return fmt.Sprintf(`"pollIntervalMs":%d`, ms)
	}
	return fmt.Sprintf(`"pollInterval":%d`, ms)
}

// recordPolls makes task polls immediate and records each wait asked for.
func recordPolls(t *testing.T) func() []time.Duration {
	var mu sync.Mutex
	var waits []time.Duration
	fired := make(chan time.Time)
	close(fired)
	t.Cleanup(snodo.SetPollTimer(func(d time.Duration) <-chan time.Time {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return fired
	}))
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(waits)
	}
}

func eras(t *testing.T, f func(t *testing.T, modern bool)) {
	t.Run("legacy", func(t *testing.T) { f(t, false) })
	t.Run("modern", func(t *testing.T) { f(t, true) })
}

const doneResult = `{"content":[{"type":"text","text":"done"}]}`

// "CallTool waits for a task to finish by default": a legacy tool listed
// with taskSupport required is called task-augmented; a 2026-07-28 call
// declares the extension and follows the handle the server returns. Polls
// honour pollInterval; statuses are reported; the result comes from
// tasks/result (legacy) or the completed task (2026-07-28).
func TestTaskWaitByDefault(t *testing.T) {
	eras(t, func(t *testing.T, modern bool) {
		waits := recordPolls(t)
		gets := 0
		c, f := connectTasks(t, modern, fullTaskCaps, func(fc *fakeCall) *jsonrpc.Response {
			switch fc.Req.Method {
			case "tools/list":
				return result(fc, `{"tools":[{"name":"slow","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]}`)
			case "tools/call":
				return result(fc, created(modern, "t-1", poll(modern, 250)))
			case "tasks/get":
				gets++
				switch gets {
				case 1:
					return result(fc, task(modern, "t-1", "working", `"statusMessage":"stage 2",`+poll(modern, 400)))
				default:
					extra := poll(modern, 400)
					if modern {
						extra += `,"result":` + doneResult
					}
					return result(fc, task(modern, "t-1", "completed", extra))
				}
			case "tasks/result":
				return result(fc, `{"content":[{"type":"text","text":"done"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-1"}}}`)
			}
			return noMore(fc)
		})
		ctx := context.Background()
		for _, err := range c.Tools(ctx) {
			if err != nil {
				t.Fatal(err)
			}
		}
		var statuses []string
		res, err := c.CallTool(ctx, "slow", map[string]string{"topic": "x"}, snodo.WithTaskStatus(func(tk tasks.Task) {
			statuses = append(statuses, string(tk.Status)+":"+tk.StatusMessage)
		}))
		if err != nil || len(res.Content) != 1 || res.Content[0].Text != "done" {
			t.Fatalf("CallTool: %+v %v", res, err)
		}
		call := f.sent("tools/call")[0]
		if modern {
			if call.param("task") != nil || string(call.meta("io.modelcontextprotocol/clientCapabilities")) != `{"extensions":{"io.modelcontextprotocol/tasks":{}}}` {
				t.Errorf("tools/call params %s", call.Req.Params)
			}
			for _, g := range f.sent("tasks/get") {
				if string(g.param("taskId")) != `"t-1"` || !contains(string(g.meta("io.modelcontextprotocol/clientCapabilities")), "io.modelcontextprotocol/tasks") {
					t.Errorf("tasks/get params %s", g.Req.Params)
				}
			}
			if len(f.sent("tasks/result")) != 0 {
				t.Error("tasks/result sent in 2026-07-28")
			}
		} else {
			if string(call.param("task")) != `{}` {
				t.Errorf("tools/call not task-augmented: %s", call.Req.Params)
			}
			if r := f.sent("tasks/result"); len(r) != 1 || string(r[0].param("taskId")) != `"t-1"` {
				t.Errorf("tasks/result %d", len(r))
			}
		}
		if got := waits(); !slices.Equal(got, []time.Duration{250 * time.Millisecond, 400 * time.Millisecond}) {
			t.Errorf("waits %v, want the server's 250ms then 400ms", got)
		}
		if want := []string{"working:", "working:stage 2", "completed:"}; !slices.Equal(statuses, want) {
			t.Errorf("statuses %q, want %q", statuses, want)
		}
	})
}

// A legacy tool not listed yet: the server's error saying it needs task
// augmentation (a -32601 error, or the isError result the TypeScript SDK
// gives) makes the client call again as a task, and remember it; without
// the server's tasks capability the error is returned as it is, and
// another tool error is the result.
func TestTaskRetryOnRequiredError(t *testing.T) {
	t.Run("error", func(t *testing.T) { testTaskRetry(t, false) })
	t.Run("isError", func(t *testing.T) { testTaskRetry(t, true) })
}

func testTaskRetry(t *testing.T, asResult bool) {
	recordPolls(t)
	handler := func(fc *fakeCall) *jsonrpc.Response {
		switch fc.Req.Method {
		case "tools/call":
			if string(fc.param("name")) == `"other"` {
				return result(fc, `{"content":[{"type":"text","text":"Tool other not found"}],"isError":true}`)
			}
			if fc.param("task") == nil {
				if asResult {
					return result(fc, `{"content":[{"type":"text","text":"Tool slow requires task augmentation (taskSupport: 'required')"}],"isError":true}`)
				}
				return errorResponse(fc, jsonrpc.CodeMethodNotFound, "Tool slow requires task augmentation (taskSupport: 'required')", "")
			}
			return result(fc, created(false, "t-9", poll(false, 100)))
		case "tasks/get":
			return result(fc, task(false, "t-9", "completed", ""))
		case "tasks/result":
			return result(fc, doneResult)
		}
		return noMore(fc)
	}
	c, f := connectTasks(t, false, fullTaskCaps, handler)
	for range 2 {
		if res, err := c.CallTool(context.Background(), "slow", nil); err != nil || res.Content[0].Text != "done" {
			t.Fatalf("CallTool: %+v %v", res, err)
		}
	}
	calls := f.sent("tools/call")
	if len(calls) != 3 || calls[0].param("task") != nil || calls[1].param("task") == nil || calls[2].param("task") == nil {
		t.Errorf("tools/call sequence: %d calls", len(calls))
	}

	if res, err := c.CallTool(context.Background(), "other", nil); err != nil || !res.IsError || len(f.sent("tools/call")) != 4 {
		t.Errorf("another tool error: %+v %v", res, err)
	}

	c, f = connectTasks(t, false, `{"tools":{}}`, handler)
	res, err := c.CallTool(context.Background(), "slow", nil)
	var e *snodo.Error
	if asResult {
		if err != nil || !res.IsError || len(f.sent("tools/call")) != 1 {
			t.Errorf("without the capability: %+v %v, %d calls", res, err, len(f.sent("tools/call")))
		}
	} else if !errors.As(err, &e) || e.Code != jsonrpc.CodeMethodNotFound || len(f.sent("tools/call")) != 1 {
		t.Errorf("without the capability: %v, %d calls", err, len(f.sent("tools/call")))
	}
}

// "A WithTask(...) CallOption for callers that want the handle instead";
// the handle is then followed with GetTask, WaitTask and CancelTask.
func TestTaskHandle(t *testing.T) {
	eras(t, func(t *testing.T, modern bool) {
		recordPolls(t)
		status := "working"
		c, f := connectTasks(t, modern, fullTaskCaps, func(fc *fakeCall) *jsonrpc.Response {
			switch fc.Req.Method {
			case "tools/call":
				return result(fc, created(modern, "h-1", `"statusMessage":"queued",`+poll(modern, 5000)))
			case "tasks/get":
				extra := ""
				if modern && status == "completed" {
					extra = `"result":` + doneResult
				}
				return result(fc, task(modern, "h-1", status, extra))
			case "tasks/result":
				return result(fc, doneResult)
			case "tasks/cancel":
				if modern {
					return result(fc, `{"resultType":"complete"}`)
				}
				return result(fc, task(false, "h-1", "cancelled", ""))
			}
			return noMore(fc)
		})
		ctx := context.Background()
		var h tasks.Task
		res, err := c.CallTool(ctx, "slow", nil, snodo.WithTask(&h))
		if err != nil || res != nil {
			t.Fatalf("CallTool WithTask: %+v %v", res, err)
		}
		if h.TaskID != "h-1" || h.Status != tasks.Working || h.StatusMessage != "queued" || h.PollInterval() != 5*time.Second || h.TTLMs == nil || *h.TTLMs != 60000 {
			t.Errorf("handle %+v", h)
		}
		if len(f.sent("tasks/get")) != 0 {
			t.Error("the handle was polled")
		}
		got, err := c.GetTask(ctx, "h-1")
		if err != nil || got.Status != tasks.Working {
			t.Errorf("GetTask: %+v %v", got, err)
		}
		status = "completed"
		if res, err := c.WaitTask(ctx, "h-1"); err != nil || res.Content[0].Text != "done" {
			t.Errorf("WaitTask: %+v %v", res, err)
		}
		ct, err := c.CancelTask(ctx, "h-1")
		if err != nil || ct.TaskID != "h-1" || (!modern && ct.Status != tasks.Cancelled) {
			t.Errorf("CancelTask: %+v %v", ct, err)
		}
		for _, m := range []string{"tasks/get", "tasks/cancel"} {
			if s := f.sent(m); len(s) == 0 || string(s[0].param("taskId")) != `"h-1"` {
				t.Errorf("%s params", m)
			}
		}
		if _, err := c.GetTask(ctx, ""); err == nil {
			t.Error("GetTask with an empty ID")
		}
		if _, err := c.CancelTask(ctx, strings.Repeat("x", 5000)); err == nil {
			t.Error("CancelTask with a 5000-byte ID")
		}
	})
}

// A legacy WithTask needs the server's capability and a tool that does
// not forbid tasks; nothing is sent otherwise.
func TestTaskHandleRefusedWithoutCapability(t *testing.T) {
	c, f := connectTasks(t, false, `{"tools":{}}`, noMore)
	var h tasks.Task
	if _, err := c.CallTool(context.Background(), "slow", nil, snodo.WithTask(&h)); err == nil || !contains(err.Error(), "tasks.requests.tools.call") {
		t.Errorf("WithTask without the capability: %v", err)
	}
	c, f2 := connectTasks(t, false, fullTaskCaps, func(fc *fakeCall) *jsonrpc.Response {
		return result(fc, `{"tools":[{"name":"quick","inputSchema":{"type":"object"},"execution":{"taskSupport":"forbidden"}}]}`)
	})
	if _, err := snodo.ListTools(c, context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(context.Background(), "quick", nil, snodo.WithTask(&h)); err == nil || !contains(err.Error(), "forbids") {
		t.Errorf("WithTask on a forbidden tool: %v", err)
	}
	if len(f.sent("tools/call"))+len(f2.sent("tools/call")) != 0 {
		t.Error("tools/call sent")
	}
}

// "honouring pollInterval (bounded)": 0 is raised to 50 ms, an hour
// lowered to 30 s, and without one the default (1 s) or WithPollInterval
// applies.
func TestTaskPollIntervalBounds(t *testing.T) {
	eras(t, func(t *testing.T, modern bool) {
		waits := recordPolls(t)
		intervals := []string{poll(modern, 0), poll(modern, 3600000), ""}
		gets := 0
		c, _ := connectTasks(t, modern, fullTaskCaps, func(fc *fakeCall) *jsonrpc.Response {
			switch fc.Req.Method {
			case "tools/list":
				return result(fc, `{"tools":[{"name":"slow","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]}`)
			case "tools/call":
				gets = 0
				return result(fc, created(modern, "p", intervals[0]))
			case "tasks/get":
				gets++
				if gets < len(intervals) {
					return result(fc, task(modern, "p", "working", intervals[gets]))
				}
				extra := ""
				if modern {
					extra = `"result":` + doneResult
				}
				return result(fc, task(modern, "p", "completed", extra))
			case "tasks/result":
				return result(fc, doneResult)
			}
			return noMore(fc)
		})
		var h tasks.Task
		if _, err := c.CallTool(context.Background(), "slow", nil, snodo.WithTask(&h)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.WaitTask(context.Background(), "p"); err != nil {
			t.Fatal(err)
		}
		// WaitTask starts from tasks/get: 3600000 → 30 s, none → 1 s.
		if got := waits(); !slices.Equal(got, []time.Duration{30 * time.Second, time.Second}) {
			t.Errorf("waits %v", got)
		}
		if _, err := snodo.ListTools(c, context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CallTool(context.Background(), "slow", nil, snodo.WithPollInterval(300*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if got := waits()[2:]; !slices.Equal(got, []time.Duration{50 * time.Millisecond, 30 * time.Second, 300 * time.Millisecond}) {
			t.Errorf("waits %v", got)
		}
	})
}

// "a cancelled ctx sends tasks/cancel": the call returns the context's
// error; a legacy server without tasks.cancel is not sent one.
func TestTaskCancelOnContext(t *testing.T) {
	eras(t, func(t *testing.T, modern bool) {
		for _, caps := range []string{fullTaskCaps, `{"tools":{},"tasks":{"requests":{"tools":{"call":{}}}}}`} {
			if modern && caps != fullTaskCaps {
				continue
			}
			ctx, cancel := context.WithCancel(context.Background())
			waiting := make(chan time.Time)
			restore := snodo.SetPollTimer(func(time.Duration) <-chan time.Time {
				cancel() // the caller gives up while the task works
				return waiting
			})
			c, f := connectTasks(t, modern, caps, func(fc *fakeCall) *jsonrpc.Response {
				switch fc.Req.Method {
				case "tools/list":
					return result(fc, `{"tools":[{"name":"slow","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]}`)
				case "tools/call":
					return result(fc, created(modern, "c-1", ""))
				case "tasks/cancel":
					if modern {
						return result(fc, `{}`)
					}
					return result(fc, task(false, "c-1", "cancelled", ""))
				}
				return noMore(fc)
			})
			if _, err := snodo.ListTools(c, context.Background(), ""); err != nil {
				t.Fatal(err)
			}
			_, err := c.CallTool(ctx, "slow", nil)
			restore()
			if !errors.Is(err, context.Canceled) {
				t.Errorf("CallTool: %v, want context.Canceled", err)
			}
			want := 1
			if caps != fullTaskCaps {
				want = 0
			}
			if got := f.sent("tasks/cancel"); len(got) != want || (want == 1 && string(got[0].param("taskId")) != `"c-1"`) {
				t.Errorf("caps %s: %d tasks/cancel, want %d", caps, len(got), want)
			}
		}
	})
}

// A failed task: legacy tasks/result gives the underlying error; a
// 2026-07-28 failed task carries it. A cancelled task is an error wrapping
// ErrTaskCancelled. Neither is cancelled again.
func TestTaskFailed(t *testing.T) {
	eras(t, func(t *testing.T, modern bool) {
		recordPolls(t)
		end := "failed"
		c, f := connectTasks(t, modern, fullTaskCaps, func(fc *fakeCall) *jsonrpc.Response {
			switch fc.Req.Method {
			case "tools/list":
				return result(fc, `{"tools":[{"name":"slow","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]}`)
			case "tools/call":
				return result(fc, created(modern, "f-1", ""))
			case "tasks/get":
				extra := `"statusMessage":"by operator"`
				if end == "failed" {
					extra = `"statusMessage":"rate limited"`
					if modern {
						extra += `,"error":{"code":-32603,"message":"API rate limit exceeded","data":{"retry":5}}`
					}
				}
				return result(fc, task(modern, "f-1", end, extra))
			case "tasks/result":
				return errorResponse(fc, jsonrpc.CodeInternalError, "API rate limit exceeded", `{"retry":5}`)
			}
			return noMore(fc)
		})
		if _, err := snodo.ListTools(c, context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		_, err := c.CallTool(context.Background(), "slow", nil)
		var e *snodo.Error
		if !errors.As(err, &e) || e.Kind != jsonrpc.KindServer || e.Code != jsonrpc.CodeInternalError || !contains(e.Message, "API rate limit exceeded") || string(e.Data) != `{"retry":5}` {
			t.Errorf("failed task: %v (%+v)", err, e)
		}
		end = "cancelled"
		_, err = c.CallTool(context.Background(), "slow", nil)
		if !errors.Is(err, tasks.ErrCancelled) || !contains(err.Error(), "by operator") {
			t.Errorf("cancelled task: %v", err)
		}
		if len(f.sent("tasks/cancel")) != 0 {
			t.Error("an ended task was cancelled")
		}
	})
}

// "input_required in each era": legacy — the server's request arrives on
// the connection while the client waits on tasks/result, and takes the
// one admission path to the handler; 2026-07-28 — the input requests of
// tasks/get are answered with tasks/update (an answered key is not
// answered again), and the task goes on.
func TestTaskInputRequired(t *testing.T) {
	eras(t, func(t *testing.T, modern bool) {
		recordPolls(t)
		var asked []string
		h := snodo.HandlerFunc(func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			asked = append(asked, method)
			return nameHandler(ctx, method, params)
		})
		gets := 0
		var f *fake
		var serverGot *jsonrpc.Response
		c, f := connectTasks(t, modern, fullTaskCaps, func(fc *fakeCall) *jsonrpc.Response {
			switch fc.Req.Method {
			case "tools/list":
				return result(fc, `{"tools":[{"name":"ask","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]}`)
			case "tools/call":
				return result(fc, created(modern, "i-1", ""))
			case "tasks/get":
				gets++
				switch {
				case gets <= 2:
					extra := `"statusMessage":"which one?"`
					if modern {
						extra += `,"inputRequests":{"who":{"method":"elicitation/create","params":` + elicitParams + `}}`
					}
					return result(fc, task(modern, "i-1", "input_required", extra))
				default:
					extra := ""
					if modern {
						extra = `"result":` + doneResult
					}
					return result(fc, task(modern, "i-1", "completed", extra))
				}
			case "tasks/update":
				return result(fc, `{"resultType":"complete"}`)
			case "tasks/result":
				// The server asks while the client waits for the result.
				serverGot = f.serverRequest(context.Background(), 41, "elicitation/create", elicitParams)
				return result(fc, doneResult)
			}
			return noMore(fc)
		}, &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: h}})
		if _, err := snodo.ListTools(c, context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		res, err := c.CallTool(context.Background(), "ask", nil)
		if err != nil || res.Content[0].Text != "done" {
			t.Fatalf("CallTool: %+v %v", res, err)
		}
		if !slices.Equal(asked, []string{"elicitation/create"}) {
			t.Errorf("handler asked %v, want one elicitation", asked)
		}
		if modern {
			u := f.sent("tasks/update")
			if len(u) != 1 || string(u[0].param("taskId")) != `"i-1"` || string(u[0].param("inputResponses")) != `{"who":{"action":"accept","content":{"name":"octocat"}}}` {
				t.Errorf("tasks/update: %d %v", len(u), u)
			}
		} else if serverGot == nil || serverGot.Error != nil || string(serverGot.Result) != `{"action":"accept","content":{"name":"octocat"}}` {
			t.Errorf("the server's elicitation got %+v", serverGot)
		}
	})
}

// "follows status notifications when they come": a working status is
// reported without a poll, a terminal one ends the wait at once (the timer
// never fires here), and one about another task is not this call's.
// Legacy progress with the call's token reaches WithProgress while the
// task runs.
func TestTaskStatusNotifications(t *testing.T) {
	eras(t, func(t *testing.T, modern bool) {
		method := "notifications/tasks/status"
		if modern {
			method = "notifications/tasks"
		}
		var f *fake
		var token json.RawMessage
		var done atomic.Bool
		waits := 0
		t.Cleanup(snodo.SetPollTimer(func(time.Duration) <-chan time.Time {
			waits++
			// The client now waits: the server reports.
			if token != nil {
				f.notify("notifications/progress", `{"progressToken":`+string(token)+`,"progress":2,"total":4,"message":"half"}`)
			}
			f.notify(method, task(false, "n-1", "working", `"statusMessage":"still going"`))
			return nil
		}))
		var hooked []string
		c, f := connectTasks(t, modern, fullTaskCaps, func(fc *fakeCall) *jsonrpc.Response {
			switch fc.Req.Method {
			case "tools/list":
				return result(fc, `{"tools":[{"name":"slow","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]}`)
			case "tools/call":
				if !modern {
					var m struct {
						Token json.RawMessage `json:"progressToken"`
					}
					_ = json.Unmarshal(fc.param("_meta"), &m)
					token = m.Token
				}
				return result(fc, created(modern, "n-1", ""))
			case "tasks/get":
				if !done.Load() {
					return result(fc, task(modern, "n-1", "working", ""))
				}
				extra := ""
				if modern {
					extra = `"result":` + doneResult
				}
				return result(fc, task(modern, "n-1", "completed", extra))
			case "tasks/result":
				return result(fc, doneResult)
			}
			return noMore(fc)
		}, &snodo.Options{OnNotification: func(m string, _ json.RawMessage) { hooked = append(hooked, m) }})
		if _, err := snodo.ListTools(c, context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		var statuses []string
		var progress []snodo.Progress
		opts := []snodo.CallOption{snodo.WithTaskStatus(func(tk tasks.Task) {
			statuses = append(statuses, tk.StatusMessage)
			if tk.StatusMessage == "still going" {
				// Seen: now the server finishes, and says so.
				go func() {
					f.notify(method, task(false, "other", "completed", ""))
					done.Store(true)
					f.notify(method, task(false, "n-1", "completed", ""))
				}()
			}
		})}
		if !modern {
			opts = append(opts, snodo.WithProgress(func(p snodo.Progress) { progress = append(progress, p) }))
		}
		// Bounded, so that a wait no notification ends fails the test.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := c.CallTool(ctx, "slow", nil, opts...)
		if err != nil || res.Content[0].Text != "done" {
			t.Fatalf("CallTool: %+v %v", res, err)
		}
		if waits != 1 || len(f.sent("tasks/get")) != 1 {
			t.Errorf("%d waits, %d polls: the notification did not end the wait", waits, len(f.sent("tasks/get")))
		}
		if !slices.Equal(statuses, []string{"", "still going", ""}) {
			t.Errorf("statuses %q", statuses)
		}
		if !slices.Equal(hooked, []string{method}) {
			t.Errorf("the notification hook saw %v, want only the other task's status", hooked)
		}
		if !modern && (token == nil || len(progress) != 1 || progress[0].Message != "half") {
			t.Errorf("token %s, progress %+v", token, progress)
		}
	})
}

// "tasks/list (paginated like the other lists)" in the legacy era; the
// 2026-07-28 extension has none.
func TestTaskListPagination(t *testing.T) {
	pages := map[string]string{
		``:   `{"tasks":[` + task(false, "a", "working", "") + `,` + task(false, "b", "completed", "") + `],"nextCursor":"p2"}`,
		`p2`: `{"tasks":[` + task(false, "c", "failed", `"statusMessage":"boom"`) + `]}`,
	}
	c, f := connectTasks(t, false, fullTaskCaps, func(fc *fakeCall) *jsonrpc.Response {
		var cursor string
		_ = json.Unmarshal(fc.param("cursor"), &cursor)
		return result(fc, pages[cursor])
	})
	var ids []string
	for tk, err := range c.Tasks(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.TaskID+":"+string(tk.Status))
	}
	if !slices.Equal(ids, []string{"a:working", "b:completed", "c:failed"}) || len(f.sent("tasks/list")) != 2 {
		t.Errorf("tasks %v", ids)
	}
	pages[`p2`] = `{"tasks":[],"nextCursor":"p2"}`
	var last error
	for _, err := range c.Tasks(context.Background()) {
		last = err
	}
	if last == nil || !contains(last.Error(), "twice") {
		t.Errorf("repeated cursor: %v", last)
	}

	m, _ := connectModern(t, noMore)
	n := 0
	for task, err := range m.Tasks(context.Background()) {
		n++
		if task != nil || !errors.Is(err, snodo.ErrNotInEra) {
			t.Errorf("modern Tasks: %v %v", task, err)
		}
	}
	if n != 1 {
		t.Errorf("modern Tasks gave %d pairs, want the one error", n)
	}
}

// A lying server: an answer about another task, a completed task without
// its result, statuses and numbers that are not the protocol's, a task
// handle to a request that did not declare the extension, and a task that
// works forever, bounded by WithMaxTotalTimeout (the task is then
// cancelled).
func TestTaskLyingServer(t *testing.T) {
	eras(t, func(t *testing.T, modern bool) {
		recordPolls(t)
		var answer string
		c, _ := connectTasks(t, modern, fullTaskCaps, func(fc *fakeCall) *jsonrpc.Response {
			switch fc.Req.Method {
			case "tools/list":
				return result(fc, `{"tools":[{"name":"slow","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]}`)
			case "tools/call":
				return result(fc, created(modern, "l-1", ""))
			case "tasks/get":
				return result(fc, answer)
			case "tasks/result":
				return result(fc, doneResult)
			}
			return noMore(fc)
		})
		if _, err := snodo.ListTools(c, context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		cases := []struct{ answer, want string }{
			{task(modern, "someone-else", "completed", ""), `answered with task "someone-else"`},
			{task(modern, "l-1", "sleeping", ""), `unknown status "sleeping"`},
			{task(modern, "l-1", "working", poll(modern, -5)), "non-negative"},
			{strings.Replace(task(modern, "l-1", "working", ""), `"l-1"`, `"`+strings.Repeat("x", 5000)+`"`, 1), "over the limit"},
		}
		if modern {
			cases = append(cases,
				struct{ answer, want string }{task(true, "l-1", "completed", ""), "completed without a result"},
				struct{ answer, want string }{task(true, "l-1", "failed", `"statusMessage":"gone"`), "failed without an error: gone"})
		}
		for _, tc := range cases {
			answer = tc.answer
			_, err := c.CallTool(context.Background(), "slow", nil)
			if err == nil || !contains(err.Error(), tc.want) {
				t.Errorf("%.80s: %v, want %q", tc.answer, err, tc.want)
			}
		}
		if modern {
			_, err := c.Request(context.Background(), "tools/call", json.RawMessage(`{"name":"slow"}`))
			if err == nil || !contains(err.Error(), `"task"`) {
				t.Errorf("a task handle to a raw request: %v", err)
			}
		}
	})
}

// "endless working status bounded by WithMaxTotalTimeout": the real timer
// at the 50 ms floor, a 300 ms bound; the error matches ErrTimeout and
// ErrMaxTotalTimeout, and the abandoned task is cancelled.
func TestTaskEndlessWorkingBounded(t *testing.T) {
	eras(t, func(t *testing.T, modern bool) {
		c, f := connectTasks(t, modern, fullTaskCaps, func(fc *fakeCall) *jsonrpc.Response {
			switch fc.Req.Method {
			case "tools/list":
				return result(fc, `{"tools":[{"name":"slow","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]}`)
			case "tools/call":
				return result(fc, created(modern, "e-1", poll(modern, 0)))
			case "tasks/get":
				return result(fc, task(modern, "e-1", "working", poll(modern, 0)))
			case "tasks/cancel":
				if modern {
					return result(fc, `{}`)
				}
				return result(fc, task(false, "e-1", "cancelled", ""))
			}
			return noMore(fc)
		})
		if _, err := snodo.ListTools(c, context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		_, err := c.CallTool(context.Background(), "slow", nil, snodo.WithMaxTotalTimeout(300*time.Millisecond))
		if !errors.Is(err, snodo.ErrTimeout) || !errors.Is(err, transport.ErrMaxTotalTimeout) {
			t.Errorf("endless task: %v", err)
		}
		if len(f.sent("tasks/get")) == 0 || len(f.sent("tasks/cancel")) != 1 {
			t.Errorf("%d polls, %d cancels", len(f.sent("tasks/get")), len(f.sent("tasks/cancel")))
		}
	})
}

// A server that floods terminal status notifications while its tasks/get
// says working cannot make the client poll faster than once per 50 ms: in
// a 300 ms wait, a handful of polls, not one per notification.
func TestTaskNotificationFloodDoesNotFloodPolls(t *testing.T) {
	eras(t, func(t *testing.T, modern bool) {
		method := "notifications/tasks/status"
		if modern {
			method = "notifications/tasks"
		}
		var f *fake
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var sent atomic.Int64
		started := false
		t.Cleanup(snodo.SetPollTimer(func(time.Duration) <-chan time.Time {
			if !started {
				started = true
				wg.Go(func() {
					for range 20000 {
						select {
						case <-stop:
							return
						default:
						}
						f.notify(method, task(false, "x-1", "completed", ""))
						sent.Add(1)
					}
				})
			}
			return nil // only the notifications end a wait
		}))
		c, f := connectTasks(t, modern, fullTaskCaps, func(fc *fakeCall) *jsonrpc.Response {
			switch fc.Req.Method {
			case "tools/list":
				return result(fc, `{"tools":[{"name":"slow","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]}`)
			case "tools/call":
				return result(fc, created(modern, "x-1", ""))
			case "tasks/get":
				return result(fc, task(modern, "x-1", "working", ""))
			case "tasks/cancel":
				if modern {
					return result(fc, `{}`)
				}
				return result(fc, task(false, "x-1", "cancelled", ""))
			}
			return noMore(fc)
		})
		if _, err := snodo.ListTools(c, context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		_, err := c.CallTool(context.Background(), "slow", nil, snodo.WithMaxTotalTimeout(300*time.Millisecond))
		close(stop)
		wg.Wait()
		if !errors.Is(err, transport.ErrMaxTotalTimeout) {
			t.Errorf("CallTool: %v", err)
		}
		// 300 ms at one poll per 50 ms at most, whatever the load.
		if polls := len(f.sent("tasks/get")); polls == 0 || polls > 8 || sent.Load() < int64(polls) {
			t.Errorf("%d polls for %d notifications", polls, sent.Load())
		}
	})
}

// Over Streamable HTTP in the 2026-07-28 era, a task's requests carry its
// ID in Mcp-Name (the extension's routing header), and CallTool follows
// the handle to its result.
func TestTaskOverHTTPCarriesTheTaskIDInMcpName(t *testing.T) {
	recordPolls(t)
	gets := 0
	srv := newMCPHTTPServer(t, func(req *jsonrpc.Request, h nethttp.Header) (int, string, nethttp.Header) {
		switch req.Method {
		case "server/discover":
			return 200, httpDiscoverResult, nil
		case "tools/call":
			return 200, `{"jsonrpc":"2.0","id":ID,"result":` + created(true, "task/ü 1", "") + `}`, nil
		case "tasks/get":
			gets++
			if gets == 1 {
				return 200, `{"jsonrpc":"2.0","id":ID,"result":` + task(true, "task/ü 1", "working", "") + `}`, nil
			}
			return 200, `{"jsonrpc":"2.0","id":ID,"result":` + task(true, "task/ü 1", "completed", `"result":`+doneResult) + `}`, nil
		case "tasks/cancel":
			return 200, `{"jsonrpc":"2.0","id":ID,"result":{}}`, nil
		}
		return 200, `{"jsonrpc":"2.0","id":ID,"error":{"code":-32601,"message":"no"}}`, nil
	})
	c, err := snodo.Connect(context.Background(), httpTransport(t, srv.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.CallTool(context.Background(), "slow", nil)
	if err != nil || res.Content[0].Text != "done" {
		t.Fatalf("CallTool: %+v %v", res, err)
	}
	if _, err := c.CancelTask(context.Background(), "task/ü 1"); err != nil {
		t.Fatal(err)
	}
	want := "=?base64?" + base64.StdEncoding.EncodeToString([]byte("task/ü 1")) + "?="
	for _, m := range []string{"tasks/get", "tasks/cancel"} {
		reqs := srv.requests(m)
		if len(reqs) == 0 {
			t.Fatalf("no %s", m)
		}
		for _, r := range reqs {
			if got := r.header.Get("Mcp-Name"); got != want || r.header.Get("Mcp-Method") != m {
				t.Errorf("%s: Mcp-Name %q, Mcp-Method %q", m, got, r.header.Get("Mcp-Method"))
			}
		}
	}
}

// A legacy server that answers a plain tools/call with a CreateTaskResult
// (a task, no content) gets an error: the call asked for no task. A result
// with content is the tool's result, whatever else it carries.
func TestLegacyUnaskedTaskAnswer(t *testing.T) {
	var answer string
	c, _ := connectTasks(t, false, fullTaskCaps, func(fc *fakeCall) *jsonrpc.Response {
		if fc.Req.Method == "tools/call" {
			return result(fc, answer)
		}
		return noMore(fc)
	})
	answer = created(false, "t-1", "")
	if _, err := c.CallTool(context.Background(), "plain", nil); err == nil || !contains(err.Error(), "did not ask for") {
		t.Fatalf("a task to a plain call: %v", err)
	}
	answer = `{"content":[{"type":"text","text":"ok"}],"task":{"taskId":"t-2"}}`
	res, err := c.CallTool(context.Background(), "plain", nil)
	if err != nil || len(res.Content) != 1 || res.Content[0].Text != "ok" {
		t.Fatalf("a result with content: %+v, %v", res, err)
	}
}
