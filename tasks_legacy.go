package snodo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/tasks"
	"github.com/snodo/snodo/transport"
)

// Values of a tool's execution.taskSupport (legacy era). Absent means
// forbidden.
const (
	taskSupportForbidden = "forbidden"
	taskSupportRequired  = "required"
)

// TaskSupport returns the tool's execution.taskSupport (legacy era):
// "required", "optional", "forbidden", or "" when absent (which means
// forbidden).
func (t *Tool) TaskSupport() string {
	raw, ok := t.Extra["execution"]
	if !ok {
		return ""
	}
	var e struct {
		TaskSupport string `json:"taskSupport"`
	}
	if unmarshal(raw, &e) != nil {
		return ""
	}
	return e.TaskSupport
}

// legacyTasksCapability is the legacy server's tasks capability.
type legacyTasksCapability struct {
	toolCall, cancel, list bool
}

func (ts *taskState) capability(raw json.RawMessage) legacyTasksCapability {
	ts.capsOnce.Do(func() {
		var caps struct {
			Tasks *struct {
				List     json.RawMessage `json:"list"`
				Cancel   json.RawMessage `json:"cancel"`
				Requests struct {
					Tools struct {
						Call json.RawMessage `json:"call"`
					} `json:"tools"`
				} `json:"requests"`
			} `json:"tasks"`
		}
		if len(raw) == 0 || unmarshalOnce(raw, &caps) != nil || caps.Tasks == nil {
			return
		}
		t := caps.Tasks
		ts.legacyCap = legacyTasksCapability{toolCall: isObject(t.Requests.Tools.Call), cancel: isObject(t.Cancel), list: isObject(t.List)}
	})
	return ts.legacyCap
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// noteTools remembers the taskSupport of listed tools.
func (c *Client) noteTools(tools []*Tool) {
	ts := &c.tasks
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, t := range tools {
		if t == nil {
			continue
		}
		s := t.TaskSupport()
		if s == "" {
			delete(ts.support, t.Name)
			continue
		}
		if ts.support == nil || len(ts.support) >= maxKnownTools {
			ts.support = map[string]string{}
		}
		ts.support[t.Name] = s
	}
}

func (c *Client) toolTaskSupport(name string) string {
	c.tasks.mu.Lock()
	defer c.tasks.mu.Unlock()
	return c.tasks.support[name]
}

func (c *Client) noteRequired(name string) {
	c.noteTools([]*Tool{{Name: name, Extra: map[string]json.RawMessage{"execution": json.RawMessage(`{"taskSupport":"required"}`)}}})
}

type taskMetadata struct {
	TTL *int64 `json:"ttl,omitempty"`
}

// asksForTask reports whether a tools/call error is the server saying that
// the tool runs only as a task: -32601 (the specification's) or -32600
// (which it allows), with a message saying task augmentation is required.
func asksForTask(err error) bool {
	var e *Error
	if !errors.As(err, &e) || e.Kind != jsonrpc.KindServer ||
		(e.Code != jsonrpc.CodeMethodNotFound && e.Code != jsonrpc.CodeInvalidRequest) {
		return false
	}
	return saysTaskRequired(e.Message)
}

// saysTaskRequired reports whether an error message says that the call
// must be task-augmented ("requires task augmentation", "Task
// augmentation required").
func saysTaskRequired(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "task augmentation") && strings.Contains(m, "requir")
}

// isLegacyTaskAnswer reports whether a legacy tools/call result is a
// CreateTaskResult: a task and no content.
func isLegacyTaskAnswer(raw json.RawMessage) bool {
	var r struct {
		Task    json.RawMessage `json:"task"`
		Content json.RawMessage `json:"content"`
	}
	return unmarshal(raw, &r) == nil && nonNull(r.Task) != nil && r.Content == nil
}

func (c *Client) legacyTaskResult(ctx context.Context, id string, cc *callConfig) (*CallToolResult, error) {
	raw, err := c.taskCall(ctx, "tasks/result", taskIDParams{id}, []CallOption{WithTimeout(cc.timeout)})
	if err != nil {
		return nil, err
	}
	return decodeToolResult(raw)
}

// legacyTasks are the experimental tasks of the legacy era (2025-11-25):
// the client asks for a task with params.task on tools/call, polls
// tasks/get and fetches the result with tasks/result.
type legacyTasks struct{}

