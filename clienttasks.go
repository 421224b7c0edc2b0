package snodo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/tasks"
	"github.com/snodo/snodo/transport"
)

// Client-side tasks: the server asks the client to run an elicitation or a
// sampling request as a task (2025-11-25, experimental; see the
// specification's basic/utilities/tasks.mdx).
//
// On a 2025-11-25 connection the client declares
// capabilities.tasks.requests.elicitation.create when it answers
// elicitations, .sampling.createMessage when it answers sampling, and with
// either tasks.list and tasks.cancel. A server request of such a method
// with params.task is admitted as any other server request (the one gate of
// Options.MaxServerRequests, the one recovery of runHandler), answered at once
// with a CreateTaskResult, and its handler, native or Wasm, runs in the
// background until it ends, the server cancels the task, its ttl passes or
// the client closes. The server then polls the client
// with tasks/get, fetches the result with tasks/result (answered when the
// task ends, without holding a goroutine), lists with tasks/list and
// cancels with tasks/cancel. The client sends notifications/tasks/status
// when a task completes or fails.
//
// Everything a server can make the client keep is bounded: at most
// maxClientTasks tasks are kept at once (running and finished), each for
// its ttl clamped to [minClientTaskTTL, maxClientTaskTTL] (a task whose ttl
// passes is cancelled if still running and dropped with its result), at
// most maxTaskWaiters tasks/result requests wait on one task, the results
// kept weigh at most maxClientTaskBytes in all, and a tasks/list page
// holds at most clientTaskPage tasks. Task IDs are 128 random bits from
// crypto/rand. The tasks end at Close.
//
// Other versions declare nothing and answer such requests normally,
// ignoring params.task, as the specification requires. The 2026-07-28 era
// has no server-to-client requests: its tasks extension
// (io.modelcontextprotocol/tasks) is for the client's tools/call only
// (tasks.go), and input requests travel in input_required results.

// Bounds of the client's tasks.
const (
	// maxClientTasks bounds the tasks the client keeps, running and
	// finished.
	maxClientTasks = 256
	// maxClientTaskTTL is the longest a task is kept, whatever the server
	// asks; it is also the ttl of a task whose server asks none.
	maxClientTaskTTL = time.Hour
	// minClientTaskTTL is the shortest: a task dropped before the server
	// can poll it is of no use.
	minClientTaskTTL = time.Second
	// maxTaskWaiters bounds the tasks/result requests waiting on one task.
	maxTaskWaiters = 8
	// clientTaskPage is the size of a tasks/list page.
	clientTaskPage = 64
	// clientTaskPollMs is the poll interval the client suggests.
	clientTaskPollMs = 500
	// taskNotifyTimeout bounds the sending of a status notification.
	taskNotifyTimeout = 5 * time.Second
)

// maxClientTaskBytes bounds the bytes of the results the client keeps for
// its tasks, all together: a handler may echo what the server sent (a
// sampling module repeating the prompt), so that 256 results of a
// line's size would otherwise be gigabytes. A variable for tests.
var maxClientTaskBytes = 64 << 20

// metaRelatedTask is the _meta key that ties a message to its task.
const metaRelatedTask = "io.modelcontextprotocol/related-task"

// clientTasks is the client's store of tasks run for the server.
type clientTasks struct {
	mu    sync.Mutex
	byID  map[string]*clientTask
	seq   uint64
	bytes int // of the results kept
	// maxBytes is maxClientTaskBytes when the store began.
	maxBytes int
	closed   bool
}

// clientTask is one task the server asked the client to run.
type clientTask struct {
	id        string
	seq       uint64 // creation order, for tasks/list
	method    string
	status    tasks.Status
	message   string
	createdAt time.Time
	updatedAt time.Time
	ttl       time.Duration
	// result (with the related-task _meta) or err, once terminal.
	result  json.RawMessage
	err     error
	size    int  // of the outcome, counted in clientTasks.bytes
	fetched bool // a tasks/result was answered with the outcome
	cancel  context.CancelCauseFunc
	expire  *time.Timer
	waiters []transport.ReplyFunc
}

// clientTaskWire is a task as the 2025-11-25 schema spells it.
type clientTaskWire struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           int64  `json:"ttl"`
	PollInterval  int64  `json:"pollInterval"`
}

const taskTimeFormat = "2006-01-02T15:04:05.000Z07:00"

func (t *clientTask) wire() clientTaskWire {
	return clientTaskWire{
		TaskID: t.id, Status: string(t.status), StatusMessage: t.message,
		CreatedAt:     t.createdAt.UTC().Format(taskTimeFormat),
		LastUpdatedAt: t.updatedAt.UTC().Format(taskTimeFormat),
		TTL:           t.ttl.Milliseconds(), PollInterval: clientTaskPollMs,
	}
}

