package snodo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
)

const elicitParams = `{"mode":"form","message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}`

// nameHandler answers an elicitation with a name.
var nameHandler = snodo.HandlerFunc(func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if method != abi.MethodElicitationCreate {
		return nil, fmt.Errorf("unexpected %s", method)
	}
	return json.RawMessage(`{"action":"accept","content":{"name":"octocat"}}`), nil
})

// "on resultType: "input_required", run the handlers for every
// inputRequests entry ..., then retry the original request with a new
// JSON-RPC ID, inputResponses and the exact requestState (echo it byte for
// byte)".
func TestMRTRRetriesWithInputResponsesAndExactRequestState(t *testing.T) {
	// A state with escapes: the echo must keep these bytes, not a
	// re-encoding of the decoded string.
	const state = `"st\u0061te\/1 \ud83d\ude00"`
	c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		if fc.param("inputResponses") == nil {
			return result(fc, `{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create","params":`+elicitParams+`},"roots":{"method":"roots/list","params":{}}},"requestState":`+state+`}`)
		}
		return result(fc, `{"resultType":"complete","content":[{"type":"text","text":"hello"}]}`)
	}, &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: nameHandler, abi.MethodRootsList: snodo.HandlerFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"roots":[{"uri":"file:///home"}]}`), nil
	})}})
	args := map[string]any{"k": "v"}
	res, err := c.CallTool(context.Background(), "greet", args)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content[0].Text != "hello" {
		t.Errorf("result %+v", res)
	}
	calls := f.sent("tools/call")
	if len(calls) != 2 {
		t.Fatalf("%d tools/call, want 2", len(calls))
	}
	first, retry := calls[0], calls[1]
	if first.Req.ID == retry.Req.ID {
		t.Errorf("the retry reused ID %v", first.Req.ID)
	}
	if string(retry.param("requestState")) != state {
		t.Errorf("requestState %s, want the bytes %s", retry.param("requestState"), state)
	}
	if got := string(retry.param("inputResponses")); got != `{"roots":{"roots":[{"uri":"file:///home"}]},"who":{"action":"accept","content":{"name":"octocat"}}}` {
		t.Errorf("inputResponses %s", got)
	}
	if first.param("requestState") != nil || first.param("inputResponses") != nil {
		t.Error("the first request carried MRTR fields")
	}
	if string(retry.param("arguments")) != `{"k":"v"}` || string(retry.param("name")) != `"greet"` || len(args) != 1 {
		t.Errorf("retry params %s", retry.Req.Params)
	}
}

// "omit it when absent"; "a result with only requestState retries at once".
func TestMRTRRequestStateOnlyRetriesAtOnceAndAbsentStateIsOmitted(t *testing.T) {
	var handled atomic.Int32
	h := snodo.HandlerFunc(func(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
		handled.Add(1)
		return nameHandler(ctx, m, p)
	})
	round := 0
	c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		round++
		switch round {
		case 1:
			return result(fc, `{"resultType":"input_required","requestState":"busy"}`)
		case 2:
			return result(fc, `{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":`+elicitParams+`}}}`)
		}
		return result(fc, `{"resultType":"complete","content":[]}`)
	}, &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: h}})
	if _, err := c.CallTool(context.Background(), "t", nil); err != nil {
		t.Fatal(err)
	}
	calls := f.sent("tools/call")
	if len(calls) != 3 {
		t.Fatalf("%d calls", len(calls))
	}
	if string(calls[1].param("requestState")) != `"busy"` || calls[1].param("inputResponses") != nil {
		t.Errorf("state-only retry %s", calls[1].Req.Params)
	}
	if calls[2].param("requestState") != nil {
		t.Errorf("requestState sent though the server gave none: %s", calls[2].Req.Params)
	}
	if calls[2].param("inputResponses") == nil || handled.Load() != 1 {
		t.Errorf("handled %d; %s", handled.Load(), calls[2].Req.Params)
	}
}

// "bound the rounds (default 10, configurable) and fail clearly beyond".
func TestMRTRRoundsAreBounded(t *testing.T) {
	for _, tc := range []struct {
		opts *snodo.Options
		max  int
	}{{nil, 10}, {&snodo.Options{MaxRounds: 3}, 3}} {
		c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
			return result(fc, `{"resultType":"input_required","requestState":"again"}`)
		}, tc.opts)
		_, err := c.CallTool(context.Background(), "t", nil)
		if !errors.Is(err, snodo.ErrTooManyRounds) || !contains(err.Error(), fmt.Sprint(tc.max, " rounds")) {
			t.Errorf("err %v", err)
		}
		if n := len(f.sent("tools/call")); n != tc.max+1 {
			t.Errorf("%d requests, want %d", n, tc.max+1)
		}
	}
}

// "a handler error fails the call with that error — never a silent retry
// loop".
func TestMRTRHandlerErrorFailsTheCall(t *testing.T) {
	boom := &jsonrpc.Error{Code: -1, Message: "user declined to answer", Data: json.RawMessage(`{"why":"no"}`)}
	c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		return result(fc, `{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":`+elicitParams+`}},"requestState":"s"}`)
	}, &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: snodo.HandlerFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return nil, boom
	})}})
	_, err := c.CallTool(context.Background(), "t", nil)
	var e *snodo.Error
	if !errors.As(err, &e) || e.Kind != jsonrpc.KindHandler || e.Code != -1 || string(e.Data) != `{"why":"no"}` {
		t.Fatalf("err %#v", err)
	}
	if !errors.Is(err, boom) || !contains(err.Error(), "user declined") || !contains(err.Error(), `"a"`) {
		t.Errorf("err %v does not carry the handler's error", err)
	}
	if n := len(f.sent("tools/call")); n != 1 {
		t.Errorf("%d requests after a handler error, want 1", n)
	}

	// A panic fails the call too.
	c, _ = connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		return result(fc, `{"resultType":"input_required","inputRequests":{"a":{"method":"roots/list","params":{}}}}`)
	}, &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodRootsList: snodo.HandlerFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		panic("oops")
	})}})
	if _, err := c.CallTool(context.Background(), "t", nil); !errors.As(err, &e) || e.Kind != jsonrpc.KindHandler || !contains(err.Error(), "oops") {
		t.Errorf("panic: %v", err)
	}
}

