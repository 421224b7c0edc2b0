package snodo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/tasks"
	"github.com/snodo/snodo/transport"
)

// tasksExtensionID is the identifier of the 2026-07-28 tasks extension.
const tasksExtensionID = "io.modelcontextprotocol/tasks"

// acceptsTask reports whether result is a task handle the call takes as
// its result (2026-07-28).
func acceptsTask(cc *callConfig, result json.RawMessage) bool {
	return cc.tasks != nil && cc.tasks.accept && isTaskResult(result)
}

// isTaskResult reports whether a 2026-07-28 result is a CreateTaskResult
// (resultType "task").
func isTaskResult(result json.RawMessage) bool {
	var rt json.RawMessage
	if !eachMember(result, func(key, value []byte) bool {
		if string(key) == "resultType" {
			rt = value
			return false
		}
		return true
	}) {
		var head struct {
			ResultType json.RawMessage `json:"resultType"`
		}
		if unmarshal(result, &head) != nil {
			return false
		}
		rt = head.ResultType
	}
	rt = bytes.TrimSpace(rt)
	if string(rt) == `"task"` {
		return true
	}
	if bytes.IndexByte(rt, '\\') < 0 {
		// Without an escape, no other spelling is "task".
		return false
	}
	var s string
	return len(rt) > 0 && unmarshal(rt, &s) == nil && s == "task"
}

// tasksDialect is the 2026-07-28 dialect whose client capabilities
// declare the tasks extension, for tools/call and the tasks/ methods.
func (c *Client) tasksDialect() dialect {
	c.tasks.dialectOnce.Do(func() {
		v := c.dialect.ProtocolVersion()
		caps := c.cfg.clientCapabilities(v, `"`+tasksExtensionID+`":{}`)
		c.tasks.dialect = newModernDialect(v, c.cfg.clientInfo, caps)
	})
	return c.tasks.dialect
}

// updateTask answers the input requests of a 2026-07-28 input_required
// task that have not been answered yet, with tasks/update, and returns how
// many it answered.
func (c *Client) updateTask(ctx context.Context, task *tasks.Task, cc *callConfig, deadline time.Time, answered map[string]bool) (int, error) {
	if task.InputRequests == nil {
		return 0, nil
	}
	var all map[string]inputRequest
	if err := unmarshal(task.InputRequests, &all); err != nil {
		return 0, badResult("tasks/get", fmt.Errorf("inputRequests: %w", err))
	}
	pending := map[string]inputRequest{}
	for k, r := range all {
		if !answered[k] {
			pending[k] = r
		}
	}
	if len(pending) == 0 {
		return 0, nil
	}
	responses, err := c.answerInputs(ctx, "tools/call", pending, cc, deadline)
	if err != nil {
		return 0, err
	}
	params, err := marshal(struct {
		TaskID         string          `json:"taskId"`
		InputResponses json.RawMessage `json:"inputResponses"`
	}{task.TaskID, responses})
	if err != nil {
		return 0, err
	}
	if _, err := c.call(ctx, "tasks/update", params, c.taskRequestConfig(cc.timeout)); err != nil {
		return 0, err
	}
	for k := range pending {
		answered[k] = true
	}
	return len(pending), nil
}

// modernOutcome is the end of a 2026-07-28 task: its inline result, or
// its error.
func modernOutcome(t *tasks.Task) (*CallToolResult, error) {
	switch t.Status {
	case tasks.Completed:
		if t.Result == nil {
			return nil, protocolError(jsonrpc.CodeInternalError, nil, "task %s completed without a result", t.TaskID)
		}
		return decodeToolResult(t.Result)
	case tasks.Failed:
		if t.Error == nil {
			msg := t.StatusMessage
			if msg == "" {
				msg = "no error given"
			}
			return nil, protocolError(jsonrpc.CodeInternalError, nil, "task %s failed without an error: %s", t.TaskID, msg)
		}
		e := *t.Error
		e.Message = fmt.Sprintf("task %s failed: %s", t.TaskID, e.Message)
		return nil, &e
	}
	return nil, taskCancelledError(t)
}

