package snodo_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/internal/clienthook"
	"github.com/snodo/snodo/jsonrpc"
)

// oneRound is the hidden per-call option of internal/clienthook.
func oneRound() snodo.CallOption { return clienthook.OneRound().(snodo.CallOption) }

// clienthook.OneRound: to a 2026-07-28 server, one round is sent; an
// input_required result comes back as the server sent it (no handler runs,
// the result interceptors do not see it), and the caller's own
// inputResponses and requestState reach the server through the
// interceptors untouched; the complete result of that retry goes through
// the result chain as any result does.
func TestOneRoundReturnsInputRequiredAndSendsTheCallersInputs(t *testing.T) {
	const (
		inputRequired = `{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create","params":` + elicitParams + `}},"requestState":"st\u0061te-1"}`
		responses     = `{"who":{"action":"accept","content":{"name":"octocat"}}}`
	)
	var handled, requests, results atomic.Int32
	counting := snodo.HandlerFunc(func(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
		handled.Add(1)
		return nameHandler(ctx, m, p)
	})
	// A request interceptor that rewrites the arguments: a rewrite must
	// keep the caller's inputResponses and requestState.
	ic := intercept.Funcs{
		OnRequest: func(_ context.Context, r *intercept.Request) (intercept.Decision, error) {
			requests.Add(1)
			var p map[string]json.RawMessage
			if err := json.Unmarshal(r.Params, &p); err != nil {
				return intercept.Decision{}, err
			}
			p["arguments"] = json.RawMessage(`{"k":"rewritten"}`)
			b, _ := json.Marshal(p)
			return intercept.Decision{Action: intercept.Rewrite, Params: b}, nil
		},
		OnResult: func(_ context.Context, r *intercept.Result) (intercept.Decision, error) {
			results.Add(1)
			if strings.Contains(string(r.Result), "input_required") {
				t.Errorf("the result chain saw an input_required result: %s", r.Result)
			}
			return intercept.Decision{}, nil
		},
	}
	c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		if fc.param("inputResponses") == nil {
			return result(fc, inputRequired)
		}
		return result(fc, `{"resultType":"complete","content":[{"type":"text","text":"hello octocat"}]}`)
	}, &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: counting}, Interceptors: []intercept.Interceptor{ic}})
	ctx := context.Background()

	raw, err := c.Request(ctx, "tools/call", json.RawMessage(`{"name":"greet"}`), oneRound())
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != inputRequired {
		t.Errorf("result %s, want the server's input_required as sent", raw)
	}
	if handled.Load() != 0 || results.Load() != 0 || len(f.sent("tools/call")) != 1 {
		t.Fatalf("handled %d, result chain %d, sent %d: want one round, no handler, no result chain",
			handled.Load(), results.Load(), len(f.sent("tools/call")))
	}

	retry := `{"name":"greet","inputResponses":` + responses + `,"requestState":"st\u0061te-1"}`
	raw, err = c.Request(ctx, "tools/call", json.RawMessage(retry), oneRound())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "hello octocat") {
		t.Errorf("retry result %s", raw)
	}
	calls := f.sent("tools/call")
	if len(calls) != 2 {
		t.Fatalf("%d tools/call, want 2", len(calls))
	}
	sent := calls[1]
	if got := string(sent.param("inputResponses")); got != responses {
		t.Errorf("inputResponses sent %s, want %s", got, responses)
	}
	if got := string(sent.param("requestState")); got != `"st\u0061te-1"` {
		t.Errorf("requestState sent %s, want the caller's bytes", got)
	}
	if got := string(sent.param("arguments")); got != `{"k":"rewritten"}` {
		t.Errorf("arguments sent %s: the interceptor's rewrite was lost", got)
	}
	if handled.Load() != 0 || requests.Load() != 2 || results.Load() != 1 {
		t.Errorf("handled %d, request chain %d, result chain %d; want 0, 2, 1", handled.Load(), requests.Load(), results.Load())
	}
}

// clienthook.OneRound still refuses an input_required result the protocol
// does not allow: on a method other than tools/call, prompts/get and
// resources/read.
func TestOneRoundRefusesInputRequiredWhereNotAllowed(t *testing.T) {
	c, _ := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		return result(fc, `{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create","params":`+elicitParams+`}}}`)
	})
	_, err := c.Request(context.Background(), "completion/complete", json.RawMessage(`{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"x"}}`), oneRound())
	if err == nil || !strings.Contains(err.Error(), "input_required") {
		t.Fatalf("err %v, want the protocol's refusal", err)
	}
}
