package snodo_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
)

const urlElicitLegacy = `{"mode":"url","elicitationId":"e-1","url":"https://mcp.example.com/connect?x=1","message":"Connect your account"}`
const urlElicitModern = `{"mode":"url","url":"https://mcp.example.com/connect","message":"Connect your account"}`

// recorder is a handler that keeps the requests it answers.
type recorder struct {
	mu     sync.Mutex
	params []json.RawMessage
	answer string
}

func (r *recorder) HandleRequest(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.params = append(r.params, append(json.RawMessage(nil), params...))
	return json.RawMessage(r.answer), nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.params)
}

// client/elicitation.mdx (2025-11-25): the URL-mode handler gets mode, url
// and elicitationId; url mode is declared; notifications/elicitation/complete
// reaches the hook for a known elicitation only, once.
func TestURLElicitationLegacy(t *testing.T) {
	urlH := &recorder{answer: `{"action":"accept"}`}
	var completed []string
	var mu sync.Mutex
	_, f := connectLegacy(t, noMore, &snodo.Options{
		Handlers:              map[string]snodo.Handler{abi.MethodElicitationCreate: nameHandler},
		URLElicitation:        urlH,
		OnElicitationComplete: func(id string) { mu.Lock(); completed = append(completed, id); mu.Unlock() },
	})
	init := f.sent("initialize")[0]
	var p struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	_ = json.Unmarshal(init.Req.Params, &p)
	if string(p.Capabilities["elicitation"]) != `{"form":{},"url":{}}` {
		t.Errorf("elicitation capability %s", p.Capabilities["elicitation"])
	}
	ctx := context.Background()

	f.notify("notifications/elicitation/complete", `{"elicitationId":"e-1"}`) // not asked yet: ignored
	resp := f.serverRequest(ctx, 1, abi.MethodElicitationCreate, urlElicitLegacy)
	if resp.Error != nil || string(resp.Result) != `{"action":"accept"}` {
		t.Fatalf("answer %+v", resp)
	}
	req, err := snodo.ParseElicitRequest(urlH.params[0])
	if err != nil || req.Mode != "url" || req.URL != "https://mcp.example.com/connect?x=1" || req.ElicitationID != "e-1" || req.Message != "Connect your account" {
		t.Errorf("handler got %+v %v", req, err)
	}
	// Form mode still goes to the form handler.
	if resp := f.serverRequest(ctx, 2, abi.MethodElicitationCreate, elicitParams); resp.Error != nil || !contains(string(resp.Result), "octocat") {
		t.Errorf("form answer %+v", resp)
	}
	f.notify("notifications/elicitation/complete", `{"elicitationId":"other"}`)
	f.notify("notifications/elicitation/complete", `{"elicitationId":"e-1"}`)
	f.notify("notifications/elicitation/complete", `{"elicitationId":"e-1"}`) // already completed
	mu.Lock()
	if len(completed) != 1 || completed[0] != "e-1" {
		t.Errorf("completed %v, want [e-1]", completed)
	}
	mu.Unlock()

	// Invalid URL-mode requests are refused -32602 and the handler does
	// not run.
	for _, bad := range []string{
		`{"mode":"url","url":"https://x.example/","message":"m"}`,                      // no elicitationId
		`{"mode":"url","elicitationId":"e","url":"javascript:alert(1)","message":"m"}`, // no host
		`{"mode":"url","elicitationId":"e","url":"/relative","message":"m"}`,           // not absolute
		`{"mode":"url","elicitationId":"e","url":"file:///etc/passwd","message":"m"}`,  // no host
		`{"mode":"url","elicitationId":"e","url":"http://[::1","message":"m"}`,         // unparsable
	} {
		n := urlH.count()
		resp := f.serverRequest(ctx, 3, abi.MethodElicitationCreate, bad)
		if resp.Error == nil || resp.Error.Code != jsonrpc.CodeInvalidParams || urlH.count() != n {
			t.Errorf("%s: %+v", bad, resp)
		}
	}
}

// Without Options.URLElicitation, url mode follows Options.ElicitationModes; a
// client that did not declare it refuses it -32602.
func TestURLElicitationUndeclared(t *testing.T) {
	c, f := connectLegacy(t, noMore, &snodo.Options{
		Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: nameHandler},
	})
	_ = c
	if resp := f.serverRequest(context.Background(), 1, abi.MethodElicitationCreate, urlElicitLegacy); resp.Error == nil || resp.Error.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("undeclared url mode: %+v", resp)
	}
	urlOnly := &recorder{answer: `{"action":"decline"}`}
	_, f2 := connectLegacy(t, noMore, &snodo.Options{URLElicitation: urlOnly})
	var p struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	_ = json.Unmarshal(f2.sent("initialize")[0].Req.Params, &p)
	if string(p.Capabilities["elicitation"]) != `{"url":{}}` {
		t.Errorf("url-only capability %s", p.Capabilities["elicitation"])
	}
	if resp := f2.serverRequest(context.Background(), 1, abi.MethodElicitationCreate, elicitParams); resp.Error == nil || resp.Error.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("form mode without a form handler: %+v", resp)
	}
}

