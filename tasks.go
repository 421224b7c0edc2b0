package snodo

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/tasks"
)

// Tasks: a tool call that the server runs in the background, polled by the
// client until it finishes.
//
// In the legacy era (2025-11-25, experimental) the client asks for a task
// with params.task on tools/call, when the server's capabilities include
// tasks.requests.tools.call; the server answers with a CreateTaskResult
// ({"task": Task}), and the client polls tasks/get and fetches the result
// with tasks/result. While the task is input_required, the server sends its
// requests (elicitation, sampling, roots) on the connection while the
// client waits on tasks/result; they take the client's one admission path.
//
// In the 2026-07-28 era tasks are the extension io.modelcontextprotocol/tasks:
// the client declares it in the per-request capabilities of tools/call, and
// the server may answer with a task handle (resultType "task") at its own
// discretion. The client polls tasks/get, whose answer carries the result,
// the error or the input requests; it answers input requests with
// tasks/update. There is no tasks/result and no tasks/list.

// Bounds on what a server says about its tasks.
const (
	// minPollInterval is the shortest wait between two polls, whatever the
	// server suggests; maxPollInterval the longest.
	minPollInterval = 50 * time.Millisecond
	maxPollInterval = 30 * time.Second
	// defaultPollInterval is the wait when the server suggests none.
	defaultPollInterval = time.Second
	// maxCancelWait bounds the tasks/cancel sent for an abandoned task.
	maxCancelWait = 5 * time.Second
	// maxKnownTools bounds the taskSupport values remembered from
	// tools/list.
	maxKnownTools = 4096
)

// taskProtocol is how one era runs tasks: the legacy era's experimental
// tasks (legacyTasks, tasks_legacy.go) or the 2026-07-28 extension
// (modernTasks, tasks_modern.go). The connection's dialect gives it
// (dialect.tasks); the wait loop they share is in taskwait.go.
//
// Its methods take the call's configuration by value: a pointer passed
// through an interface escapes, and CallTool's stays on the stack.
type taskProtocol interface {
	// callTool is tools/call: a plain call, or a task followed to its end.
	callTool(ctx context.Context, c *Client, call toolCall) (*CallToolResult, error)
	// finished returns the outcome of a task that completed or failed.
	finished(ctx context.Context, c *Client, task *tasks.Task, cc callConfig) (*CallToolResult, error)
	// needsInput answers an input_required task. done says the wait is
	// over, with res and err; pollNow asks for a poll without a pause.
	needsInput(ctx context.Context, c *Client, task *tasks.Task, cc callConfig, in *taskInputs) (res *CallToolResult, done, pollNow bool, err error)
	// cancels reports whether the server takes tasks/cancel.
	cancels(c *Client) bool
	// cancelled reads tasks/cancel's answer.
	cancelled(id string, raw json.RawMessage) (*tasks.Task, error)
	// requestDialect is the dialect of the tasks/ requests, or nil for
	// the connection's.
	requestDialect(c *Client) dialect
}

// taskInputs is what one wait for a task knows of its input rounds
// (2026-07-28): the keys answered, the rounds that answered any, and the
// total deadline the handlers run under.
type taskInputs struct {
	answered map[string]bool
	rounds   int
	deadline time.Time
}

// taskCallConfig is the task part of one call's options.
type taskCallConfig struct {
	// handle receives the task instead of waiting for it (WithTask).
	handle *tasks.Task
	// onStatus sees each new status while the call waits (WithTaskStatus).
	onStatus func(tasks.Task)
	// pollInterval is the wait when the server suggests none.
	pollInterval time.Duration

	// Set by the client for its own requests: accept a task handle as the
	// result (2026-07-28), speak with dialect instead of the connection's,
	// and send no progress token of the call's own.
	accept     bool
	dialect    dialect
	ownedToken bool
}

func (cc *callConfig) taskConfig() *taskCallConfig {
	if cc.tasks == nil {
		cc.tasks = &taskCallConfig{}
	}
	return cc.tasks
}