// clientTasksDeclared reports whether the client declares task-augmented
// requests of method on this connection: a 2025-11-25 connection and a
// handler for the method.
func (c *Client) clientTasksDeclared(method string) bool {
	if c.dialect == nil || c.dialect.ProtocolVersion() != version20251125 {
		return false
	}
	return c.cfg.clientTaskMethod(method)
}

// clientTaskMethod reports whether the configured handlers answer method
// as a task: elicitation in a mode the client declares, sampling.
func (c *config) clientTaskMethod(method string) bool {
	switch method {
	case abi.MethodElicitationCreate:
		return c.declaresFormElicitation() || c.declaresURLElicitation()
	case abi.MethodSamplingCreate:
		_, ok := c.handlers[abi.MethodSamplingCreate]
		return ok
	}
	return false
}

// clientTasksCapability returns the value of capabilities.tasks for
// version, or "" when the client declares none.
func (c *config) clientTasksCapability(version string) string {
	if version != version20251125 {
		return ""
	}
	var reqs []string
	if c.clientTaskMethod(abi.MethodElicitationCreate) {
		reqs = append(reqs, `"elicitation":{"create":{}}`)
	}
	if c.clientTaskMethod(abi.MethodSamplingCreate) {
		reqs = append(reqs, `"sampling":{"createMessage":{}}`)
	}
	if len(reqs) == 0 {
		return ""
	}
	return `{"list":{},"cancel":{},"requests":{` + joinComma(reqs) + `}}`
}

// clientTaskRequest answers the server requests of client-side tasks: a
// task-augmented elicitation or sampling request the client declared, and
// tasks/get, tasks/result, tasks/list and tasks/cancel once it declares
// any. It never blocks: a tasks/result on a running task is answered when
// the task ends. It reports false for any other request, which takes the
// ordinary path.
func (c *Client) clientTaskRequest(ctx context.Context, req *jsonrpc.Request, reply transport.ReplyFunc) bool {
	switch req.Method {
	case abi.MethodElicitationCreate, abi.MethodSamplingCreate:
		if !mayHaveTask(req.Params) || !c.clientTasksDeclared(req.Method) {
			return false
		}
		ttl, ok, err := taskParam(req.Params)
		if !ok {
			return false
		}
		if err != nil {
			reply(nil, err)
			return true
		}
		c.createClientTask(ctx, req, ttl, reply)
		return true
	case "tasks/get", "tasks/result", "tasks/cancel", "tasks/list":
		if !c.clientTasksDeclared(abi.MethodElicitationCreate) && !c.clientTasksDeclared(abi.MethodSamplingCreate) {
			return false
		}
	default:
		return false
	}
	if req.Method == "tasks/list" {
		reply(c.ctasks.list(req.Params))
		return true
	}
	var p struct {
		TaskID *string `json:"taskId"`
	}
	if err := unmarshal(req.Params, &p); err != nil || p.TaskID == nil {
		reply(nil, protocolError(jsonrpc.CodeInvalidParams, err, "%s needs params.taskId, the string ID of a task the client created", req.Method))
		return true
	}
	switch req.Method {
	case "tasks/get":
		reply(c.ctasks.get(*p.TaskID))
	case "tasks/cancel":
		reply(c.ctasks.cancelTask(*p.TaskID))
	case "tasks/result":
		c.ctasks.result(*p.TaskID, reply)
	}
	return true
}

// mayHaveTask reports whether params may have a member "task": it has
// that string, or a \u escape that could spell it. Most requests have
// neither and are not decoded twice.
func mayHaveTask(params json.RawMessage) bool {
	return bytes.Contains(params, []byte(`"task"`)) || bytes.Contains(params, []byte(`\u`))
}

