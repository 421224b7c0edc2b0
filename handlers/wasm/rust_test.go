package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/jsonrpc"
)

// The Rust examples (examples/handlers/rust, abi/guest-rust), committed
// beside their source and rebuilt by scripts/build-examples.sh.
func rustExample(t testing.TB, name string) ModuleConfig {
	return ModuleConfig{Name: "rust-" + name, Wasm: wasmFile(t, "rust/"+name+"/"+name+".wasm")}
}

func TestExampleRustElicitationPolicy(t *testing.T) {
	checkElicitationPolicy(t, rustExample(t, "elicit-policy"))
}

func TestExampleRustSamplingAnswer(t *testing.T) {
	h := newHost(t)
	cfg := rustExample(t, "sampling-answer")
	cfg.Config = json.RawMessage(`{"model":"rust-echo","replies":{"weather":"Sunny."}}`)
	m := load(t, h, cfg)
	ask := func(params string) string {
		t.Helper()
		res, err := m.HandleRequest(context.Background(), "sampling/createMessage", json.RawMessage(params))
		if err != nil {
			t.Fatal(err)
		}
		return string(res)
	}
	for _, c := range []struct{ params, want string }{
		{`{"maxTokens":100,"messages":[{"role":"user","content":{"type":"text","text":"How is the weather?"}}]}`,
			`{"role":"assistant","content":{"type":"text","text":"Sunny."},"model":"rust-echo","stopReason":"endTurn"}`},
		// An array of content blocks (MCP 2025-11-25), cut to maxTokens words.
		{`{"maxTokens":2,"messages":[{"role":"user","content":[{"type":"text","text":"one two "},{"type":"text","text":"three"}]}]}`,
			`{"role":"assistant","content":{"type":"text","text":"one two"},"model":"rust-echo","stopReason":"endTurn"}`},
		// Tool use: the module declares samplingTools.
		{`{"maxTokens":10,"messages":[{"role":"user","content":{"type":"text","text":"x"}}],"tools":[{"name":"get_weather","inputSchema":{"type":"object"}}],"toolChoice":{"mode":"auto"}}`,
			`{"role":"assistant","content":[{"type":"tool_use","id":"call-1","name":"get_weather","input":{}}],"model":"rust-echo","stopReason":"toolUse"}`},
	} {
		if got := ask(c.params); got != c.want {
			t.Errorf("%s: got %s, want %s", c.params, got, c.want)
		}
	}
	if !m.Manifest().SamplingTools {
		t.Fatalf("manifest %+v does not declare samplingTools", m.Manifest())
	}
	// Params of the wrong type are -32602, as in the Go guest.
	_, err := m.HandleRequest(context.Background(), "sampling/createMessage", json.RawMessage(`{"messages":"hi"}`))
	wantHandlerError(t, err, jsonrpc.CodeInvalidParams, "invalid sampling/createMessage params: messages must be an array")
}

func TestExampleRustProgressConsumer(t *testing.T) {
	h := newHost(t)
	cfg := rustExample(t, "progress-stop")
	cfg.Config = json.RawMessage(`{"stopAt": 5, "onMessage": "stuck"}`)
	m := load(t, h, cfg)
	onProgress := m.ProgressFunc(context.Background())
	if err := onProgress(progressParams(1, 10, "working")); err != nil {
		t.Fatalf("1/10: %v, want the request to go on", err)
	}
	wantHandlerError(t, onProgress(progressParams(2, 10, "stuck at step 2")), -32000, "cancelled on progress message \"stuck at step 2\"")
	wantHandlerError(t, onProgress(progressParams(5, 10, "")), jsonrpc.CodeInternalError, `wasm module "rust-progress-stop" cancelled the request`)
	if st := m.Stats(); st.Discarded != 0 {
		t.Fatalf("ERROR and STOP answers discarded instances: %+v", st)
	}
}

