package snodo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/tasks"
)

// Client-side tasks (2025-11-25): the server asks the client to run an
// elicitation or a sampling request as a task, and polls the client.

const (
	elicitTask   = `{"mode":"form","message":"%s","requestedSchema":{"type":"object","properties":{}},"task":{"ttl":%s}}`
	samplingTask = `{"messages":[{"role":"user","content":{"type":"text","text":"%s"}}],"maxTokens":10,"task":{"ttl":%s}}`
)

// taskAnswer is a client's answer to a server request, decoded.
type taskAnswer struct {
	resp *jsonrpc.Response
	t    *testing.T
}

func (a taskAnswer) task() map[string]any {
	a.t.Helper()
	if a.resp.Error != nil {
		a.t.Fatalf("error %d %s", a.resp.Error.Code, a.resp.Error.Message)
	}
	var m map[string]any
	if err := json.Unmarshal(a.resp.Result, &m); err != nil {
		a.t.Fatal(err)
	}
	if t, ok := m["task"].(map[string]any); ok {
		return t
	}
	return m
}

func (a taskAnswer) errCode() int64 {
	if a.resp.Error == nil {
		return 0
	}
	return a.resp.Error.Code
}

var serverReqID atomic.Int64

// askKey marks the context of the requests ask sends.
type askKey struct{}

func ask(t *testing.T, f *fake, method, params string) taskAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), askKey{}, method), time.Minute)
	defer cancel()
	return taskAnswer{f.serverRequest(ctx, 1000+serverReqID.Add(1), method, params), t}
}

