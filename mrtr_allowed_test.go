package snodo_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
)

// mrtr.mdx "Supported Requests": only prompts/get, resources/read and
// tools/call may be answered input_required; "inputRequests values MUST be
// one of ElicitRequest, CreateMessageRequest, or ListRootsRequest".
// Anything else fails the call with a protocol error and runs nothing.
func TestInputRoundsOnlyWhereTheSpecAllows(t *testing.T) {
	var ran atomic.Int32
	counting := snodo.HandlerFunc(func(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
		ran.Add(1)
		return nameHandler(ctx, m, p)
	})
	input := `{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create","params":` + elicitParams + `}}}`
	badInput := `{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create","params":` + elicitParams + `},"zz":{"method":"tools/call","params":{"name":"x"}}}}`
	var body atomic.Value
	c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		if fc.param("inputResponses") != nil {
			switch fc.Req.Method {
			case "tools/call":
				return result(fc, `{"content":[]}`)
			case "prompts/get":
				return result(fc, `{"messages":[]}`)
			case "resources/read":
				return result(fc, `{"contents":[],"ttlMs":0,"cacheScope":"private"}`)
			}
		}
		return result(fc, body.Load().(string))
	}, &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: counting, "x/custom": counting}})
	ctx := context.Background()

	body.Store(input)
	if _, err := c.CallTool(ctx, "a", nil); err != nil {
		t.Errorf("tools/call: %v", err)
	}
	if _, err := c.GetPrompt(ctx, "p", nil); err != nil {
		t.Errorf("prompts/get: %v", err)
	}
	if _, err := c.ReadResource(ctx, "demo://x"); err != nil {
		t.Errorf("resources/read: %v", err)
	}
	if ran.Load() != 3 {
		t.Fatalf("%d handler runs for the allowed methods, want 3", ran.Load())
	}

	ran.Store(0)
	for name, call := range map[string]func() error{
		"tools/list":     func() error { _, err := snodo.ListTools(c, ctx, ""); return err },
		"prompts/list":   func() error { _, err := snodo.ListPrompts(c, ctx, ""); return err },
		"resources/list": func() error { _, err := snodo.ListResources(c, ctx, ""); return err },
		"x/raw":          func() error { _, err := c.Request(ctx, "x/raw", nil); return err },
	} {
		err := call()
		var e *snodo.Error
		if !errors.Is(err, snodo.ErrInputNotAllowed) || !errors.As(err, &e) || e.Kind != jsonrpc.KindProtocol || !contains(err.Error(), name) {
			t.Errorf("%s answered input_required: %v", name, err)
		}
	}

	body.Store(badInput)
	before := len(f.sent("tools/call"))
	_, err := c.CallTool(ctx, "a", nil)
	if !errors.Is(err, snodo.ErrInputNotAllowed) || !contains(err.Error(), `"zz"`) || !contains(err.Error(), `"tools/call"`) {
		t.Errorf("an input request of a method not allowed: %v", err)
	}
	if len(f.sent("tools/call")) != before+1 {
		t.Error("the call was retried")
	}
	if ran.Load() != 0 {
		t.Errorf("%d handlers ran for refused input", ran.Load())
	}
}