// tasksExtension is the 2026-07-28 tasks extension as a transport sees it
// (transport.PolicySource): over Streamable HTTP, tasks/get, tasks/update and
// tasks/cancel carry their task ID in Mcp-Name, the extension's routing
// header, beside the dialect's Mcp-Method.
type tasksExtension struct{}

// TransportPolicy implements transport.PolicySource.
func (tasksExtension) TransportPolicy(req *jsonrpc.Request) transport.Policy {
	switch req.Method {
	case "tasks/get", "tasks/update", "tasks/cancel":
	default:
		return transport.Policy{}
	}
	var p struct {
		TaskID *string `json:"taskId"`
	}
	if unmarshal(req.Params, &p) != nil || p.TaskID == nil {
		return transport.Policy{}
	}
	return transport.Policy{Headers: []transport.Header{{Name: transport.HeaderName, Value: transport.EncodeHeaderValue(*p.TaskID)}}}
}

// modernTasks are the 2026-07-28 tasks extension: tools/call declares it,
// the server decides whether to answer with a task handle, and tasks/get
// carries the result, the error or the input requests, which tasks/update
// answers.
type modernTasks struct{}

// callTool calls the tool declaring the extension, and follows the task
// the server may answer with, or stores it in the WithTask handle.
func (modernTasks) callTool(ctx context.Context, c *Client, call toolCall) (*CallToolResult, error) {
	tcc := call.cc
	tc := taskCallConfig{}
	if tcc.tasks != nil {
		tc = *tcc.tasks
	}
	tc.accept, tc.dialect = true, c.tasksDialect()
	tcc.tasks = &tc
	params, err := toolParams(toolCallParams{Name: call.name, Arguments: call.arguments})
	if err != nil {
		return nil, err
	}
	raw, err := c.callOwn(ctx, "tools/call", params, &tcc)
	if err != nil {
		return nil, err
	}
	if !isTaskResult(raw) {
		return decodeToolResult(raw)
	}
	task, err := decodeTask("tools/call", raw)
	if err != nil {
		return nil, err
	}
	if handle := call.handle(); handle != nil {
		*handle = *task
		return nil, nil
	}
	w := newTaskWaiter()
	defer c.tasks.forget(w)
	c.tasks.watchTask(w, task.TaskID)
	cc := call.cc
	return c.awaitTask(ctx, w, task, &cc, nil, call.deadline, true)
}

// finished is the task's inline result, or its error.
func (modernTasks) finished(_ context.Context, _ *Client, task *tasks.Task, _ callConfig) (*CallToolResult, error) {
	return modernOutcome(task)
}

// needsInput answers the input requests not answered yet with
// tasks/update; the rounds that answer any count against Options.MaxRounds.
func (modernTasks) needsInput(ctx context.Context, c *Client, task *tasks.Task, cc callConfig, in *taskInputs) (res *CallToolResult, done, pollNow bool, err error) {
	n, err := c.updateTask(ctx, task, &cc, in.deadline, in.answered)
	if err != nil {
		return nil, true, false, err
	}
	if n > 0 {
		if in.rounds++; in.rounds > c.cfg.maxRounds {
			return nil, true, false, protocolError(jsonrpc.CodeInternalError, ErrTooManyRounds,
				"task %s still asks for input after %d rounds", task.TaskID, c.cfg.maxRounds)
		}
	}
	return nil, false, false, nil
}

// cancels is true: every server of the extension takes tasks/cancel.
func (modernTasks) cancels(*Client) bool { return true }

// cancelled reads tasks/cancel's empty acknowledgement: the Task has only
// its ID.
func (modernTasks) cancelled(id string, _ json.RawMessage) (*tasks.Task, error) {
	return &tasks.Task{TaskID: id}, nil
}

// requestDialect declares the extension: servers refuse the tasks/
// methods to clients that do not.
func (modernTasks) requestDialect(c *Client) dialect { return c.tasksDialect() }