// WithTask makes CallTool return the task handle instead of waiting for
// the task: when the server answers with a task, CallTool stores it in
// *task and returns a nil result and a nil error; when it answers with the
// result at once, CallTool returns it and *task is left as it was. In the
// legacy era, the call asks for a task (params.task), which the server's
// capabilities must offer (tasks.requests.tools.call) and the tool must not
// forbid; in the 2026-07-28 era, the server decides. Follow the task with
// GetTask, WaitTask and CancelTask.
func WithTask(task *tasks.Task) CallOption {
	return func(cc *callConfig) { cc.taskConfig().handle = task }
}

// WithTaskStatus calls f, in the goroutine that made the call, with each
// status a task takes while CallTool or WaitTask waits for it (from polls
// and from the server's status notifications), once per change of status
// or status message.
func WithTaskStatus(f func(tasks.Task)) CallOption {
	return func(cc *callConfig) { cc.taskConfig().onStatus = f }
}

// WithPollInterval sets how long to wait between two polls of a task when
// the server suggests no interval (default 1 s). Whatever the server or
// this option says, polls are at least 50 ms and at most 30 s apart.
func WithPollInterval(d time.Duration) CallOption {
	return func(cc *callConfig) { cc.taskConfig().pollInterval = d }
}

// callDialect is the dialect of one call: the tasks dialect for the
// client's task requests, the connection's otherwise.
func (c *Client) callDialect(cc *callConfig) dialect {
	if cc.tasks != nil && cc.tasks.dialect != nil {
		return cc.tasks.dialect
	}
	return c.dialect
}

// ownsProgressToken reports whether the call's progress token is sent
// and routed by the task code rather than by call.
func ownsProgressToken(cc *callConfig) bool { return cc.tasks != nil && cc.tasks.ownedToken }

// nonNull is raw, or nil when raw is absent or JSON null.
func nonNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

func decodeTask(method string, raw json.RawMessage) (*tasks.Task, error) {
	var t tasks.Task
	if err := unmarshal(raw, &t); err != nil {
		return nil, badResult(method, err)
	}
	return &t, nil
}

func taskCancelledError(t *tasks.Task) *Error {
	msg := fmt.Sprintf("task %s was cancelled", t.TaskID)
	if t.StatusMessage != "" {
		msg += ": " + t.StatusMessage
	}
	return &Error{Kind: jsonrpc.KindServer, Code: jsonrpc.CodeInternalError, Message: msg, Cause: tasks.ErrCancelled}
}

type taskIDParams struct {
	TaskID string `json:"taskId"`
}

func checkTaskID(method, id string) error {
	if id == "" {
		return protocolError(jsonrpc.CodeInvalidParams, nil, "%s needs a task ID", method)
	}
	if len(id) > tasks.MaxIDBytes {
		return protocolError(jsonrpc.CodeInvalidParams, nil, "%s: a task ID of %d bytes is over the limit of %d", method, len(id), tasks.MaxIDBytes)
	}
	return nil
}

// taskCall sends a tasks/ method with params and returns the raw result.
func (c *Client) taskCall(ctx context.Context, method string, params any, opts []CallOption) (json.RawMessage, error) {
	b, err := marshal(params)
	if err != nil {
		return nil, protocolError(jsonrpc.CodeInvalidParams, err, "invalid params for %s", method)
	}
	cc := c.callConfig(opts)
	if d := c.dialect.tasks().requestDialect(c); d != nil {
		cc.taskConfig().dialect = d
	}
	return c.call(ctx, method, b, cc)
}

// taskRequestConfig is the call configuration of a tasks/ request the
// client makes itself: the given timeout, and the era's dialect for the
// tasks/ methods.
func (c *Client) taskRequestConfig(timeout time.Duration) *callConfig {
	cc := &callConfig{timeout: timeout}
	if d := c.dialect.tasks().requestDialect(c); d != nil {
		cc.tasks = &taskCallConfig{dialect: d}
	}
	return cc
}

