package snodo_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
)

// "One handler interface for both eras ... used for legacy server-to-client
// requests (elicitation/create, ...) and for modern inputRequests": the
// same Handler value answers both.
func TestSameHandlerAnswersBothEras(t *testing.T) {
	var seen []string
	h := snodo.HandlerFunc(func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		seen = append(seen, method+" "+string(params))
		return nameHandler(ctx, method, params)
	})
	opt := &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: h}}

	legacy, f := connectLegacy(t, noMore, opt)
	resp := f.serverRequest(context.Background(), 7, "elicitation/create", elicitParams)
	if resp.Error != nil || string(resp.Result) != `{"action":"accept","content":{"name":"octocat"}}` {
		t.Errorf("legacy answer %+v", resp)
	}
	_ = legacy

	modern, mf := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		if fc.param("inputResponses") == nil {
			return result(fc, `{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":`+elicitParams+`}}}`)
		}
		return result(fc, `{"content":[]}`)
	}, opt)
	if _, err := modern.CallTool(context.Background(), "t", nil); err != nil {
		t.Fatal(err)
	}
	if got := string(mf.sent("tools/call")[1].param("inputResponses")); got != `{"q":{"action":"accept","content":{"name":"octocat"}}}` {
		t.Errorf("modern inputResponses %s", got)
	}
	if len(seen) != 2 || seen[0] != seen[1] {
		t.Errorf("handler saw %q", seen)
	}
}

// "ping is answered by the client itself"; a method without a handler is
// -32601; an elicitation mode not declared is -32602; a handler's
// *jsonrpc.Error keeps its code.
func TestLegacyServerRequests(t *testing.T) {
	_, f := connectLegacy(t, noMore, &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: nameHandler, abi.MethodRootsList: snodo.HandlerFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return nil, &jsonrpc.Error{Code: -32099, Message: "no roots today"}
	})}})
	ctx := context.Background()
	if r := f.serverRequest(ctx, 1, "ping", `{}`); r.Error != nil || string(r.Result) != `{}` {
		t.Errorf("ping %+v", r)
	}
	if r := f.serverRequest(ctx, 2, "sampling/createMessage", `{"messages":[],"maxTokens":1}`); r.Error == nil || r.Error.Code != jsonrpc.CodeMethodNotFound || !contains(r.Error.Message, "sampling") {
		t.Errorf("no handler: %+v", r.Error)
	}
	if r := f.serverRequest(ctx, 3, "elicitation/create", `{"mode":"url","message":"m","url":"https://example.com","elicitationId":"e"}`); r.Error == nil || r.Error.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("undeclared url mode: %+v", r.Error)
	}
	if r := f.serverRequest(ctx, 4, "roots/list", `{}`); r.Error == nil || r.Error.Code != -32099 {
		t.Errorf("handler error: %+v", r.Error)
	}
}

// "A request over the limit is answered with -32603 without running the
// handler" (MaxServerRequests, default 16, shared with input requests).
func TestLegacyServerRequestsOverTheLimit(t *testing.T) {
	var ran atomic.Int32
	block := make(chan struct{})
	started := make(chan struct{}, 1)
	h := snodo.HandlerFunc(func(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
		ran.Add(1)
		started <- struct{}{}
		<-block
		return json.RawMessage(`{"roots":[]}`), nil
	})
	_, f := connectLegacy(t, noMore, &snodo.Options{
		Handlers:          map[string]snodo.Handler{abi.MethodRootsList: h},
		MaxServerRequests: 1,
	})
	done := make(chan struct{})
	go func() {
		f.serverRequest(context.Background(), 1, "roots/list", `{}`)
		close(done)
	}()
	<-started
	r := f.serverRequest(context.Background(), 2, "roots/list", `{}`)
	if r.Error == nil || r.Error.Code != jsonrpc.CodeInternalError {
		t.Errorf("over the limit: %+v", r)
	}
	close(block)
	<-done
	if ran.Load() != 1 {
		t.Errorf("handler ran %d times, want 1", ran.Load())
	}
}