// callTool calls the tool plainly, unless it is to run as a task: asked
// for with WithTask, or a tool whose taskSupport is "required" when the
// server's capabilities offer tasks for tools/call. A plain call that the
// server answers "task augmentation required" is made again, as a task.
func (legacyTasks) callTool(ctx context.Context, c *Client, call toolCall) (*CallToolResult, error) {
	caps := c.tasks.capability(c.capabilities.Raw)
	support := c.toolTaskSupport(call.name)
	handle := call.handle()
	if handle != nil {
		if !caps.toolCall {
			return nil, protocolError(jsonrpc.CodeInvalidRequest, nil,
				"tool %s cannot be called as a task: the server's capabilities do not include tasks.requests.tools.call", call.name)
		}
		if support == taskSupportForbidden {
			return nil, protocolError(jsonrpc.CodeInvalidRequest, nil, "tool %s forbids task execution (execution.taskSupport)", call.name)
		}
	}
	if handle == nil && (!caps.toolCall || support != taskSupportRequired) {
		params, err := toolParams(toolCallParams{Name: call.name, Arguments: call.arguments})
		if err != nil {
			return nil, err
		}
		raw, err := c.callOwn(ctx, "tools/call", params, &call.cc)
		if err == nil {
			res, err := decodeToolResult(raw)
			// Only a result without content can be a CreateTaskResult:
			// a tool's result, however large, is not scanned again.
			if err == nil && res.Content == nil && isLegacyTaskAnswer(raw) {
				return nil, protocolError(jsonrpc.CodeInternalError, nil,
					"tools/call %s: the server answered with a task, which the call did not ask for", call.name)
			}
			if err != nil || !caps.toolCall || !res.IsError || len(res.Content) != 1 || !saysTaskRequired(res.Content[0].Text) {
				return res, err
			}
			// The TypeScript SDK reports the error as the tool's.
		} else if !caps.toolCall || !asksForTask(err) {
			return nil, err
		}
		// A tool not listed yet, that the server runs only as a task:
		// nothing ran, so ask again, for a task.
		c.noteRequired(call.name)
	}
	return c.callToolAsTask(ctx, call)
}

// callToolAsTask makes a task-augmented tools/call and follows the task
// to its end, or stores it in the WithTask handle.
func (c *Client) callToolAsTask(ctx context.Context, call toolCall) (*CallToolResult, error) {
	cc, handle := &call.cc, call.handle()
	w := newTaskWaiter()
	defer c.tasks.forget(w)
	var onProgress transport.ProgressFunc
	params := toolCallParams{Name: call.name, Arguments: call.arguments, Task: &taskMetadata{}}
	tcc := cc
	if handle == nil {
		if onProgress = c.progressFunc(ctx, cc); onProgress != nil {
			// The token outlives the request: the server reports the
			// task's progress with it, and the waiter delivers it.
			_, token := c.progressToken()
			params.Meta = map[string]json.RawMessage{metaProgressToken: token}
			c.tasks.watchToken(w, token)
			tcc = withTasks(cc, func(tc *taskCallConfig) { tc.ownedToken = true })
		}
	}
	body, err := toolParams(params)
	if err != nil {
		return nil, err
	}
	raw, err := c.call(ctx, "tools/call", body, tcc)
	if err != nil {
		return nil, err
	}
	var created struct {
		Task json.RawMessage `json:"task"`
	}
	if err := unmarshal(raw, &created); err != nil {
		return nil, badResult("tools/call", err)
	}
	if nonNull(created.Task) == nil {
		// The server ran the tool at once.
		return decodeToolResult(raw)
	}
	task, err := decodeTask("tools/call", created.Task)
	if err != nil {
		return nil, err
	}
	if handle != nil {
		*handle = *task
		return nil, nil
	}
	c.tasks.watchTask(w, task.TaskID)
	return c.awaitTask(ctx, w, task, cc, onProgress, call.deadline, true)
}

// finished fetches the result of a task that ended with tasks/result.
func (legacyTasks) finished(ctx context.Context, c *Client, task *tasks.Task, cc callConfig) (*CallToolResult, error) {
	return c.legacyTaskResult(ctx, task.TaskID, &cc)
}

// needsInput waits on tasks/result, while the server sends its requests on
// the connection; tasks/result ends with the task. One that outlives the
// call's timeout is not an end: the task is polled again at once.
func (legacyTasks) needsInput(ctx context.Context, c *Client, task *tasks.Task, cc callConfig, _ *taskInputs) (res *CallToolResult, done, pollNow bool, err error) {
	res, err = c.legacyTaskResult(ctx, task.TaskID, &cc)
	if err == nil || !errors.Is(err, ErrTimeout) || ctx.Err() != nil {
		return res, true, false, err
	}
	return nil, false, true, nil
}

// cancels reports whether the server's capabilities offer tasks/cancel.
func (legacyTasks) cancels(c *Client) bool { return c.tasks.capability(c.capabilities.Raw).cancel }

// cancelled reads tasks/cancel's answer: the task, cancelled.
func (legacyTasks) cancelled(_ string, raw json.RawMessage) (*tasks.Task, error) {
	return decodeTask("tasks/cancel", raw)
}

// requestDialect is nil: the tasks/ requests speak the connection's
// dialect.
func (legacyTasks) requestDialect(*Client) dialect { return nil }