// waitStatus polls tasks/get until the task has status, or is gone for
// "", within a bound that only bounds the wait.
func waitStatus(t *testing.T, f *fake, id, status string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		a := ask(t, f, "tasks/get", idParams(id))
		switch {
		case status == "" && a.errCode() == jsonrpc.CodeInvalidParams && strings.Contains(a.resp.Error.Message, "Task not found"):
			return
		case status != "" && a.resp.Error == nil && a.task()["status"] == status:
			return
		case time.Now().After(deadline):
			t.Fatalf("task %s: %+v, want status %q", id, a.resp, status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func idParams(id string) string { return fmt.Sprintf(`{"taskId":%q}`, id) }

// holdingHandler answers elicitations and samplings; a request whose
// message or text is "hold" waits for release or its context, "crash"
// panics.
type holdingHandler struct {
	release   chan struct{}
	cancelled chan error
	started   chan struct{}
	// odd records a request whose params had a task member, or whose
	// context lacked the request's values.
	odd atomic.Value
}

func newHoldingHandler() *holdingHandler {
	return &holdingHandler{release: make(chan struct{}), cancelled: make(chan error, 16), started: make(chan struct{}, 16)}
}

func (h *holdingHandler) HandleRequest(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	s := string(params)
	var members map[string]json.RawMessage
	if json.Unmarshal(params, &members); members["task"] != nil {
		h.odd.Store("params with a task member: " + s)
	} else if ctx.Value(askKey{}) != method {
		h.odd.Store("a context without the request's values")
	}
	switch {
	case strings.Contains(s, `"crash"`):
		panic("the handler crashed")
	case strings.Contains(s, `"hold"`):
		h.started <- struct{}{}
		select {
		case <-h.release:
		case <-ctx.Done():
			h.cancelled <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		}
	}
	if method == abi.MethodSamplingCreate {
		return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m","_meta":{"x":1}}`), nil
	}
	return json.RawMessage(`{"action":"accept","content":{"ok":true}}`), nil
}

func connectTaskClient(t *testing.T, h snodo.Handler, maxServerRequests int) (*snodo.Client, *fake) {
	t.Helper()
	return connectLegacy(t, noMore, &snodo.Options{
		Handlers:          map[string]snodo.Handler{abi.MethodElicitationCreate: h, abi.MethodSamplingCreate: h},
		MaxServerRequests: maxServerRequests,
	})
}

// A server's task-augmented elicitation and sampling, native handlers: the
// client answers a CreateTaskResult at once (working, a 128-bit random
// ID, the granted ttl), the server polls tasks/get, tasks/result waits
// for the end and returns the handler's result with the related-task
// _meta, a status notification says completed; tasks/list lists the
// tasks; tasks/cancel cancels the handler's context and the task stays
// cancelled, its tasks/result an error. Every answer is schema-valid
// (the fake checks).
func TestClientTaskLifecycle(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	h := newHoldingHandler()
	c, f := connectTaskClient(t, h, 0)
	defer c.Close()

	el := ask(t, f, abi.MethodElicitationCreate, fmt.Sprintf(elicitTask, "hold", "60000")).task()
	id := el["taskId"].(string)
	if el["status"] != "working" || el["ttl"] != 60000.0 || len(id) != 32 {
		t.Fatalf("CreateTaskResult %v", el)
	}
	<-h.started
	if got := ask(t, f, "tasks/get", idParams(id)).task(); got["status"] != "working" || got["taskId"] != id {
		t.Errorf("tasks/get while running: %v", got)
	}
	waited := make(chan taskAnswer, 1)
	go func() { waited <- ask(t, f, "tasks/result", idParams(id)) }()
	select {
	case a := <-waited:
		t.Fatalf("tasks/result answered before the task ended: %+v", a.resp)
	case <-time.After(50 * time.Millisecond):
	}
	close(h.release)
	res := (<-waited).task()
	meta, _ := res["_meta"].(map[string]any)
	if res["action"] != "accept" || meta == nil || meta["io.modelcontextprotocol/related-task"].(map[string]any)["taskId"] != id {
		t.Errorf("tasks/result: %v", res)
	}
	if got := ask(t, f, "tasks/get", idParams(id)).task(); got["status"] != "completed" {
		t.Errorf("tasks/get after: %v", got)
	}

	sm := ask(t, f, abi.MethodSamplingCreate, fmt.Sprintf(samplingTask, "go", "60000")).task()
	sid := sm["taskId"].(string)
	res = ask(t, f, "tasks/result", idParams(sid)).task()
	meta, _ = res["_meta"].(map[string]any)
	if res["model"] != "m" || meta["x"] != 1.0 || meta["io.modelcontextprotocol/related-task"].(map[string]any)["taskId"] != sid {
		t.Errorf("sampling tasks/result: %v", res)
	}

	h.release = make(chan struct{})
	cn := ask(t, f, abi.MethodSamplingCreate, fmt.Sprintf(samplingTask, "hold", "60000")).task()
	cid := cn["taskId"].(string)
	<-h.started
	got := ask(t, f, "tasks/cancel", idParams(cid)).task()
	if got["status"] != "cancelled" {
		t.Errorf("tasks/cancel: %v", got)
	}
	if cause := <-h.cancelled; cause == nil || !strings.Contains(cause.Error(), "tasks/cancel") {
		t.Errorf("handler's cause: %v", cause)
	}
	if a := ask(t, f, "tasks/result", idParams(cid)); a.errCode() != jsonrpc.CodeInternalError || !strings.Contains(a.resp.Error.Message, "cancelled") {
		t.Errorf("tasks/result of a cancelled task: %+v", a.resp)
	}
	if got := ask(t, f, "tasks/get", idParams(cid)).task(); got["status"] != "cancelled" {
		t.Errorf("cancelled task: %v", got)
	}
	if a := ask(t, f, "tasks/cancel", idParams(cid)); a.errCode() != jsonrpc.CodeInvalidParams || !strings.Contains(a.resp.Error.Message, "terminal") {
		t.Errorf("second tasks/cancel: %+v", a.resp)
	}

	if odd := h.odd.Load(); odd != nil {
		t.Errorf("a handler got %s", odd)
	}
	list := ask(t, f, "tasks/list", `{}`).task()
	tasks := list["tasks"].([]any)
	if len(tasks) != 3 || tasks[0].(map[string]any)["taskId"] != id || tasks[2].(map[string]any)["status"] != "cancelled" {
		t.Errorf("tasks/list: %v", list)
	}

	// Status notifications for the two that completed (each sent after
	// its task's waiting tasks/result is answered: wait for them).
	want := map[string]bool{id + " completed": true, sid + " completed": true}
	deadline := time.Now().Add(time.Minute) // only bounds the wait
	for {
		f.mu.Lock()
		got := map[string]bool{}
		for _, n := range f.notifications {
			if n.Method == "notifications/tasks/status" {
				var p struct{ TaskID, Status string }
				_ = json.Unmarshal(n.Params, &p)
				got[p.TaskID+" "+p.Status] = true
			}
		}
		f.mu.Unlock()
		if len(got) == len(want) && got[id+" completed"] && got[sid+" completed"] {
			break
		}
		if len(got) > len(want) || time.Now().After(deadline) {
			t.Fatalf("status notifications: %v", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Hostile polling: unknown, missing and malformed task IDs and cursors are
// answered -32602 with the spec's "Task not found"; a huge ttl gets the
// client's maximum (one hour), a tiny one its minimum (one second), a
// negative one -32602; a handler that panics fails the task with the
// -32603 of the panic as its result; tasks/list pages are bounded and
// their cursors opaque.
func TestClientTaskHostileRequests(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	h := newHoldingHandler()
	c, f := connectTaskClient(t, h, 0)
	defer c.Close()

	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		for _, p := range []string{idParams("nope"), idParams(strings.Repeat("x", 1<<16)), `{}`, `{"taskId":7}`} {
			a := ask(t, f, m, p)
			if a.errCode() != jsonrpc.CodeInvalidParams {
				t.Errorf("%s %.40s: %+v", m, p, a.resp)
			} else if len(a.resp.Error.Message) > 400 {
				t.Errorf("%s: message of %d bytes repeats the hostile ID", m, len(a.resp.Error.Message))
			}
		}
	}
	if a := ask(t, f, "tasks/get", idParams("nope")); !strings.Contains(a.resp.Error.Message, "Task not found") {
		t.Errorf("unknown ID: %s", a.resp.Error.Message)
	}
	for _, cur := range []string{`"x"`, `"99999"`, `"-1"`, `5`} {
		if a := ask(t, f, "tasks/list", `{"cursor":`+cur+`}`); a.errCode() != jsonrpc.CodeInvalidParams {
			t.Errorf("cursor %s: %+v", cur, a.resp)
		}
	}

	for ttl, want := range map[string]float64{"1e300": 3600000, "99999999999": 3600000, "1": 1000, "0": 1000, "null": 3600000} {
		got := ask(t, f, abi.MethodElicitationCreate, fmt.Sprintf(elicitTask, "go", ttl)).task()
		if got["ttl"] != want {
			t.Errorf("ttl %s: granted %v, want %v", ttl, got["ttl"], want)
		}
	}
	for _, ttl := range []string{"-5", `"long"`} {
		if a := ask(t, f, abi.MethodElicitationCreate, fmt.Sprintf(elicitTask, "go", ttl)); a.errCode() != jsonrpc.CodeInvalidParams || !strings.Contains(a.resp.Error.Message, "ttl") {
			t.Errorf("ttl %s: %+v", ttl, a.resp)
		}
	}
	if a := ask(t, f, abi.MethodElicitationCreate, `{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{}},"task":[]}`); a.errCode() != jsonrpc.CodeInvalidParams {
		t.Errorf("task not an object: %+v", a.resp)
	}

	// Another spelling of the same member is the same request.
	if got := ask(t, f, abi.MethodElicitationCreate, `{"mode":"form","message":"go","requestedSchema":{"type":"object","properties":{}},"\u0074ask":{"ttl":5000}}`).task(); got["ttl"] != 5000.0 {
		t.Errorf("escaped task member: %v", got)
	}

	crash := ask(t, f, abi.MethodSamplingCreate, fmt.Sprintf(samplingTask, "crash", "60000")).task()
	cid := crash["taskId"].(string)
	a := ask(t, f, "tasks/result", idParams(cid))
	if a.errCode() != jsonrpc.CodeInternalError || !strings.Contains(a.resp.Error.Message, "panicked") {
		t.Errorf("tasks/result of a crashed handler: %+v", a.resp)
	}
	if got := ask(t, f, "tasks/get", idParams(cid)).task(); got["status"] != "failed" || !strings.Contains(got["statusMessage"].(string), "panicked") {
		t.Errorf("crashed task: %v", got)
	}

	// Paging: 70 more tasks make more than one page of at most 64.
	var listed []string
	for range 70 {
		id := ask(t, f, abi.MethodElicitationCreate, fmt.Sprintf(elicitTask, "go", "60000")).task()["taskId"].(string)
		waitStatus(t, f, id, "completed")
		listed = append(listed, id)
	}
	seen, pages, cursor := map[string]bool{}, 0, ""
	for {
		p := `{}`
		if cursor != "" {
			p = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		page := ask(t, f, "tasks/list", p).task()
		pages++
		tasks := page["tasks"].([]any)
		if len(tasks) > 64 {
			t.Fatalf("page of %d tasks", len(tasks))
		}
		for _, tk := range tasks {
			seen[tk.(map[string]any)["taskId"].(string)] = true
		}
		next, _ := page["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	// The tasks of a short ttl above may have expired meanwhile; these
	// have not.
	for _, id := range listed {
		if !seen[id] {
			t.Errorf("task %s not listed", id)
		}
	}
	if len(seen) > 5+1+1+70 || pages != 2 {
		t.Errorf("listed %d tasks in %d pages", len(seen), pages)
	}
}

// A server cannot grow the client's memory: at most 256 tasks are kept; a
// 257th is refused -32603 (saying what to do) while all are of use, and
// accepted once one has been fetched, which it replaces; at most 8
// tasks/result requests wait on one task; the gate of
// Options.MaxServerRequests bounds the handlers running as tasks, as any
// server request.
func TestClientTaskBounds(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	h := newHoldingHandler()
	c, f := connectTaskClient(t, h, 2)
	defer c.Close()

	held := ask(t, f, abi.MethodElicitationCreate, fmt.Sprintf(elicitTask, "hold", "60000")).task()["taskId"].(string)
	<-h.started
	// Nine tasks/result at once: the eight that fit wait for the end, the
	// ninth is refused at once, saying the limit.
	waiters := make(chan taskAnswer, 9)
	for range 9 {
		go func() { waiters <- ask(t, f, "tasks/result", idParams(held)) }()
	}
	if a := <-waiters; a.errCode() != jsonrpc.CodeInternalError || !strings.Contains(a.resp.Error.Message, "limit 8") {
		t.Fatalf("ninth tasks/result: %+v", a.resp)
	}
	second := ask(t, f, abi.MethodElicitationCreate, fmt.Sprintf(elicitTask, "hold", "60000")).task()["taskId"].(string)
	<-h.started
	if a := ask(t, f, abi.MethodElicitationCreate, fmt.Sprintf(elicitTask, "go", "60000")); a.errCode() != jsonrpc.CodeInternalError || !strings.Contains(a.resp.Error.Message, "too many server requests") {
		t.Errorf("over the gate: %+v", a.resp)
	}
	close(h.release)
	for range 8 {
		if w := <-waiters; w.resp.Error != nil {
			t.Errorf("waiter: %+v", w.resp)
		}
	}
	ask(t, f, "tasks/result", idParams(second))

	for i := 2; i < 256; i++ {
		a := ask(t, f, abi.MethodElicitationCreate, fmt.Sprintf(elicitTask, "go", "60000"))
		if a.resp.Error != nil {
			t.Fatalf("task %d: %+v", i, a.resp)
		}
		waitStatus(t, f, a.task()["taskId"].(string), "completed")
	}
	// 256 kept; held and second have been fetched: two more fit, then
	// none.
	var ids []string
	for range 2 {
		ids = append(ids, ask(t, f, abi.MethodElicitationCreate, fmt.Sprintf(elicitTask, "go", "60000")).task()["taskId"].(string))
		waitStatus(t, f, ids[len(ids)-1], "completed")
	}
	a := ask(t, f, abi.MethodElicitationCreate, fmt.Sprintf(elicitTask, "go", "60000"))
	if a.errCode() != jsonrpc.CodeInternalError || !strings.Contains(a.resp.Error.Message, "too many tasks kept by the client (limit 256)") {
		t.Fatalf("257th task: %+v", a.resp)
	}
	if a := ask(t, f, "tasks/get", idParams(held)); a.errCode() != jsonrpc.CodeInvalidParams {
		t.Errorf("the fetched task that made room: %+v", a.resp)
	}
	ask(t, f, "tasks/result", idParams(ids[0]))
	if a := ask(t, f, abi.MethodElicitationCreate, fmt.Sprintf(elicitTask, "go", "60000")); a.resp.Error != nil {
		t.Errorf("after a fetch: %+v", a.resp)
	}
}

// A task is dropped, with its result, once its ttl has passed (the
// client's minimum, one second, here); a task still running then is
// cancelled, and its waiting tasks/result told it expired.
func TestClientTaskExpires(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	h := newHoldingHandler()
	c, f := connectTaskClient(t, h, 0)
	defer c.Close()
	done := ask(t, f, abi.MethodElicitationCreate, fmt.Sprintf(elicitTask, "go", "1000")).task()["taskId"].(string)
	running := ask(t, f, abi.MethodSamplingCreate, fmt.Sprintf(samplingTask, "hold", "1000")).task()["taskId"].(string)
	<-h.started
	if a := ask(t, f, "tasks/result", idParams(running)); a.errCode() != jsonrpc.CodeInvalidParams || !strings.Contains(a.resp.Error.Message, "expired") {
		t.Errorf("tasks/result of a task that expired: %+v", a.resp)
	}
	if cause := <-h.cancelled; cause == nil || !strings.Contains(cause.Error(), "ttl") {
		t.Errorf("handler's cause: %v", cause)
	}
	for _, id := range []string{done, running} {
		waitStatus(t, f, id, "")
	}
}

// Close cancels the handlers still running as tasks (no goroutine is
// left), and a task-augmented request on a connection that does not
// declare tasks (2025-06-18) is answered normally, its params.task
// ignored, as the specification requires; there the tasks/ methods are
// not answered (-32601).
func TestClientTaskCloseAndOtherVersions(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	h := newHoldingHandler()
	c, f := connectTaskClient(t, h, 0)
	ask(t, f, abi.MethodElicitationCreate, fmt.Sprintf(elicitTask, "hold", "60000"))
	<-h.started
	c.Close()
	if cause := <-h.cancelled; !errors.Is(cause, snodo.ErrClientClosed) {
		t.Errorf("handler's cause at Close: %v", cause)
	}

	f = newFake(t, legacyServer("2025-06-18", noMore))
	c, err := snodo.Connect(context.Background(), f, &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: h}, ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := ask(t, f, abi.MethodElicitationCreate, `{"message":"go","requestedSchema":{"type":"object","properties":{}},"task":{"ttl":5}}`).task()
	if got["action"] != "accept" {
		t.Errorf("2025-06-18 elicitation with params.task: %v", got)
	}
	if a := ask(t, f, "tasks/get", idParams("x")); a.errCode() != jsonrpc.CodeMethodNotFound {
		t.Errorf("2025-06-18 tasks/get: %+v", a.resp)
	}
}

// A handler may echo what the server sent (a sampling module repeating the
// prompt): the results the client keeps are bounded in bytes, all
// together (64 MiB; 1 MiB here). A result that does not fit fails its task
// with -32603 saying so, unless the oldest fetched results make room; a
// failed task's statusMessage is at most 1 KiB.
func TestClientTaskResultBytesBounded(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	defer snodo.SetMaxClientTaskBytes(1 << 20)()
	echo := snodo.HandlerFunc(func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		var p struct {
			Messages []struct {
				Content struct{ Text string }
			}
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		if strings.HasPrefix(p.Messages[0].Content.Text, "fail") {
			return nil, &snodo.Error{Code: -32000, Message: p.Messages[0].Content.Text}
		}
		b, _ := json.Marshal(map[string]any{"role": "assistant", "content": map[string]string{"type": "text", "text": p.Messages[0].Content.Text}, "model": "echo"})
		return b, nil
	})
	c, f := connectLegacy(t, noMore, &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodSamplingCreate: echo}})
	defer c.Close()
	big := strings.Repeat("a", 400<<10)
	var ids []string
	for range 3 {
		id := ask(t, f, abi.MethodSamplingCreate, fmt.Sprintf(samplingTask, big, "60000")).task()["taskId"].(string)
		waitDone(t, f, id)
		ids = append(ids, id)
	}
	if got := ask(t, f, "tasks/get", idParams(ids[1])).task(); got["status"] != "completed" {
		t.Errorf("second: %v", got)
	}
	a := ask(t, f, "tasks/result", idParams(ids[2]))
	if a.errCode() != jsonrpc.CodeInternalError || !strings.Contains(a.resp.Error.Message, "does not fit") {
		t.Fatalf("third, over the bound: error %d, %d bytes of result", a.errCode(), len(a.resp.Result))
	}
	if a := ask(t, f, "tasks/result", idParams(ids[0])); a.resp.Error != nil {
		t.Fatalf("first: %d %s", a.errCode(), a.resp.Error.Message)
	}
	fourth := ask(t, f, abi.MethodSamplingCreate, fmt.Sprintf(samplingTask, big, "60000")).task()["taskId"].(string)
	if got := waitDone(t, f, fourth); got["status"] != "completed" {
		t.Errorf("fourth, after a fetch: %v", got)
	}
	if a := ask(t, f, "tasks/get", idParams(ids[0])); a.errCode() != jsonrpc.CodeInvalidParams {
		t.Errorf("the fetched result that made room: %+v", a.resp)
	}

	failed := ask(t, f, abi.MethodSamplingCreate, fmt.Sprintf(samplingTask, "fail"+strings.Repeat("x", 5000), "60000")).task()["taskId"].(string)
	if got := waitDone(t, f, failed); got["status"] != "failed" || len(got["statusMessage"].(string)) > 1024 {
		t.Errorf("failed task's status message of %d bytes", len(got["statusMessage"].(string)))
	}
}

// waitDone polls tasks/get until the task is terminal and returns it.
func waitDone(t *testing.T, f *fake, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // only bounds the wait
	for {
		got := ask(t, f, "tasks/get", idParams(id)).task()
		if s := tasks.Status(got["status"].(string)); s.Terminal() {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: %v", id, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