// taskParam reads params.task: ok when present (and not null), with the
// ttl the client grants, or an error saying what is wrong with it.
func taskParam(params json.RawMessage) (ttl time.Duration, ok bool, err error) {
	var p struct {
		Task json.RawMessage `json:"task"`
	}
	if unmarshal(params, &p) != nil || len(p.Task) == 0 || string(p.Task) == "null" {
		// Not an object, or no task: the ordinary path answers it.
		return 0, false, nil
	}
	var t struct {
		TTL *float64 `json:"ttl"`
	}
	if err := unmarshal(p.Task, &t); err != nil {
		return 0, true, protocolError(jsonrpc.CodeInvalidParams, err,
			"params.task must be an object with an optional ttl, a number of milliseconds")
	}
	if t.TTL == nil {
		return maxClientTaskTTL, true, nil
	}
	if math.IsNaN(*t.TTL) || *t.TTL < 0 {
		return 0, true, protocolError(jsonrpc.CodeInvalidParams, nil,
			"params.task.ttl must be a non-negative number of milliseconds, not %v", *t.TTL)
	}
	ms := *t.TTL
	switch {
	case ms >= float64(maxClientTaskTTL.Milliseconds()):
		return maxClientTaskTTL, true, nil
	case ms <= float64(minClientTaskTTL.Milliseconds()):
		return minClientTaskTTL, true, nil
	}
	return time.Duration(ms) * time.Millisecond, true, nil
}

// createClientTask admits req as the ordinary path does, keeps a task for
// it, answers the CreateTaskResult and runs the handler in the background.
//
// The handler gets the request without params.task: running it as a task
// is the client's business, and a handler that passes the request on (the
// proxy's, to its host) must not ask for a task in turn. Its context keeps
// the values of the request's (such as the call it relates to over HTTP)
// but not its end, which comes when the request is answered: it ends with
// tasks/cancel, the ttl, Close and the connection.
func (c *Client) createClientTask(reqCtx context.Context, req *jsonrpc.Request, ttl time.Duration, reply transport.ReplyFunc) {
	h, res, err := c.admit(req)
	if h == nil {
		reply(res, err)
		return
	}
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(reqCtx))
	stop := context.AfterFunc(c.life, func() { cancel(context.Cause(c.life)) })
	t, err := c.ctasks.add(c, req.Method, ttl, cancel)
	if err != nil {
		stop()
		cancel(err)
		c.gate.Release()
		reply(nil, err)
		return
	}
	reply(json.RawMessage(mustMarshal(struct {
		Task clientTaskWire `json:"task"`
	}{t})), nil)
	go c.runClientTask(ctx, cancel, stop, t.TaskID, h, req.Method, req.Params)
}

// withoutTask returns params without its task member. params is an object
// (taskParam decoded it).
func withoutTask(params json.RawMessage) json.RawMessage {
	var members map[string]json.RawMessage
	if unmarshal(params, &members) != nil {
		return params
	}
	delete(members, "task")
	return mustMarshal(members)
}

// runClientTask runs the task's handler holding the gate's slot, and
// records its outcome.
func (c *Client) runClientTask(ctx context.Context, cancel context.CancelCauseFunc, stop func() bool, id string, h Handler, method string, params json.RawMessage) {
	defer cancel(nil)
	defer stop()
	res, err := func() (json.RawMessage, error) {
		defer c.gate.Release()
		return runHandler(ctx, h, method, withoutTask(params))
	}()
	if err == nil {
		res, err = withRelatedTask(res, id, method)
	}
	if t, ok := c.ctasks.finish(id, res, err); ok {
		c.notifyTaskStatus(t)
	}
}

// notifyTaskStatus sends notifications/tasks/status with the task's state.
func (c *Client) notifyTaskStatus(t clientTaskWire) {
	n, ok := c.t.(transport.Notifier)
	if !ok || c.life.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(c.life, taskNotifyTimeout)
	defer cancel()
	_ = n.Notify(ctx, &jsonrpc.Notification{Method: "notifications/tasks/status", Params: mustMarshal(t)},
		transport.NotifyOptions{Timeout: taskNotifyTimeout, Dialect: c.dialect, Headers: c.messageHeaders("notifications/tasks/status", nil)})
}

// withRelatedTask adds the related-task _meta to a handler's result, which
// must be a JSON object.
func withRelatedTask(res json.RawMessage, id, method string) (json.RawMessage, error) {
	var members map[string]json.RawMessage
	if err := unmarshal(res, &members); err != nil || members == nil {
		return nil, &Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("handler for %s returned a result that is not a JSON object", method)}
	}
	var meta map[string]json.RawMessage
	if m, ok := members["_meta"]; ok {
		if err := unmarshal(m, &meta); err != nil {
			return nil, &Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("handler for %s returned a _meta that is not a JSON object", method)}
		}
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	meta[metaRelatedTask] = mustMarshal(map[string]string{"taskId": id})
	members["_meta"] = mustMarshal(meta)
	return mustMarshal(members), nil
}