// "an input request for a capability with no handler fails the call with
// an error naming it".
func TestMRTRMissingHandlerNamesTheCapability(t *testing.T) {
	for _, tc := range []struct{ method, params, capability string }{
		{"sampling/createMessage", `{"messages":[],"maxTokens":5}`, `"sampling"`},
		{"roots/list", `{}`, `"roots"`},
		{"elicitation/create", `{"mode":"url","message":"m","url":"https://example.com","elicitationId":"e"}`, `"elicitation.url"`},
	} {
		c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
			return result(fc, `{"resultType":"input_required","inputRequests":{"k":{"method":"`+tc.method+`","params":`+tc.params+`}}}`)
		}, &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: nameHandler}})
		_, err := c.CallTool(context.Background(), "t", nil)
		if !errors.Is(err, snodo.ErrNoHandler) || !contains(err.Error(), tc.capability) {
			t.Errorf("%s: err %v", tc.method, err)
		}
		if len(f.sent("tools/call")) != 1 {
			t.Errorf("%s: retried without an answer", tc.method)
		}
	}
}

// "run the handlers for every inputRequests entry concurrently under the
// same server-request limit".
func TestMRTRRunsHandlersConcurrentlyUnderTheLimit(t *testing.T) {
	const n, limit = 6, 3
	var running, peak atomic.Int32
	gate := make(chan struct{})
	var once sync.Once
	h := snodo.HandlerFunc(func(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
		r := running.Add(1)
		defer running.Add(-1)
		for {
			old := peak.Load()
			if r <= old || peak.CompareAndSwap(old, r) {
				break
			}
		}
		if r == limit {
			once.Do(func() { close(gate) }) // the limit is reached: all may go on
		}
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return json.RawMessage(`{"roots":[]}`), nil
	})
	reqs := ""
	for i := range n {
		if i > 0 {
			reqs += ","
		}
		reqs += fmt.Sprintf(`"r%d":{"method":"roots/list","params":{}}`, i)
	}
	c, _ := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		if fc.param("inputResponses") == nil {
			return result(fc, `{"resultType":"input_required","inputRequests":{`+reqs+`}}`)
		}
		return result(fc, `{"content":[]}`)
	}, &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodRootsList: h}, MaxServerRequests: limit})
	if _, err := c.CallTool(context.Background(), "t", nil); err != nil {
		t.Fatal(err)
	}
	if peak.Load() != limit {
		t.Errorf("peak concurrency %d, want %d", peak.Load(), limit)
	}
}

// "inputResponses and requestState never leak into any other request": a
// request made while another is between rounds carries neither.
func TestMRTRFieldsNeverLeakIntoOtherRequests(t *testing.T) {
	inHandler := make(chan struct{})
	release := make(chan struct{})
	c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		if fc.Req.Method == "tools/list" {
			return result(fc, `{"tools":[],"ttlMs":0,"cacheScope":"public"}`)
		}
		var name string
		_ = json.Unmarshal(fc.param("name"), &name)
		if name == "mrtr" && fc.param("inputResponses") == nil {
			return result(fc, `{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":`+elicitParams+`}},"requestState":"secret"}`)
		}
		return result(fc, `{"content":[]}`)
	}, &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: snodo.HandlerFunc(func(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
		close(inHandler)
		<-release
		return nameHandler(ctx, m, p)
	})}})
	done := make(chan error)
	go func() {
		_, err := c.CallTool(context.Background(), "mrtr", nil)
		done <- err
	}()
	<-inHandler
	if _, err := c.CallTool(context.Background(), "other", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := snodo.ListTools(c, context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(context.Background(), "after", nil); err != nil {
		t.Fatal(err)
	}
	for _, fc := range append(f.sent("tools/call"), f.sent("tools/list")...) {
		var name string
		_ = json.Unmarshal(fc.param("name"), &name)
		if name == "mrtr" {
			continue
		}
		if fc.param("inputResponses") != nil || fc.param("requestState") != nil {
			t.Errorf("%s %s carries MRTR fields: %s", fc.Req.Method, name, fc.Req.Params)
		}
	}
}

// A round of one input request runs its handler in the caller's goroutine:
// no goroutine is started or woken for it.
func TestMRTRSingleInputRequestRunsInTheCaller(t *testing.T) {
	inCaller := make(chan bool, 1)
	c, _ := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		if fc.param("inputResponses") == nil {
			return result(fc, `{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create","params":`+elicitParams+`}}}`)
		}
		return result(fc, `{"resultType":"complete","content":[{"type":"text","text":"hello"}]}`)
	}, &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: snodo.HandlerFunc(func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		buf := make([]byte, 64<<10)
		inCaller <- strings.Contains(string(buf[:runtime.Stack(buf, false)]), "snodo.(*Client).CallTool")
		return nameHandler(ctx, method, params)
	})}})
	if _, err := c.CallTool(context.Background(), "greet", nil); err != nil {
		t.Fatal(err)
	}
	if !<-inCaller {
		t.Fatal("the handler of a round's only input request ran in another goroutine")
	}
}