// GetTask returns the task id's state (tasks/get). In the 2026-07-28 era
// it carries the input requests, the result or the error, by status. An
// answer about another task is an error.
func (c *Client) GetTask(ctx context.Context, id string, opts ...CallOption) (*tasks.Task, error) {
	if err := checkTaskID("tasks/get", id); err != nil {
		return nil, err
	}
	raw, err := c.taskCall(ctx, "tasks/get", taskIDParams{id}, opts)
	if err != nil {
		return nil, err
	}
	t, err := decodeTask("tasks/get", raw)
	if err != nil {
		return nil, err
	}
	if t.TaskID != id {
		return nil, protocolError(jsonrpc.CodeInternalError, nil, "tasks/get for task %q answered with task %q", id, t.TaskID)
	}
	return t, nil
}

// WaitTask follows task id until it ends and returns the result of the
// tool call it runs, as CallTool does for a task it started: it polls
// tasks/get at the server's interval (bounded, see WithPollInterval),
// wakes at status notifications, reports statuses to WithTaskStatus, and
// answers input requests (legacy: the server's requests during
// tasks/result; 2026-07-28: tasks/update). A task that has already ended
// is answered at once: its result (legacy tasks/result; 2026-07-28 the
// result tasks/get carries), or the JSON-RPC error it failed with, or an
// error wrapping tasks.ErrCancelled. WithTimeout bounds each request,
// WithMaxTotalTimeout the whole wait. Unlike CallTool, it does not cancel
// the task when ctx ends. To look at a task without waiting, use GetTask.
func (c *Client) WaitTask(ctx context.Context, id string, opts ...CallOption) (*CallToolResult, error) {
	cc := c.callConfig(opts)
	var deadline time.Time
	if cc.maxTotal > 0 {
		deadline = time.Now().Add(cc.maxTotal)
	}
	w := newTaskWaiter()
	defer c.tasks.forget(w)
	c.tasks.watchTask(w, id)
	t, err := c.GetTask(ctx, id, WithTimeout(cc.timeout))
	if err != nil {
		return nil, err
	}
	return c.awaitTask(ctx, w, t, cc, nil, deadline, false)
}

// CancelTask asks the server to cancel task id (tasks/cancel). In the
// legacy era the answer is the task, cancelled; in the 2026-07-28 era
// cancelling is cooperative and the acknowledgement empty: the Task
// returned then has only its ID.
func (c *Client) CancelTask(ctx context.Context, id string, opts ...CallOption) (*tasks.Task, error) {
	if err := checkTaskID("tasks/cancel", id); err != nil {
		return nil, err
	}
	raw, err := c.taskCall(ctx, "tasks/cancel", taskIDParams{id}, opts)
	if err != nil {
		return nil, err
	}
	return c.dialect.tasks().cancelled(id, raw)
}

// tasksPage is one page of tasks/list.
type tasksPage struct {
	Tasks      []*tasks.Task   `json:"tasks"`
	NextCursor string          `json:"nextCursor,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
}

// listTasks returns one page of the server's tasks (tasks/list), starting
// at cursor ("" for the first page).
func (c *Client) listTasks(ctx context.Context, cursor string, opts ...CallOption) (*tasksPage, error) {
	if err := c.require("tasks/list"); err != nil {
		return nil, err
	}
	var res tasksPage
	if err := c.callTyped(ctx, "tasks/list", pageParams{cursor}, &res, opts); err != nil {
		return nil, err
	}
	for i, t := range res.Tasks {
		if t == nil {
			return nil, badResult("tasks/list", fmt.Errorf("task %d is null", i))
		}
	}
	return &res, nil
}

// Tasks iterates over all the server's tasks (tasks/list), page by page
// (legacy era). An error ends the iteration as its last pair. The
// 2026-07-28 tasks extension has no tasks/list: there the one pair is an
// error wrapping ErrNotInEra.
func (c *Client) Tasks(ctx context.Context, opts ...CallOption) iter.Seq2[*tasks.Task, error] {
	return paginate(func(cursor string) ([]*tasks.Task, string, error) {
		res, err := c.listTasks(ctx, cursor, opts...)
		if err != nil {
			return nil, "", err
		}
		return res.Tasks, res.NextCursor, nil
	})
}
