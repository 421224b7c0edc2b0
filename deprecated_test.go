package snodo_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/internal/clienthook"
	"github.com/snodo/snodo/jsonrpc"
)

// deprecatedUses records what clienthook.SetDeprecatedUse reports.
type deprecatedUses struct {
	mu   sync.Mutex
	uses []string
}

// options returns Options that report to d and answer methods with
// answerAll.
func (d *deprecatedUses) options(methods ...string) *snodo.Options {
	o := &snodo.Options{Handlers: map[string]snodo.Handler{}}
	for _, m := range methods {
		o.Handlers[m] = answerAll
	}
	clienthook.SetDeprecatedUse(o, func(feature, method string) {
		d.mu.Lock()
		d.uses = append(d.uses, feature+" "+method)
		d.mu.Unlock()
	})
	return o
}

func (d *deprecatedUses) distinct() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := slices.Clone(d.uses)
	slices.Sort(out)
	return slices.Compact(out)
}

const samplingParams = `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10}`

var answerAll = snodo.HandlerFunc(func(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	switch method {
	case abi.MethodSamplingCreate:
		return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}`), nil
	case abi.MethodRootsList:
		return json.RawMessage(`{"roots":[]}`), nil
	}
	return json.RawMessage(`{"action":"accept","content":{"name":"octocat"}}`), nil
})

// A legacy server's sampling/createMessage and roots/list requests (with
// or without a handler), its notifications/message and a logging/setLevel
// sent to it are reported as uses of the features 2026-07-28 deprecates;
// an elicitation and other messages are not.
func TestDeprecatedUseLegacy(t *testing.T) {
	var d deprecatedUses
	c, f := connectLegacy(t, func(fc *fakeCall) *jsonrpc.Response {
		if fc.Req.Method == "logging/setLevel" {
			return result(fc, `{}`)
		}
		return noMore(fc)
	}, d.options(abi.MethodSamplingCreate, abi.MethodElicitationCreate))
	defer c.Close()
	ctx := context.Background()
	if got := d.distinct(); len(got) != 0 {
		t.Fatalf("reported before any use: %v", got)
	}
	f.serverRequest(ctx, 1, abi.MethodElicitationCreate, elicitParams)
	f.notify("notifications/tools/list_changed", `{}`)
	// A look-alike method is not a use: only the exact names count, and
	// only those fixed names reach the hook.
	f.serverRequest(ctx, 9, "roots/list\n[INFO] the server used nothing", `{}`)
	f.notify("notifications/message\u202e", `{"level":"info","data":"x"}`)
	if got := d.distinct(); len(got) != 0 {
		t.Fatalf("elicitation or a list change reported as deprecated: %v", got)
	}
	f.serverRequest(ctx, 2, abi.MethodSamplingCreate, samplingParams)
	f.serverRequest(ctx, 3, abi.MethodRootsList, `{}`) // no handler: refused, still a use
	f.notify("notifications/message", `{"level":"info","data":"x"}`)
	if err := c.SetLogLevel(ctx, snodo.LogLevel("info")); err != nil {
		t.Fatal(err)
	}
	want := []string{"logging logging/setLevel", "logging notifications/message", "roots roots/list", "sampling sampling/createMessage"}
	if got := d.distinct(); !slices.Equal(got, want) {
		t.Errorf("reported %v, want %v", got, want)
	}
}

// 2026-07-28 input requests for sampling and roots are reported; an
// elicitation input request is not.
func TestDeprecatedUseModernInputRequests(t *testing.T) {
	var d deprecatedUses
	c, _ := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		if fc.param("inputResponses") == nil {
			return result(fc, `{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create","params":`+elicitParams+`},"s":{"method":"sampling/createMessage","params":`+samplingParams+`},"r":{"method":"roots/list","params":{}}}}`)
		}
		return result(fc, `{"resultType":"complete","content":[{"type":"text","text":"done"}]}`)
	}, d.options(abi.MethodSamplingCreate, abi.MethodRootsList, abi.MethodElicitationCreate))
	defer c.Close()
	if _, err := c.CallTool(context.Background(), "t", nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"roots roots/list", "sampling sampling/createMessage"}
	if got := d.distinct(); !slices.Equal(got, want) {
		t.Errorf("reported %v, want %v", got, want)
	}
}