// newTaskID returns 128 random bits, in hex.
func newTaskID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// add keeps a new working task, making room by dropping the oldest task
// whose outcome the server has fetched or that it cancelled, and failing
// when every one of the maxClientTasks is still of use.
func (s *clientTasks) add(c *Client, method string, ttl time.Duration, cancel context.CancelCauseFunc) (clientTaskWire, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || c.life.Err() != nil {
		return clientTaskWire{}, transport.ConnectionError("client closed", ErrClientClosed)
	}
	if s.byID == nil {
		s.byID = map[string]*clientTask{}
		s.maxBytes = maxClientTaskBytes
		context.AfterFunc(c.life, s.close)
	}
	if len(s.byID) >= maxClientTasks && !s.dropSpentLocked(nil) {
		return clientTaskWire{}, &Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("too many tasks kept by the client (limit %d): fetch their results with tasks/result, cancel them with tasks/cancel, or wait for their ttl", maxClientTasks)}
	}
	now := time.Now()
	s.seq++
	t := &clientTask{id: newTaskID(), seq: s.seq, method: method, status: tasks.Working,
		createdAt: now, updatedAt: now, ttl: ttl, cancel: cancel}
	for s.byID[t.id] != nil {
		t.id = newTaskID()
	}
	s.byID[t.id] = t
	t.expire = time.AfterFunc(ttl, func() { s.expire(t) })
	return t.wire(), nil
}

// errTaskExpired is the cause of a task dropped at its ttl.
var errTaskExpired = errors.New("the task's ttl has passed")

// expire drops t at the end of its ttl, cancelling its handler if it is
// still running; tasks/result requests still waiting are told.
func (s *clientTasks) expire(t *clientTask) {
	s.mu.Lock()
	if s.byID[t.id] != t {
		s.mu.Unlock()
		return
	}
	s.dropLocked(t)
	waiters := t.waiters
	t.waiters = nil
	s.mu.Unlock()
	t.cancel(errTaskExpired)
	err := protocolError(jsonrpc.CodeInvalidParams, errTaskExpired, "Failed to retrieve task: Task has expired (ttl %d ms)", t.ttl.Milliseconds())
	for _, w := range waiters {
		w(nil, err)
	}
}

func (s *clientTasks) dropLocked(t *clientTask) {
	delete(s.byID, t.id)
	s.bytes -= t.size
	t.expire.Stop()
}

// dropSpentLocked drops the oldest task other than keep whose outcome the
// server has fetched or that it cancelled, and reports whether there was
// one.
func (s *clientTasks) dropSpentLocked(keep *clientTask) bool {
	var oldest *clientTask
	for _, t := range s.byID {
		if t != keep && (t.fetched || t.status == tasks.Cancelled) && (oldest == nil || t.seq < oldest.seq) {
			oldest = t
		}
	}
	if oldest == nil {
		return false
	}
	s.dropLocked(oldest)
	return true
}

// close ends every task, at Close or when the connection stops: handlers
// are cancelled (their clientTasks context derives from the client's life),
// timers stopped, the store emptied; waiting tasks/result requests are not
// answered (there is no connection to answer on).
func (s *clientTasks) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, t := range s.byID {
		s.dropLocked(t)
		t.waiters = nil
	}
}

// finish records a handler's outcome, unless the task was cancelled or
// dropped meanwhile, answers the waiting tasks/result requests, and
// returns the task's state for the status notification.
func (s *clientTasks) finish(id string, res json.RawMessage, err error) (clientTaskWire, bool) {
	s.mu.Lock()
	t := s.byID[id]
	if t == nil || t.status.Terminal() {
		s.mu.Unlock()
		return clientTaskWire{}, false
	}
	t.updatedAt = time.Now()
	size := outcomeSize(res, err)
	for s.bytes+size > s.maxBytes {
		if !s.dropSpentLocked(t) {
			res, err = nil, &Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("the handler's outcome of %d bytes does not fit in the client's task results (limit %d bytes in all): fetch the results of earlier tasks with tasks/result, or cancel them", size, s.maxBytes)}
			size = outcomeSize(nil, err)
			break
		}
	}
	t.result, t.err, t.size = res, err, size
	s.bytes += size
	if err != nil {
		t.status, t.message = tasks.Failed, truncateText(err.Error(), maxStatusMessage)
	} else {
		t.status = tasks.Completed
	}
	waiters := t.waiters
	t.waiters = nil
	if len(waiters) > 0 {
		t.fetched = true
	}
	w := t.wire()
	s.mu.Unlock()
	for _, reply := range waiters {
		reply(res, err)
	}
	return w, true
}

// maxStatusMessage bounds the statusMessage of a failed task (the error's
// text); tasks/result has the whole error.
const maxStatusMessage = 1024

