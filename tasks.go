package snodo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/snodo/snodo/internal/jsoncodec"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
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

// TasksExtension is the identifier of the 2026-07-28 tasks extension.
const TasksExtension = "io.modelcontextprotocol/tasks"

// TaskStatus is the state of a task.
type TaskStatus string

// Task statuses. Completed, failed and cancelled are terminal.
const (
	TaskWorking       TaskStatus = "working"
	TaskInputRequired TaskStatus = "input_required"
	TaskCompleted     TaskStatus = "completed"
	TaskFailed        TaskStatus = "failed"
	TaskCancelled     TaskStatus = "cancelled"
)

// Terminal reports whether s is a final status: completed, failed or
// cancelled.
func (s TaskStatus) Terminal() bool {
	return s == TaskCompleted || s == TaskFailed || s == TaskCancelled
}

func (s TaskStatus) known() bool {
	return s == TaskWorking || s == TaskInputRequired || s.Terminal()
}

// Values of a tool's execution.taskSupport (legacy era). Absent means
// forbidden.
const (
	TaskSupportForbidden = "forbidden"
	TaskSupportOptional  = "optional"
	TaskSupportRequired  = "required"
)

// Bounds on what a server says about its tasks.
const (
	// maxTaskIDBytes bounds a task ID: the client sends it back with every
	// poll.
	maxTaskIDBytes = 4096
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

var (
	// ErrTaskCancelled is the cause of the error for a task that ended
	// cancelled.
	ErrTaskCancelled = errors.New("the task was cancelled")

	// ErrTaskNotFinished is the cause of the error of TaskResult for a
	// 2026-07-28 task that has not reached a terminal status.
	ErrTaskNotFinished = errors.New("the task has not finished")
)

// Task is the state of a task, as tasks/get, tasks/cancel, tasks/list, a
// status notification or the task-creating answer gave it, in either era.
type Task struct {
	TaskID        string     `json:"taskId"`
	Status        TaskStatus `json:"status"`
	StatusMessage string     `json:"statusMessage,omitempty"`
	CreatedAt     string     `json:"createdAt,omitempty"`
	LastUpdatedAt string     `json:"lastUpdatedAt,omitempty"`
	// TTLMs is how long, in milliseconds from creation, the server keeps
	// the task (legacy ttl, 2026-07-28 ttlMs); nil when absent or
	// unlimited.
	TTLMs *int64 `json:"ttlMs,omitempty"`
	// PollIntervalMs is the server's suggested wait between polls (legacy
	// pollInterval, 2026-07-28 pollIntervalMs); nil when absent.
	PollIntervalMs *int64 `json:"pollIntervalMs,omitempty"`

	// The 2026-07-28 tasks/get answer carries, by status: the input
	// requests (input_required), the result (completed), the JSON-RPC
	// error (failed).
	InputRequests json.RawMessage `json:"inputRequests,omitempty"`
	Result        json.RawMessage `json:"result,omitempty"`
	Error         *Error          `json:"error,omitempty"`

	Meta json.RawMessage `json:"_meta,omitempty"`
}

// taskWire reads a task in either era's spelling.
type taskWire struct {
	TaskID         *string         `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTL            *float64        `json:"ttl"`
	TTLMs          *float64        `json:"ttlMs"`
	PollInterval   *float64        `json:"pollInterval"`
	PollIntervalMs *float64        `json:"pollIntervalMs"`
	InputRequests  json.RawMessage `json:"inputRequests"`
	Result         json.RawMessage `json:"result"`
	Error          json.RawMessage `json:"error"`
	Meta           json.RawMessage `json:"_meta"`
}

// UnmarshalJSON implements json.Unmarshaler: it reads both eras' names
// (ttl or ttlMs, pollInterval or pollIntervalMs) and checks what the
// client relies on: a task ID (at most 4096 bytes), a known status, and
// durations that are non-negative numbers.
func (t *Task) UnmarshalJSON(data []byte) error {
	var w taskWire
	if err := unmarshal(data, &w); err != nil {
		return err
	}
	if w.TaskID == nil || *w.TaskID == "" {
		return errors.New("a task needs a taskId")
	}
	if len(*w.TaskID) > maxTaskIDBytes {
		return fmt.Errorf("a taskId of %d bytes is over the limit of %d", len(*w.TaskID), maxTaskIDBytes)
	}
	s := TaskStatus(w.Status)
	if !s.known() {
		return fmt.Errorf("task %q has an unknown status %q", *w.TaskID, w.Status)
	}
	ttl, err := millis("ttl", w.TTLMs, w.TTL)
	if err != nil {
		return err
	}
	poll, err := millis("pollInterval", w.PollIntervalMs, w.PollInterval)
	if err != nil {
		return err
	}
	*t = Task{TaskID: *w.TaskID, Status: s, StatusMessage: w.StatusMessage, CreatedAt: w.CreatedAt,
		LastUpdatedAt: w.LastUpdatedAt, TTLMs: ttl, PollIntervalMs: poll, Meta: nonNull(w.Meta),
		InputRequests: nonNull(w.InputRequests), Result: nonNull(w.Result)}
	if e := nonNull(w.Error); e != nil {
		var je Error
		if err := unmarshal(e, &je); err != nil {
			return fmt.Errorf("task %q: invalid error: %w", t.TaskID, err)
		}
		je.Kind = jsonrpc.KindServer
		t.Error = &je
	}
	return nil
}

// millis reads a duration in milliseconds from the first non-nil of vs.
func millis(name string, vs ...*float64) (*int64, error) {
	for _, v := range vs {
		if v == nil {
			continue
		}
		if *v < 0 || math.IsNaN(*v) {
			return nil, fmt.Errorf("%s must be a non-negative number of milliseconds, got %v", name, *v)
		}
		n := int64(math.MaxInt64 / int64(time.Millisecond))
		if *v < float64(n) {
			n = int64(*v)
		}
		return &n, nil
	}
	return nil, nil
}

func nonNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// PollInterval returns the server's suggested wait between polls, 0 when
// it suggested none.
func (t *Task) PollInterval() time.Duration {
	if t.PollIntervalMs == nil {
		return 0
	}
	return time.Duration(*t.PollIntervalMs) * time.Millisecond
}

// TaskSupport returns the tool's execution.taskSupport (legacy era):
// TaskSupportRequired, TaskSupportOptional, TaskSupportForbidden, or ""
// when absent (which means forbidden).
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

// taskCallConfig is the task part of one call's options.
type taskCallConfig struct {
	// handle receives the task instead of waiting for it (WithTask).
	handle *Task
	// onStatus sees each new status while the call waits (WithTaskStatus).
	onStatus func(Task)
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
// GetTask, WaitTask, TaskResult and CancelTask.
func WithTask(task *Task) CallOption {
	return func(cc *callConfig) { cc.taskConfig().handle = task }
}

// WithTaskStatus calls f, in the goroutine that made the call, with each
// status a task takes while CallTool or WaitTask waits for it (from polls
// and from the server's status notifications), once per change of status
// or status message.
func WithTaskStatus(f func(Task)) CallOption {
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

// acceptsTask reports whether result is a task handle the call takes as
// its result (2026-07-28).
func acceptsTask(cc *callConfig, result json.RawMessage) bool {
	return cc.tasks != nil && cc.tasks.accept && isTaskResult(result)
}

// ownsProgressToken reports whether the call's progress token is sent
// and routed by the task code rather than by call.
func ownsProgressToken(cc *callConfig) bool { return cc.tasks != nil && cc.tasks.ownedToken }

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

// taskState is the client's knowledge of tasks: the tools that need one,
// the waiters that status and progress notifications go to, and the
// 2026-07-28 dialect that declares the extension.
type taskState struct {
	mu      sync.Mutex
	support map[string]string      // tool name → taskSupport, from tools/list
	byTask  map[string]*taskWaiter // waiting calls, by task ID
	byToken map[string]*taskWaiter // legacy progress tokens, by their JSON

	dialectOnce sync.Once
	dialect     dialect

	capsOnce  sync.Once
	legacyCap legacyTasksCapability
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

// tasksDialect is the 2026-07-28 dialect whose client capabilities
// declare the tasks extension, for tools/call and the tasks/ methods.
func (c *Client) tasksDialect() dialect {
	c.tasks.dialectOnce.Do(func() {
		v := c.dialect.ProtocolVersion()
		caps := c.cfg.clientCapabilities(v)
		ext := `"extensions":{"` + TasksExtension + `":{}}`
		if body := objectBody(caps); len(body) > 0 {
			caps = json.RawMessage("{" + string(body) + "," + ext + "}")
		} else {
			caps = json.RawMessage("{" + ext + "}")
		}
		c.tasks.dialect = newModernDialect(v, c.cfg.clientInfo, caps)
	})
	return c.tasks.dialect
}

// taskWaiter is a call waiting for a task: status notifications for its
// task and progress for its token wake it.
type taskWaiter struct {
	wake chan struct{} // buffered 1

	mu       sync.Mutex
	status   *Task           // the newest status notification not yet seen
	progress json.RawMessage // the newest progress not yet delivered
}

func newTaskWaiter() *taskWaiter { return &taskWaiter{wake: make(chan struct{}, 1)} }

func (w *taskWaiter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// take returns what notifications left for the waiter.
func (w *taskWaiter) take() (*Task, json.RawMessage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, p := w.status, w.progress
	w.status, w.progress = nil, nil
	return s, p
}

func (ts *taskState) watchToken(w *taskWaiter, token []byte) {
	ts.mu.Lock()
	if ts.byToken == nil {
		ts.byToken = map[string]*taskWaiter{}
	}
	ts.byToken[string(token)] = w
	ts.mu.Unlock()
}

// watchTask routes the status notifications of id to w, unless another
// call waits for the same task (a server that gave one ID twice): that
// one keeps them, and w relies on polling.
func (ts *taskState) watchTask(w *taskWaiter, id string) {
	ts.mu.Lock()
	if ts.byTask == nil {
		ts.byTask = map[string]*taskWaiter{}
	}
	if _, taken := ts.byTask[id]; !taken {
		ts.byTask[id] = w
	}
	ts.mu.Unlock()
}

func (ts *taskState) forget(w *taskWaiter) {
	ts.mu.Lock()
	for k, v := range ts.byTask {
		if v == w {
			delete(ts.byTask, k)
		}
	}
	for k, v := range ts.byToken {
		if v == w {
			delete(ts.byToken, k)
		}
	}
	ts.mu.Unlock()
}

// taskNotification takes a task status notification
// (notifications/tasks/status, or notifications/tasks of 2026-07-28) or a
// progress notification for a task's token, and reports whether a waiting
// call claimed it. It runs in the transport's reader: it only records and
// signals.
func (c *Client) taskNotification(n *jsonrpc.Notification) bool {
	ts := &c.tasks
	switch n.Method {
	case "notifications/progress":
		var p struct {
			Token json.RawMessage `json:"progressToken"`
		}
		if unmarshal(n.Params, &p) != nil || len(p.Token) == 0 {
			return false
		}
		ts.mu.Lock()
		w := ts.byToken[string(bytes.TrimSpace(p.Token))]
		ts.mu.Unlock()
		if w == nil {
			return false
		}
		w.mu.Lock()
		w.progress = append(json.RawMessage(nil), n.Params...) // MCP progress is cumulative: the newest says all
		w.mu.Unlock()
		w.signal()
		return true
	case "notifications/tasks/status", "notifications/tasks":
		var t Task
		if unmarshal(n.Params, &t) != nil {
			return false
		}
		ts.mu.Lock()
		w := ts.byTask[t.TaskID]
		ts.mu.Unlock()
		if w == nil {
			return false
		}
		w.mu.Lock()
		w.status = &t
		w.mu.Unlock()
		w.signal()
		return true
	}
	return false
}

// pollTimer returns a channel that fires after d, and its stop function.
// Tests replace it.
var pollTimer = func(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// toolCallParams is tools/call's params, with the legacy task request and
// a progress token the task code routes itself.
type toolCallParams struct {
	Meta      map[string]json.RawMessage `json:"_meta,omitempty"`
	Name      string                     `json:"name"`
	Arguments any                        `json:"arguments,omitempty"`
	Task      *taskMetadata              `json:"task,omitempty"`
}

type taskMetadata struct {
	TTL *int64 `json:"ttl,omitempty"`
}

// callTool is CallTool: a plain call, or a task followed to its end.
func (c *Client) callTool(ctx context.Context, name string, arguments any, cc *callConfig) (*CallToolResult, error) {
	var handle *Task
	if cc.tasks != nil {
		handle = cc.tasks.handle
	}
	var deadline time.Time
	if cc.maxTotal > 0 {
		deadline = time.Now().Add(cc.maxTotal)
	}
	if c.Era() == EraModern {
		tcc := *cc
		tc := taskCallConfig{}
		if cc.tasks != nil {
			tc = *cc.tasks
		}
		tc.accept, tc.dialect = true, c.tasksDialect()
		tcc.tasks = &tc
		params, err := toolParams(toolCallParams{Name: name, Arguments: arguments})
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
		if handle != nil {
			*handle = *task
			return nil, nil
		}
		w := newTaskWaiter()
		defer c.tasks.forget(w)
		c.tasks.watchTask(w, task.TaskID)
		return c.awaitTask(ctx, w, task, cc, nil, deadline, true)
	}

	caps := c.tasks.capability(c.capabilities.Raw)
	support := c.toolTaskSupport(name)
	if handle != nil {
		if !caps.toolCall {
			return nil, protocolError(jsonrpc.CodeInvalidRequest, nil,
				"tool %s cannot be called as a task: the server's capabilities do not include tasks.requests.tools.call", name)
		}
		if support == TaskSupportForbidden {
			return nil, protocolError(jsonrpc.CodeInvalidRequest, nil, "tool %s forbids task execution (execution.taskSupport)", name)
		}
	}
	if handle == nil && (!caps.toolCall || support != TaskSupportRequired) {
		params, err := toolParams(toolCallParams{Name: name, Arguments: arguments})
		if err != nil {
			return nil, err
		}
		raw, err := c.callOwn(ctx, "tools/call", params, cc)
		if err == nil {
			res, err := decodeToolResult(raw)
			// Only a result without content can be a CreateTaskResult:
			// a tool's result, however large, is not scanned again.
			if err == nil && res.Content == nil && isLegacyTaskAnswer(raw) {
				return nil, protocolError(jsonrpc.CodeInternalError, nil,
					"tools/call %s: the server answered with a task, which the call did not ask for", name)
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
		c.noteRequired(name)
	}

	w := newTaskWaiter()
	defer c.tasks.forget(w)
	var onProgress transport.ProgressFunc
	params := toolCallParams{Name: name, Arguments: arguments, Task: &taskMetadata{}}
	tcc := *cc
	if handle == nil {
		if onProgress = c.progressFunc(ctx, cc); onProgress != nil {
			// The token outlives the request: the server reports the
			// task's progress with it, and the waiter delivers it.
			_, token := c.progressToken()
			params.Meta = map[string]json.RawMessage{metaProgressToken: token}
			c.tasks.watchToken(w, token)
			tc := taskCallConfig{}
			if cc.tasks != nil {
				tc = *cc.tasks
			}
			tc.ownedToken = true
			tcc.tasks = &tc
		}
	}
	body, err := toolParams(params)
	if err != nil {
		return nil, err
	}
	raw, err := c.call(ctx, "tools/call", body, &tcc)
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
	return c.awaitTask(ctx, w, task, cc, onProgress, deadline, true)
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

func toolParams(p toolCallParams) ([]byte, error) {
	if p.Meta == nil && p.Task == nil {
		if b, ok := appendToolParams(p.Name, p.Arguments); ok {
			return b, nil
		}
	}
	return marshalToolParams(p)
}

// appendToolParams encodes the params of a plain tools/call whose
// arguments are nil or a map[string]any, as marshal encodes them (with the
// arguments' keys sorted): see jsoncodec.AppendAny. It reports false for
// other arguments, or a map holding what AppendAny leaves to the codec.
func appendToolParams(name string, arguments any) ([]byte, bool) {
	if arguments != nil {
		if _, ok := arguments.(map[string]any); !ok {
			return nil, false
		}
	}
	// Encoded on the stack, then copied once to the heap at its size.
	var scratch [512]byte
	b, ok := jsoncodec.AppendAny(append(scratch[:0], `{"name":`...), name)
	if !ok {
		return nil, false // not where AppendAny encodes as the codec does
	}
	if arguments != nil {
		b = append(b, `,"arguments":`...)
		if b, ok = jsoncodec.AppendAny(b, arguments); !ok {
			return nil, false
		}
	}
	b = append(b, '}')
	return bytes.Clone(b), true
}

func marshalToolParams(p toolCallParams) ([]byte, error) {
	defer firstEncode(reflect.TypeOf(p.Arguments))()
	b, err := marshal(p)
	if err != nil {
		return nil, protocolError(jsonrpc.CodeInvalidParams, err, "invalid params for tools/call")
	}
	return b, nil
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

func decodeToolResult(raw json.RawMessage) (*CallToolResult, error) {
	if len(raw) <= maxFlatResult {
		if res := decodeFlatToolResult(raw); res != nil {
			return res, nil
		}
	}
	var res CallToolResult
	if err := unmarshal(raw, &res); err != nil {
		return nil, badResult("tools/call", err)
	}
	return &res, nil
}

// maxFlatResult bounds the results decodeFlatToolResult scans: it saves a
// decoder pass on small results, but its byte-by-byte scan is slower than
// the codec's over a large one.
const maxFlatResult = 64 << 10

// maxFlatRaw bounds the structuredContent and _meta values that
// decodeFlatToolResult validates itself; longer ones take the exact path.
const maxFlatRaw = 4096

// decodeFlatToolResult decodes the common tool result without a decoder
// pass: an object whose members are a non-empty "content" array of blocks
// decodeFlatContent takes and, optionally, "isError" as true or false,
// "resultType" as a plain string (which CallToolResult has no field for) and
// structuredContent and _meta as JSON values (not null) of at most
// maxFlatRaw bytes, kept as copies as json.RawMessage keeps them.
// It returns nil for anything else (any other member, a repeated one,
// other values, malformed input), which takes the exact path.
func decodeFlatToolResult(raw []byte) *CallToolResult {
	// One allocation for the result and its first content block, the
	// common case.
	box := new(struct {
		res CallToolResult
		one [1]Content
	})
	res := &box.res
	seenContent, seenIsError := false, false
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil
	}
	i = skipWS(raw, i+1)
	for {
		key, next, ok := plainString(raw, i)
		if !ok {
			return nil
		}
		i = skipWS(raw, next)
		if i >= len(raw) || raw[i] != ':' {
			return nil
		}
		i = skipWS(raw, i+1)
		switch string(key) {
		case "content":
			if seenContent || i >= len(raw) || raw[i] != '[' {
				return nil
			}
			seenContent = true
			i = skipWS(raw, i+1)
			for {
				end := flatObjectEnd(raw, i)
				if end < 0 {
					return nil
				}
				c := &box.one[0]
				if len(res.Content) > 0 {
					c = new(Content)
				}
				if !decodeFlatContent(raw[i:end], c) {
					return nil
				}
				if len(res.Content) == 0 {
					res.Content = box.one[:1:1]
				} else {
					res.Content = append(res.Content, *c)
				}
				i = skipWS(raw, end)
				if i >= len(raw) {
					return nil
				}
				if raw[i] == ']' {
					i++
					break
				}
				if raw[i] != ',' {
					return nil
				}
				i = skipWS(raw, i+1)
			}
		case "resultType":
			// Not a member of CallToolResult (call has read it).
			_, next, ok := plainString(raw, i)
			if !ok {
				return nil
			}
			i = next
		case "structuredContent", "_meta":
			dst := &res.StructuredContent
			if key[0] == '_' {
				dst = &res.Meta
			}
			end := valueEnd(raw, i)
			if *dst != nil || end < 0 || end-i > maxFlatRaw || raw[i] == 'n' || !json.Valid(raw[i:end]) {
				return nil
			}
			*dst = bytes.Clone(raw[i:end])
			i = end
		case "isError":
			if seenIsError {
				return nil
			}
			seenIsError = true
			switch {
			case bytes.HasPrefix(raw[i:], []byte("true")):
				res.IsError, i = true, i+4
			case bytes.HasPrefix(raw[i:], []byte("false")):
				i += 5
			default:
				return nil
			}
		default:
			return nil
		}
		i = skipWS(raw, i)
		if i >= len(raw) {
			return nil
		}
		if raw[i] == '}' {
			if !seenContent || skipWS(raw, i+1) != len(raw) {
				return nil
			}
			return res
		}
		if raw[i] != ',' {
			return nil
		}
		i = skipWS(raw, i+1)
	}
}

// valueEnd returns the index just past the JSON value at data[i:], found
// by brackets and quotes only (the caller validates it), or -1.
func valueEnd(data []byte, i int) int {
	depth := 0
	for j := i; j < len(data); j++ {
		switch data[j] {
		case '"':
			for j++; j < len(data) && data[j] != '"'; j++ {
				if data[j] == '\\' {
					j++
				}
			}
			if j >= len(data) {
				return -1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j
			}
			depth--
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return j
			}
		}
		if depth == 0 && (data[j] == '}' || data[j] == ']' || data[j] == '"') {
			return j + 1
		}
	}
	return -1
}

// flatObjectEnd returns the index just past the object at data[i:] when
// it holds no nested object or array and no escape (what
// decodeFlatContent can take), or -1.
func flatObjectEnd(data []byte, i int) int {
	if i >= len(data) || data[i] != '{' {
		return -1
	}
	inString := false
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '"':
			inString = !inString
		case '\\':
			return -1
		case '{', '[', ']':
			if !inString {
				return -1
			}
		case '}':
			if !inString {
				return j + 1
			}
		}
	}
	return -1
}

func decodeTask(method string, raw json.RawMessage) (*Task, error) {
	var t Task
	if err := unmarshal(raw, &t); err != nil {
		return nil, badResult(method, err)
	}
	return &t, nil
}

// awaitTask follows task until it ends and returns its result. The total
// deadline, when set, bounds the whole wait; with cancelOnStop, a wait that
// ends before the task (the caller's ctx, the deadline, an error) sends
// tasks/cancel.
func (c *Client) awaitTask(ctx context.Context, w *taskWaiter, task *Task, cc *callConfig, onProgress transport.ProgressFunc, deadline time.Time, cancelOnStop bool) (*CallToolResult, error) {
	parent := ctx
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, deadline, transport.MaxTotalTimeoutError(cc.maxTotal))
		defer cancel()
	}
	last := task
	res, err := c.followTask(ctx, w, task, cc, onProgress, deadline, &last)
	if err == nil {
		return res, nil
	}
	if ctx.Err() != nil && parent.Err() == nil {
		// The total deadline passed.
		err = context.Cause(ctx)
	}
	if cancelOnStop && !last.Status.Terminal() && c.life.Err() == nil {
		c.cancelAbandoned(parent, task.TaskID, cc)
	}
	return nil, err
}

// cancelAbandoned tells the server that nobody waits for the task any
// more; its failure is of no use to anyone.
func (c *Client) cancelAbandoned(ctx context.Context, id string, cc *callConfig) {
	if c.Era() != EraModern && !c.tasks.capability(c.capabilities.Raw).cancel {
		return
	}
	wait := maxCancelWait
	if cc.timeout > 0 && cc.timeout < wait {
		wait = cc.timeout
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
	defer cancel()
	stop := context.AfterFunc(c.life, cancel)
	defer stop()
	_, _ = c.CancelTask(ctx, id, WithTimeout(wait))
}

// followTask polls task to its end. *last is the newest status seen.
func (c *Client) followTask(ctx context.Context, w *taskWaiter, task *Task, cc *callConfig, onProgress transport.ProgressFunc, deadline time.Time, last **Task) (*CallToolResult, error) {
	var onStatus func(Task)
	var configured time.Duration
	if cc.tasks != nil {
		onStatus, configured = cc.tasks.onStatus, cc.tasks.pollInterval
	}
	var shown *Task
	report := func(t *Task) {
		*last = t
		if onStatus != nil && (shown == nil || shown.Status != t.Status || shown.StatusMessage != t.StatusMessage) {
			shown = t
			onStatus(*t)
		}
	}
	id := task.TaskID
	answered := map[string]bool{}
	rounds := 0
	polled := time.Now() // the newest answer about the task
	for {
		report(task)
		pollNow := false
		switch {
		case task.Status == TaskCancelled:
			return nil, taskCancelledError(task)
		case c.Era() == EraModern && task.Status.Terminal():
			return modernOutcome(task)
		case task.Status.Terminal():
			return c.legacyTaskResult(ctx, id, cc)
		case task.Status == TaskInputRequired && c.Era() == EraModern:
			n, err := c.updateTask(ctx, task, cc, deadline, answered)
			if err != nil {
				return nil, err
			}
			if n > 0 {
				if rounds++; rounds > c.cfg.maxRounds {
					return nil, protocolError(jsonrpc.CodeInternalError, ErrTooManyRounds,
						"task %s still asks for input after %d rounds", id, c.cfg.maxRounds)
				}
			}
		case task.Status == TaskInputRequired:
			// The server sends its requests on the connection while the
			// client waits on tasks/result, which ends with the task.
			res, err := c.legacyTaskResult(ctx, id, cc)
			if err == nil || !errors.Is(err, ErrTimeout) || ctx.Err() != nil {
				return res, err
			}
			// tasks/result outlived the call's timeout: poll again.
			pollNow = true
		}
		if !pollNow {
			if err := c.pauseTask(ctx, w, task, configured, polled, onProgress, report); err != nil {
				return nil, err
			}
		}
		next, err := c.GetTask(ctx, id, WithTimeout(cc.timeout))
		if err != nil {
			return nil, err
		}
		task, polled = next, time.Now()
	}
}

// pauseTask waits before the next poll: the interval the server suggests
// (bounded), or less when a status notification says the task finished or
// needs input — but never less than minPollInterval after the last poll
// (polled), however often the server says so. It delivers progress and
// reports notified statuses on the way, in the caller's goroutine.
func (c *Client) pauseTask(ctx context.Context, w *taskWaiter, task *Task, configured time.Duration, polled time.Time, onProgress transport.ProgressFunc, report func(*Task)) error {
	d := task.PollInterval()
	if task.PollIntervalMs == nil {
		d = defaultPollInterval
		if configured > 0 {
			d = configured
		}
	}
	d = min(max(d, minPollInterval), maxPollInterval)
	fired, stop := pollTimer(d)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return callEndError(ctx, context.Cause(ctx))
		case <-c.life.Done():
			return callEndError(ctx, context.Cause(c.life))
		case <-fired:
			return nil
		case <-w.wake:
			status, progress := w.take()
			if progress != nil && onProgress != nil {
				if err := deliverProgress(onProgress, progress); err != nil {
					return err
				}
			}
			if status != nil && status.TaskID == task.TaskID {
				if status.Status.Terminal() || status.Status == TaskInputRequired {
					// Poll now, for the result or the requests.
					return c.pollFloor(ctx, polled)
				}
				report(status)
			}
		}
	}
}

// pollFloor waits until minPollInterval has passed since polled.
func (c *Client) pollFloor(ctx context.Context, polled time.Time) error {
	wait := minPollInterval - time.Since(polled)
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return callEndError(ctx, context.Cause(ctx))
	case <-c.life.Done():
		return callEndError(ctx, context.Cause(c.life))
	case <-t.C:
		return nil
	}
}

// deliverProgress runs the call's progress function; its error or panic
// ends the wait, as it ends a request.
func deliverProgress(f transport.ProgressFunc, params json.RawMessage) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("progress function panicked: %v", p)}
		}
	}()
	if err := f(params); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return err
		}
		return &Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError, Message: "progress function failed", Cause: err}
	}
	return nil
}

// updateTask answers the input requests of a 2026-07-28 input_required
// task that have not been answered yet, with tasks/update, and returns how
// many it answered.
func (c *Client) updateTask(ctx context.Context, task *Task, cc *callConfig, deadline time.Time, answered map[string]bool) (int, error) {
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
func modernOutcome(t *Task) (*CallToolResult, error) {
	switch t.Status {
	case TaskCompleted:
		if t.Result == nil {
			return nil, protocolError(jsonrpc.CodeInternalError, nil, "task %s completed without a result", t.TaskID)
		}
		return decodeToolResult(t.Result)
	case TaskFailed:
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

func taskCancelledError(t *Task) *Error {
	msg := fmt.Sprintf("task %s was cancelled", t.TaskID)
	if t.StatusMessage != "" {
		msg += ": " + t.StatusMessage
	}
	return &Error{Kind: jsonrpc.KindServer, Code: jsonrpc.CodeInternalError, Message: msg, Cause: ErrTaskCancelled}
}

// taskRequestConfig is the call configuration of a tasks/ request: the
// given timeout, and in the 2026-07-28 era the dialect that declares the
// extension (servers refuse the tasks/ methods to clients that do not).
func (c *Client) taskRequestConfig(timeout time.Duration) *callConfig {
	cc := &callConfig{timeout: timeout}
	if c.Era() == EraModern {
		cc.tasks = &taskCallConfig{dialect: c.tasksDialect()}
	}
	return cc
}

type taskIDParams struct {
	TaskID string `json:"taskId"`
}

func checkTaskID(method, id string) error {
	if id == "" {
		return protocolError(jsonrpc.CodeInvalidParams, nil, "%s needs a task ID", method)
	}
	if len(id) > maxTaskIDBytes {
		return protocolError(jsonrpc.CodeInvalidParams, nil, "%s: a task ID of %d bytes is over the limit of %d", method, len(id), maxTaskIDBytes)
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
	if c.Era() == EraModern {
		cc.taskConfig().dialect = c.tasksDialect()
	}
	return c.call(ctx, method, b, cc)
}

// GetTask returns the task id's state (tasks/get). In the 2026-07-28 era
// it carries the input requests, the result or the error, by status. An
// answer about another task is an error.
func (c *Client) GetTask(ctx context.Context, id string, opts ...CallOption) (*Task, error) {
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

// TaskResult returns the result of the tool call that task id runs. In the
// legacy era it is tasks/result, which the server answers once the task
// has ended (the server's requests of an input_required task arrive
// meanwhile and go to the handlers); a task that failed with a JSON-RPC
// error returns that error. In the 2026-07-28 era it is the result carried
// by tasks/get; a task that has not finished is an error wrapping
// ErrTaskNotFinished (WaitTask waits for it).
func (c *Client) TaskResult(ctx context.Context, id string, opts ...CallOption) (*CallToolResult, error) {
	if c.Era() != EraModern {
		if err := checkTaskID("tasks/result", id); err != nil {
			return nil, err
		}
		return c.legacyTaskResult(ctx, id, c.callConfig(opts))
	}
	t, err := c.GetTask(ctx, id, opts...)
	if err != nil {
		return nil, err
	}
	if !t.Status.Terminal() {
		return nil, protocolError(jsonrpc.CodeInvalidRequest, ErrTaskNotFinished, "task %s is %s", id, t.Status)
	}
	return modernOutcome(t)
}

func (c *Client) legacyTaskResult(ctx context.Context, id string, cc *callConfig) (*CallToolResult, error) {
	raw, err := c.taskCall(ctx, "tasks/result", taskIDParams{id}, []CallOption{WithTimeout(cc.timeout)})
	if err != nil {
		return nil, err
	}
	return decodeToolResult(raw)
}

// WaitTask follows task id until it ends and returns its result, as
// CallTool does for a task it started: it polls tasks/get at the
// server's interval (bounded, see WithPollInterval), wakes at status
// notifications, reports statuses to WithTaskStatus, and answers input
// requests (legacy: the server's requests during tasks/result; 2026-07-28:
// tasks/update). WithTimeout bounds each request, WithMaxTotalTimeout the
// whole wait. Unlike CallTool, it does not cancel the task when ctx ends.
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
func (c *Client) CancelTask(ctx context.Context, id string, opts ...CallOption) (*Task, error) {
	if err := checkTaskID("tasks/cancel", id); err != nil {
		return nil, err
	}
	raw, err := c.taskCall(ctx, "tasks/cancel", taskIDParams{id}, opts)
	if err != nil {
		return nil, err
	}
	if c.Era() == EraModern {
		return &Task{TaskID: id}, nil
	}
	return decodeTask("tasks/cancel", raw)
}

// ListTasksResult is one page of tasks/list.
type ListTasksResult struct {
	Tasks      []*Task         `json:"tasks"`
	NextCursor string          `json:"nextCursor,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
}

// ListTasks returns one page of the server's tasks (tasks/list), starting
// at cursor ("" for the first page). The 2026-07-28 tasks extension has no
// tasks/list: there it is an error wrapping ErrNotInEra.
func (c *Client) ListTasks(ctx context.Context, cursor string, opts ...CallOption) (*ListTasksResult, error) {
	if c.Era() == EraModern {
		return nil, notInEra("tasks/list", EraModern)
	}
	var res ListTasksResult
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

// Tasks iterates over all the server's tasks, page by page (legacy era).
// An error ends the iteration as its last pair.
func (c *Client) Tasks(ctx context.Context, opts ...CallOption) iter.Seq2[*Task, error] {
	return paginate(func(cursor string) ([]*Task, string, error) {
		res, err := c.ListTasks(ctx, cursor, opts...)
		if err != nil {
			return nil, "", err
		}
		return res.Tasks, res.NextCursor, nil
	})
}

// tasksExtension is the 2026-07-28 tasks extension as a transport sees it
// (a transport.PolicySource): over Streamable HTTP, tasks/get, tasks/update and
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

// extensionFor returns the extension that routes method over a transport
// with headers in the 2026-07-28 era, or nil.
func (c *Client) extensionFor(method string, d dialect) transport.PolicySource {
	if !c.headers || d.Era() != EraModern || !strings.HasPrefix(method, "tasks/") {
		return nil
	}
	return tasksExtension{}
}

// argsEncoded holds, for each type of tool arguments toolParams has met, a
// channel closed when its first encode is done.
var argsEncoded sync.Map // reflect.Type → chan struct{}

// firstEncode makes the first encode of tool arguments of type t run alone:
// it waits while another caller's first encode of t is under way, and
// returns the function that ends the caller's own. Sonic generates the
// code for each type it meets (the arguments' type, and the types of what
// they hold) under a lock, and an encode takes a 128 KiB stack from sonic's
// pool before waiting for that lock: callers that meet a new type together
// each held a stack, 64 callers' first tools/call at once 8 MiB of them.
func firstEncode(t reflect.Type) (done func()) {
	if v, ok := argsEncoded.Load(t); ok {
		<-v.(chan struct{})
		return func() {}
	}
	ch := make(chan struct{})
	if v, loaded := argsEncoded.LoadOrStore(t, ch); loaded {
		<-v.(chan struct{})
		return func() {}
	}
	return func() { close(ch) }
}