// 2026-07-28: URL mode in an input round (no elicitationId), the call
// retried after the handler's answer; the capability in _meta.
func TestURLElicitationModern(t *testing.T) {
	urlH := &recorder{answer: `{"action":"accept"}`}
	var completed atomic.Int32
	c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		if fc.param("inputResponses") == nil {
			return result(fc, `{"resultType":"input_required","inputRequests":{"login":{"method":"elicitation/create","params":`+urlElicitModern+`}},"requestState":"s"}`)
		}
		return result(fc, `{"content":[{"type":"text","text":"connected"}]}`)
	}, &snodo.Options{URLElicitation: urlH, OnElicitationComplete: func(string) { completed.Add(1) }})
	res, err := c.CallTool(context.Background(), "connect", nil)
	if err != nil || res.Content[0].Text != "connected" {
		t.Fatalf("%v %+v", err, res)
	}
	retry := f.sent("tools/call")[1]
	if string(retry.param("inputResponses")) != `{"login":{"action":"accept"}}` {
		t.Errorf("inputResponses %s", retry.param("inputResponses"))
	}
	if got := capability(t, retry, "elicitation"); got != `{"url":{}}` {
		t.Errorf("elicitation capability %s", got)
	}
	req, _ := snodo.ParseElicitRequest(urlH.params[0])
	if req.URL != "https://mcp.example.com/connect" || req.ElicitationID != "" {
		t.Errorf("handler got %+v", req)
	}
	// 2026-07-28 has no completion notification: one naming nothing the
	// client was asked is ignored.
	f.notify("notifications/elicitation/complete", `{"elicitationId":"x"}`)
	if completed.Load() != 0 {
		t.Error("hook called for an unknown elicitation")
	}
	// A URL that is not absolute fails the call; the handler does not run.
	c2, _ := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		return result(fc, `{"resultType":"input_required","inputRequests":{"login":{"method":"elicitation/create","params":{"mode":"url","url":"nope","message":"m"}}}}`)
	}, &snodo.Options{URLElicitation: urlH})
	n := urlH.count()
	if _, err := c2.CallTool(context.Background(), "connect", nil); err == nil || !contains(err.Error(), "absolute url") || urlH.count() != n {
		t.Errorf("bad url: %v", err)
	}
}

// sampling.tools (2025-11-25, 2026-07-28): declared with Options.SamplingTools;
// a request with tools is refused without it.
func TestSamplingTools(t *testing.T) {
	const withTools = `{"messages":[{"role":"user","content":{"type":"text","text":"weather?"}}],"maxTokens":10,"tools":[{"name":"get_weather","inputSchema":{"type":"object"}}]}`
	const plain = `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10}`
	sampler := &recorder{answer: `{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}`}
	ctx := context.Background()

	_, f := connectLegacy(t, noMore, &snodo.Options{
		Handlers: map[string]snodo.Handler{abi.MethodSamplingCreate: sampler},
	})
	var p struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	_ = json.Unmarshal(f.sent("initialize")[0].Req.Params, &p)
	if string(p.Capabilities["sampling"]) != `{}` {
		t.Errorf("sampling capability %s", p.Capabilities["sampling"])
	}
	if resp := f.serverRequest(ctx, 1, abi.MethodSamplingCreate, withTools); resp.Error == nil || resp.Error.Code != jsonrpc.CodeInvalidParams || !contains(resp.Error.Message, "sampling.tools") || sampler.count() != 0 {
		t.Errorf("undeclared tools: %+v", resp)
	}
	if resp := f.serverRequest(ctx, 2, abi.MethodSamplingCreate, plain); resp.Error != nil || sampler.count() != 1 {
		t.Errorf("plain sampling: %+v", resp)
	}

	_, f = connectLegacy(t, noMore, &snodo.Options{
		Handlers:      map[string]snodo.Handler{abi.MethodSamplingCreate: sampler},
		SamplingTools: true,
	})
	_ = json.Unmarshal(f.sent("initialize")[0].Req.Params, &p)
	if string(p.Capabilities["sampling"]) != `{"tools":{}}` {
		t.Errorf("sampling capability %s", p.Capabilities["sampling"])
	}
	if resp := f.serverRequest(ctx, 1, abi.MethodSamplingCreate, withTools); resp.Error != nil || sampler.count() != 2 {
		t.Errorf("declared tools: %+v", resp)
	}

	// 2026-07-28: in _meta, and an input request with tools fails the call
	// without the declaration.
	for _, declare := range []bool{false, true} {
		opts := &snodo.Options{
			Handlers:      map[string]snodo.Handler{abi.MethodSamplingCreate: sampler},
			SamplingTools: declare,
		}
		c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
			if fc.param("inputResponses") == nil {
				return result(fc, `{"resultType":"input_required","inputRequests":{"s":{"method":"sampling/createMessage","params":`+withTools+`}}}`)
			}
			return result(fc, `{"content":[]}`)
		}, opts)
		n := sampler.count()
		_, err := c.CallTool(ctx, "agent", nil)
		caps := capability(t, f.sent("tools/call")[0], "sampling")
		if declare && (err != nil || caps != `{"tools":{}}` || sampler.count() != n+1) {
			t.Errorf("declared: %v %s", err, caps)
		}
		if !declare && (!errors.Is(err, snodo.ErrNoHandler) || !contains(err.Error(), "sampling.tools") || caps != `{}` || sampler.count() != n) {
			t.Errorf("undeclared: %v %s", err, caps)
		}
	}

	// Before 2025-11-25 there is no sampling.tools to declare.
	f = newFake(t, legacyServer("2025-06-18", noMore))
	if _, err := snodo.Connect(ctx, f, &snodo.Options{
		Handlers:        map[string]snodo.Handler{abi.MethodSamplingCreate: sampler},
		ProtocolVersion: "2025-06-18",
		SamplingTools:   true,
	}); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(f.sent("initialize")[0].Req.Params, &p)
	if string(p.Capabilities["sampling"]) != `{}` {
		t.Errorf("2025-06-18 sampling capability %s", p.Capabilities["sampling"])
	}
}

