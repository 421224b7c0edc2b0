package snodo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/tasks"
	"github.com/snodo/snodo/transport"
)

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

// taskWaiter is a call waiting for a task: status notifications for its
// task and progress for its token wake it.
type taskWaiter struct {
	wake chan struct{} // buffered 1

	mu       sync.Mutex
	status   *tasks.Task     // the newest status notification not yet seen
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
func (w *taskWaiter) take() (*tasks.Task, json.RawMessage) {
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
		var t tasks.Task
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

// awaitTask follows task until it ends and returns its result. The total
// deadline, when set, bounds the whole wait; with cancelOnStop, a wait that
// ends before the task (the caller's ctx, the deadline, an error) sends
// tasks/cancel.
func (c *Client) awaitTask(ctx context.Context, w *taskWaiter, task *tasks.Task, cc *callConfig, onProgress transport.ProgressFunc, deadline time.Time, cancelOnStop bool) (*CallToolResult, error) {
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
	if !c.dialect.tasks().cancels(c) {
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
func (c *Client) followTask(ctx context.Context, w *taskWaiter, task *tasks.Task, cc *callConfig, onProgress transport.ProgressFunc, deadline time.Time, last **tasks.Task) (*CallToolResult, error) {
	var onStatus func(tasks.Task)
	var configured time.Duration
	if cc.tasks != nil {
		onStatus, configured = cc.tasks.onStatus, cc.tasks.pollInterval
	}
	var shown *tasks.Task
	report := func(t *tasks.Task) {
		*last = t
		if onStatus != nil && (shown == nil || shown.Status != t.Status || shown.StatusMessage != t.StatusMessage) {
			shown = t
			onStatus(*t)
		}
	}
	id := task.TaskID
	tp := c.dialect.tasks()
	in := taskInputs{answered: map[string]bool{}, deadline: deadline}
	polled := time.Now() // the newest answer about the task
	for {
		report(task)
		pollNow := false
		switch {
		case task.Status == tasks.Cancelled:
			return nil, taskCancelledError(task)
		case task.Status.Terminal():
			return tp.finished(ctx, c, task, *cc)
		case task.Status == tasks.InputRequired:
			res, done, now, err := tp.needsInput(ctx, c, task, *cc, &in)
			if done {
				return res, err
			}
			pollNow = now
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
func (c *Client) pauseTask(ctx context.Context, w *taskWaiter, task *tasks.Task, configured time.Duration, polled time.Time, onProgress transport.ProgressFunc, report func(*tasks.Task)) error {
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
				if status.Status.Terminal() || status.Status == tasks.InputRequired {
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