// outcomeSize is what a task's outcome costs to keep: the result's bytes,
// or the error's message and data.
func outcomeSize(res json.RawMessage, err error) int {
	if err == nil {
		return len(res)
	}
	if e, ok := err.(*Error); ok {
		return len(e.Message) + len(e.Data) + maxStatusMessage
	}
	return 2*len(err.Error()) + maxStatusMessage
}

// truncateText cuts s to at most n bytes, on a rune boundary, marking the
// cut.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// notFound is the error for a task ID the client does not keep.
func notFound(method, id string) *Error {
	return protocolError(jsonrpc.CodeInvalidParams, nil,
		"%s: Failed to retrieve task: Task not found (%.64q is not a task the client keeps: unknown, expired or dropped)", method, id)
}

func (s *clientTasks) get(id string) (json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.byID[id]
	if t == nil {
		return nil, notFound("tasks/get", id)
	}
	return mustMarshal(t.wire()), nil
}

// errTaskCancelledByServer is the cause given to a handler cancelled by
// tasks/cancel.
var errTaskCancelledByServer = errors.New("the server cancelled the task (tasks/cancel)")

func (s *clientTasks) cancelTask(id string) (json.RawMessage, error) {
	s.mu.Lock()
	t := s.byID[id]
	if t == nil {
		s.mu.Unlock()
		return nil, notFound("tasks/cancel", id)
	}
	if t.status.Terminal() {
		s.mu.Unlock()
		return nil, protocolError(jsonrpc.CodeInvalidParams, nil, "Cannot cancel task: already in terminal status '%s'", t.status)
	}
	t.status, t.message, t.updatedAt = tasks.Cancelled, "The task was cancelled by request.", time.Now()
	waiters := t.waiters
	t.waiters = nil
	w := t.wire()
	s.mu.Unlock()
	t.cancel(errTaskCancelledByServer)
	for _, reply := range waiters {
		reply(nil, cancelledResult(id))
	}
	return mustMarshal(w), nil
}

// cancelledResult is the answer of tasks/result for a cancelled task,
// which has no result.
func cancelledResult(id string) *Error {
	return &Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("task %s was cancelled (tasks/cancel) before it finished: it has no result", id)}
}

// result answers tasks/result: at once for a terminal task, or when it
// ends.
func (s *clientTasks) result(id string, reply transport.ReplyFunc) {
	s.mu.Lock()
	t := s.byID[id]
	switch {
	case t == nil:
		s.mu.Unlock()
		reply(nil, notFound("tasks/result", id))
		return
	case t.status == tasks.Cancelled:
		s.mu.Unlock()
		reply(nil, cancelledResult(id))
		return
	case t.status.Terminal():
		t.fetched = true
		res, err := t.result, t.err
		s.mu.Unlock()
		reply(res, err)
		return
	case len(t.waiters) >= maxTaskWaiters:
		s.mu.Unlock()
		reply(nil, &Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("too many tasks/result requests waiting for task %s (limit %d); poll it with tasks/get", id, maxTaskWaiters)})
		return
	}
	t.waiters = append(t.waiters, reply)
	s.mu.Unlock()
}

// list answers tasks/list: the kept tasks in creation order, a page at a
// time; the cursor is the position after the page's last task.
func (s *clientTasks) list(params json.RawMessage) (json.RawMessage, error) {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if len(params) > 0 {
		if err := unmarshal(params, &p); err != nil {
			return nil, protocolError(jsonrpc.CodeInvalidParams, err, "tasks/list params must be an object with an optional cursor string")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var after uint64
	if p.Cursor != nil {
		n, err := strconv.ParseUint(*p.Cursor, 10, 64)
		if err != nil || n > s.seq {
			return nil, protocolError(jsonrpc.CodeInvalidParams, nil,
				"tasks/list: invalid cursor %.64q: pass the nextCursor of the previous page, or none for the first", *p.Cursor)
		}
		after = n
	}
	list := make([]*clientTask, 0, len(s.byID))
	for _, t := range s.byID {
		if t.seq > after {
			list = append(list, t)
		}
	}
	slices.SortFunc(list, func(a, b *clientTask) int {
		if a.seq < b.seq {
			return -1
		}
		return 1
	})
	var out struct {
		Tasks      []clientTaskWire `json:"tasks"`
		NextCursor string           `json:"nextCursor,omitempty"`
	}
	out.Tasks = []clientTaskWire{}
	for i, t := range list {
		if i == clientTaskPage {
			out.NextCursor = strconv.FormatUint(list[i-1].seq, 10)
			break
		}
		out.Tasks = append(out.Tasks, t.wire())
	}
	return mustMarshal(out), nil
}