// URLElicitationRequiredError (-32042, 2025-11-25): the URL-mode entries of
// its data are returned, invalid ones left out, and their completion
// notifications reach the hook.
func TestURLElicitationRequiredError(t *testing.T) {
	var completed []string
	var mu sync.Mutex
	c, f := connectLegacy(t, func(fc *fakeCall) *jsonrpc.Response {
		return errorResponse(fc, jsonrpc.CodeURLElicitationRequired, "This request requires more information.",
			`{"elicitations":[`+
				`{"mode":"url","elicitationId":"a1","url":"https://mcp.example.com/connect?id=a1","message":"Authorize"},`+
				`{"mode":"url","elicitationId":"a2","url":"javascript:alert(1)","message":"bad url"},`+
				`{"mode":"form","elicitationId":"a3","message":"not url mode"},`+
				`{"mode":"url","url":"https://x.example/","message":"no id"}]}`)
	}, &snodo.Options{
		URLElicitation:        &recorder{answer: `{"action":"accept"}`},
		OnElicitationComplete: func(id string) { mu.Lock(); completed = append(completed, id); mu.Unlock() },
	})
	_, err := c.CallTool(context.Background(), "files", nil)
	els, ok := snodo.URLElicitationsRequired(err)
	if !ok || len(els) != 1 || els[0].ElicitationID != "a1" || els[0].URL != "https://mcp.example.com/connect?id=a1" || els[0].Message != "Authorize" {
		t.Fatalf("%v: %+v %v", err, els, ok)
	}
	f.notify("notifications/elicitation/complete", `{"elicitationId":"a2"}`) // invalid entry: not remembered
	f.notify("notifications/elicitation/complete", `{"elicitationId":"a1"}`)
	mu.Lock()
	if len(completed) != 1 || completed[0] != "a1" {
		t.Errorf("completed %v", completed)
	}
	mu.Unlock()
	for _, other := range []error{nil, errors.New("x"), &snodo.Error{Kind: jsonrpc.KindServer, Code: -32603}} {
		if _, ok := snodo.URLElicitationsRequired(other); ok {
			t.Errorf("%v read as -32042", other)
		}
	}
}

// URL mode came in 2025-11-25: an older session neither declares it nor
// answers it.
func TestURLElicitationNotBefore20251125(t *testing.T) {
	urlH := &recorder{answer: `{"action":"accept"}`}
	f := newFake(t, legacyServer("2025-06-18", noMore))
	if _, err := snodo.Connect(context.Background(), f, &snodo.Options{
		ProtocolVersion: "2025-06-18",
		URLElicitation:  urlH,
	}); err != nil {
		t.Fatal(err)
	}
	if p := f.sent("initialize")[0].param("capabilities"); string(p) != `{}` {
		t.Errorf("capabilities %s", p)
	}
	if resp := f.serverRequest(context.Background(), 1, abi.MethodElicitationCreate, urlElicitLegacy); resp.Error == nil || urlH.count() != 0 {
		t.Errorf("answered in 2025-06-18: %+v", resp)
	}
}

// capability returns one member of a 2026-07-28 request's client
// capabilities.
func capability(t *testing.T, fc *fakeCall, name string) string {
	t.Helper()
	var caps map[string]json.RawMessage
	if err := json.Unmarshal(fc.meta("io.modelcontextprotocol/clientCapabilities"), &caps); err != nil {
		t.Fatalf("client capabilities: %v", err)
	}
	return string(caps[name])
}