func TestExampleRustSubscriptionConsumer(t *testing.T) {
	var buf syncBuffer
	h, err := NewHost(HostConfig{NoDiskCache: true, Logger: newJSONLogger(&buf)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	cfg := rustExample(t, "event-count")
	cfg.Config = json.RawMessage(`{"after": 3}`)
	m := load(t, h, cfg)
	for i := 1; i <= 3; i++ {
		stop, err := m.ConsumeEvent(context.Background(), "notifications/resources/updated", json.RawMessage(fmt.Sprintf(`{"uri":"file:///%d"}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		if stop != (i == 3) {
			t.Fatalf("event %d: stop %v", i, stop)
		}
	}
	if want := `event 2 notifications/resources/updated file:///2`; !contains(buf.Bytes(), want) {
		t.Fatalf("the consumer did not log the event: %s", buf.Bytes())
	}
}

// rustHostile makes one call of the hostile Rust module, which must fail
// -32603 naming the module and parts; the instance is thrown away, the
// module's next call gets a fresh one and succeeds, and another module of
// the same host, busy meanwhile, is not disturbed.
func rustHostile(t *testing.T, message string, parts ...string) *jsonrpc.Error {
	t.Helper()
	h := newHost(t)
	bad := load(t, h, rustExample(t, "hostile"))
	good := load(t, h, rustExample(t, "elicit-policy"))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var goodErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := good.HandleRequest(context.Background(), "elicitation/create", elicit("hello")); err != nil {
				goodErr = err
				return
			}
		}
	}()
	_, err := bad.HandleRequest(context.Background(), "elicitation/create", elicit(message))
	close(stop)
	wg.Wait()
	e := wantHandlerError(t, err, jsonrpc.CodeInternalError, append([]string{`wasm module "rust-hostile"`}, parts...)...)
	if goodErr != nil {
		t.Fatalf("the other module failed while the hostile one crashed: %v", goodErr)
	}
	if st := good.Stats(); st.Discarded != 0 {
		t.Fatalf("the other module lost instances: %+v", st)
	}
	if st := bad.Stats(); st.Discarded != 1 || st.Alive != 0 {
		t.Fatalf("after the failed call: %+v, want the instance discarded", st)
	}
	res, err := bad.HandleRequest(context.Background(), "elicitation/create", elicit("fine"))
	if err != nil || string(res) != `{"action":"accept","content":{}}` {
		t.Fatalf("next call: %s %v, want a fresh instance to answer", res, err)
	}
	if st := bad.Stats(); st.Created != 2 {
		t.Fatalf("stats %+v, want two instances created", st)
	}
	return e
}

// A Rust panic is answered -32603 with the panic's message, escaped: its
// newline and ANSI escape reach neither the error message nor a terminal
// raw.
func TestRustPanicIsInternalErrorWithEscapedMessage(t *testing.T) {
	e := rustHostile(t, "panic", `panicked: guest gave up\n\x1b[31mforged (at examples/handlers/rust/hostile/src/lib.rs:`)
	if strings.ContainsAny(e.Message, "\x1b") {
		t.Fatalf("raw escape in the message %q", e.Message)
	}
	var data struct{ Cause, Stderr string }
	if err := json.Unmarshal(e.Data, &data); err != nil || !strings.Contains(data.Cause, "panicked: guest gave up") {
		t.Fatalf("error data %s does not name the panic", e.Data)
	}
}

func TestRustStackOverflowIsInternalError(t *testing.T) {
	rustHostile(t, "overflow", "trap: wasm error:")
}

func TestRustAllocationFailureIsInternalError(t *testing.T) {
	rustHostile(t, "alloc", "memory allocation of 1073741824 bytes failed")
}

// A module error object is answered as given, and the instance kept.
func TestRustGuestErrorIsAnsweredAsGiven(t *testing.T) {
	h := newHost(t)
	m := load(t, h, rustExample(t, "hostile"))
	_, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("error"))
	wantHandlerError(t, err, -32000, "refused by policy")
	if st := m.Stats(); st.Discarded != 0 {
		t.Fatalf("an error answer discarded the instance: %+v", st)
	}
}

// The Rust guest's JSON parser bounds nesting: a request nested 100,000
// deep is refused -32602 by the module, which neither overflows its stack
// nor loses its instance.
func TestRustGuestRefusesDeepNestingWithoutCrashing(t *testing.T) {
	h := newHost(t)
	m := load(t, h, rustExample(t, "elicit-policy"))
	deep := `{"message":"x","_meta":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`
	_, err := m.HandleRequest(context.Background(), "elicitation/create", json.RawMessage(deep))
	wantHandlerError(t, err, jsonrpc.CodeInvalidParams, "invalid request envelope", "nested too deeply")
	if st := m.Stats(); st.Discarded != 0 {
		t.Fatalf("deep nesting discarded the instance: %+v", st)
	}
	if got := policyAnswer(t, m, "hello"); !strings.HasPrefix(got, `{"action":`) {
		t.Fatalf("next call: %s", got)
	}
}

// examples/handlers/rust/tool-guard, an interceptor from the Rust guest:
// a tool on the deny list is denied with -32030 and its reason, another
// passes unchanged; a secret in a result (plain, \u-escaped, in a key) is
// redacted, a result without one passes byte for byte, an error answer as
// it is; the manifest says ABI version 2 and what it intercepts.
func TestExampleRustToolGuard(t *testing.T) {
	h := newHost(t)
	cfg := rustExample(t, "tool-guard")
	cfg.Config = json.RawMessage(`{"deny":["delete_file"],"redact":["hunter2"]}`)
	m := load(t, h, cfg)
	if mf := m.Manifest(); mf.ABI != 2 || mf.Intercept == nil || !mf.Intercept.Requests || !mf.Intercept.Results ||
		strings.Join(mf.Intercept.Methods, ",") != "tools/call,tasks/result" {
		t.Fatalf("manifest %+v", mf)
	}
	c := intercept.NewChain(m)
	ctx := context.Background()
	call := func(name string) *intercept.Request {
		b, _ := json.Marshal(map[string]any{"name": name, "arguments": map[string]any{"path": "/x"}})
		return &intercept.Request{Method: "tools/call", Params: b, Era: "legacy", ProtocolVersion: "2025-11-25"}
	}
	p, err := c.Request(ctx, call("read_file"))
	if err != nil || string(p) != `{"arguments":{"path":"/x"},"name":"read_file"}` {
		t.Fatalf("read_file: %s %v", p, err)
	}
	_, err = c.Request(ctx, call("delete_file"))
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != intercept.CodeDenied || !strings.Contains(string(je.Data), `tool \"delete_file\" is on this client's deny list`) {
		t.Fatalf("delete_file: %v (data %s)", err, dataOf(err))
	}
	for in, want := range map[string]string{
		`{"content":[{"type":"text","text":"password: hunter2, again hunter2"}]}`: `{"content":[{"type":"text","text":"password: [REDACTED], again [REDACTED]"}]}`,
		`{"content":[{"type":"text","text":"\u0068unter2"}]}`:                     `{"content":[{"type":"text","text":"[REDACTED]"}]}`,
		`{"structuredContent":{"hunter2":1}}`:                                     `{"structuredContent":{"[REDACTED]":1}}`,
		`{"content": [{"type":"text","text":"hunter"}]}`:                          `{"content": [{"type":"text","text":"hunter"}]}`,
	} {
		got, err := c.Result(ctx, &intercept.Result{Request: *call("read_file"), Result: json.RawMessage(in)})
		if err != nil || string(got) != want {
			t.Errorf("%s:\n got %s %v\nwant %s", in, got, err, want)
		}
	}
	_, err = c.Result(ctx, &intercept.Result{Request: *call("read_file"), Error: &jsonrpc.Error{Code: -32000, Message: "no"}})
	if !errors.As(err, &je) || je.Code != -32000 || je.Message != "no" {
		t.Fatalf("error answer: %v", err)
	}
}

func dataOf(err error) string {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return string(je.Data)
	}
	return ""
}