// "Server log messages (notifications/message) reach an optional hook in
// both eras."
func TestLogHookInBothEras(t *testing.T) {
	for _, connect := range []func(*testing.T, func(*fakeCall) *jsonrpc.Response, ...*snodo.Options) (*snodo.Client, *fake){connectLegacy, connectModern} {
		var got []snodo.LogMessage
		c, f := connect(t, noMore, &snodo.Options{OnLog: func(m snodo.LogMessage) { got = append(got, m) }})
		f.notify("notifications/message", `{"level":"error","logger":"db","data":{"error":"down"}}`)
		if len(got) != 1 || got[0].Level != "error" || got[0].Logger != "db" || string(got[0].Data) != `{"error":"down"}` {
			t.Errorf("%v: log %+v", c.Server().Era, got)
		}
	}
	// Without a hook, nothing breaks.
	_, f := connectModern(t, noMore)
	f.notify("notifications/message", `{"level":"info","data":"x"}`)
}

// Per-call options: "timeout (default 60 s), progress callback,
// reset-timeout-on-progress, max-total-timeout, log level; cancellation
// through ctx".
func TestPerCallOptions(t *testing.T) {
	var progress []snodo.Progress
	c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		if fc.meta("progressToken") != nil {
			tok := string(fc.meta("progressToken"))
			if err := fc.progress(`{"progressToken":` + tok + `,"progress":1,"total":2,"message":"half"}`); err != nil {
				return errorResponse(fc, -1, err.Error(), "")
			}
			_ = fc.progress(`{"progressToken":` + tok + `,"progress":2,"total":2}`)
		}
		var name string
		_ = json.Unmarshal(fc.param("name"), &name)
		if name == "slow" {
			return nil
		}
		return result(fc, `{"content":[]}`)
	})
	ctx := context.Background()
	if _, err := c.CallTool(ctx, "a", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(ctx, "b", nil,
		snodo.WithTimeout(3*time.Second),
		snodo.WithProgress(func(p snodo.Progress) { progress = append(progress, p) }),
		snodo.WithResetTimeoutOnProgress(),
		snodo.WithMaxTotalTimeout(time.Minute)); err != nil {
		t.Fatal(err)
	}
	calls := f.sent("tools/call")
	if calls[0].Opts.Timeout != 60*time.Second || calls[0].Opts.OnProgress != nil || calls[0].meta("progressToken") != nil {
		t.Errorf("defaults: %+v", calls[0].Opts)
	}
	o := calls[1].Opts
	if o.Timeout != 3*time.Second || !o.ResetTimeoutOnProgress || o.MaxTotalTimeout != time.Minute {
		t.Errorf("options not passed on: %+v", o)
	}
	if len(progress) != 2 || progress[0].Message != "half" || *progress[0].Total != 2 || progress[1].Progress != 2 {
		t.Errorf("progress %+v", progress)
	}

	// Timeout: the transport's -32001 reaches the caller as it is.
	_, err := c.CallTool(ctx, "slow", nil, snodo.WithTimeout(time.Millisecond))
	var e *snodo.Error
	if !errors.As(err, &e) || e.Code != jsonrpc.CodeRequestTimeout {
		t.Errorf("timeout: %v", err)
	}
	// Cancellation: ctx reaches the transport.
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(time.Millisecond); cancel() }()
	if _, err := c.CallTool(cctx, "slow", nil, snodo.WithTimeout(time.Hour)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancel: %v", err)
	}
	// A default timeout can be set for the client.
	c2, f2 := connectModern(t, func(fc *fakeCall) *jsonrpc.Response { return result(fc, `{"content":[]}`) }, &snodo.Options{
		DefaultTimeout: time.Second,
	})
	_, _ = c2.CallTool(ctx, "a", nil)
	if f2.sent("tools/call")[0].Opts.Timeout != time.Second {
		t.Error("Options.DefaultTimeout ignored")
	}
}
