package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/jsonrpc"
)

// watString escapes s for a WAT string literal.
func watString(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ' ' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "\\%02x", c)
		}
	}
	return b.String()
}

const interceptManifest = `{"abi":2,"intercept":{"requests":true,"results":true,"methods":["tools/call"]}}`

// interceptorWAT is an interceptor module with manifest whose entry points
// run reqBody and resBody; $out (at 4096) holds out, $outLen its length.
// The input buffer starts at 65536+16, with {"result": just before it.
func interceptorWAT(t testing.TB, manifest, out, reqBody, resBody string) []byte {
	t.Helper()
	exports := ""
	if reqBody != "" {
		exports += `(func (export "snodo_intercept_request") (param $ptr i32) (param $len i32) (result i32) ` + reqBody + ")\n"
	}
	if resBody != "" {
		exports += `(func (export "snodo_intercept_result") (param $ptr i32) (param $len i32) (result i32) ` + resBody + ")\n"
	}
	return watModule(t, fmt.Sprintf(`(module
  (import "snodo" "set_output" (func $set_output (param i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 16) "%s")
  (data (i32.const 4096) "%s")
  (data (i32.const 65542) "{\"result\":")
  (global $outLen i32 (i32.const %d))
  (func (export "snodo_describe") (result i32)
    (call $set_output (i32.const 16) (i32.const %d))
    (i32.const 0))
  (func (export "snodo_alloc") (param $n i32) (result i32)
    (local $pages i32)
    (local.set $pages
      (i32.add (i32.const 2)
        (i32.shr_u (i32.add (local.get $n) (i32.const 65535)) (i32.const 16))))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
          (then (return (i32.const 0))))))
    (i32.const 65552))
  (func $answer (result i32)
    (call $set_output (i32.const 4096) (global.get $outLen))
    (i32.const 0))
  (func $echoResult (param $ptr i32) (param $len i32)
    (i32.store8 (i32.add (local.get $ptr) (local.get $len)) (i32.const 125))
    (call $set_output (i32.const 65542) (i32.add (local.get $len) (i32.const 11))))
  %s)`, watString(manifest), watString(out), len(out), len(manifest), exports))
}

// fixed answers every call of both entry points with status and, unless
// out is "", the output out.
func fixed(t testing.TB, status int, out string) []byte {
	body := fmt.Sprintf("(drop (call $answer)) (i32.const %d)", status)
	if out == "" {
		body = fmt.Sprintf("(i32.const %d)", status)
	}
	return interceptorWAT(t, interceptManifest, out, body, body)
}

func toolCall(params string) *intercept.Request {
	return &intercept.Request{Method: "tools/call", Params: json.RawMessage(params), Server: "fs", Era: "legacy", ProtocolVersion: "2025-11-25"}
}

// ABI.md §8.1: the host checks the interceptor exports a manifest relies
// on, and their types, with a refusal that says what is wrong.
func TestInterceptorExportsChecked(t *testing.T) {
	h := newHost(t)
	_, err := h.Load(context.Background(), ModuleConfig{Name: "half", Wasm: interceptorWAT(t, interceptManifest, "", "(i32.const 0)", "")})
	if err == nil || !strings.Contains(err.Error(), `manifest says "intercept": {"results": true} but the module does not export "snodo_intercept_result"`) {
		t.Fatalf("%v", err)
	}
	bad := watModule(t, `(module
  (import "snodo" "set_output" (func $set_output (param i32 i32)))
  (memory (export "memory") 1)
  (func (export "snodo_describe") (result i32) (i32.const 0))
  (func (export "snodo_alloc") (param i32) (result i32) (i32.const 16))
  (func (export "snodo_intercept_request") (param i32) (result i32) (i32.const 0)))`)
	_, err = h.Load(context.Background(), ModuleConfig{Name: "typed", Wasm: bad})
	if err == nil || !strings.Contains(err.Error(), `export "snodo_intercept_request" has type (i32) -> i32, want (i32, i32) -> i32`) {
		t.Fatalf("%v", err)
	}
	v1 := interceptorWAT(t, `{"abi":1,"intercept":{"requests":true}}`, "", "(i32.const 0)", "")
	_, err = h.Load(context.Background(), ModuleConfig{Name: "v1", Wasm: v1})
	if err == nil || !strings.Contains(err.Error(), `interceptors need "abi": 2`) {
		t.Fatalf("%v", err)
	}
	m := load(t, h, ModuleConfig{Name: "both", Wasm: fixed(t, 0, "")})
	if !m.Intercepts("tools/call", false) || !m.Intercepts("tools/call", true) || m.Intercepts("tools/list", true) {
		t.Fatalf("%+v", m.Manifest())
	}
}

// ABI.md §8.2, §8.3: OK continues, ERROR denies with the module's reason,
// REPLACE rewrites or replaces; methods the manifest does not list are not
// given to the module.
func TestInterceptorDecisions(t *testing.T) {
	h := newHost(t)
	ctx := context.Background()
	ok := load(t, h, ModuleConfig{Name: "ok", Wasm: fixed(t, 0, "")})
	if d, err := ok.InterceptRequest(ctx, toolCall(`{"name":"t"}`)); err != nil || d.Action != intercept.Continue {
		t.Fatalf("%+v %v", d, err)
	}
	deny := load(t, h, ModuleConfig{Name: "deny", Wasm: fixed(t, 1, `{"code":1,"message":"outside \u001b[31m/srv"}`)})
	_, err := intercept.NewChain(deny).Request(ctx, toolCall(`{"name":"t"}`))
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != intercept.CodeDenied || !strings.Contains(je.Message, `denied by interceptor "deny"`) ||
		!strings.Contains(je.Message, `outside \x1b[31m/srv`) {
		t.Fatalf("%v", err)
	}
	if d, err := deny.InterceptRequest(ctx, &intercept.Request{Method: "tools/list", Params: json.RawMessage(`{}`)}); err != nil || d.Action != intercept.Continue {
		t.Fatalf("an unlisted method reached the module: %+v %v", d, err)
	}
	rw := load(t, h, ModuleConfig{Name: "rw", Wasm: fixed(t, 3, `{"name":"t","arguments":{"path":"/srv/a"}}`)})
	p, err := intercept.NewChain(rw).Request(ctx, toolCall(`{"name":"t","arguments":{"path":"../a"}}`))
	if err != nil || string(p) != `{"name":"t","arguments":{"path":"/srv/a"}}` {
		t.Fatalf("%s %v", p, err)
	}
	rep := load(t, h, ModuleConfig{Name: "rep", Wasm: fixed(t, 3, `{"error":{"code":-32001,"message":"gone"}}`)})
	_, err = intercept.NewChain(rep).Result(ctx, &intercept.Result{Request: *toolCall(`{"name":"t"}`), Result: json.RawMessage(`{"content":[]}`)})
	if !errors.As(err, &je) || je.Code != -32001 || je.Message != "gone" {
		t.Fatalf("%v", err)
	}
}

// ABI.md §8.3: the result interceptor's input is the request, its context
// and the server's answer, as valid JSON (an echo module gives it back as
// its replacement).
func TestInterceptResultInput(t *testing.T) {
	h := newHost(t)
	echo := load(t, h, ModuleConfig{Name: "echo", Wasm: interceptorWAT(t, interceptManifest, "",
		"(i32.const 0)", "(call $echoResult (local.get $ptr) (local.get $len)) (i32.const 3)")})
	r := &intercept.Result{Request: *toolCall(`{"name":"t"}`), Error: &jsonrpc.Error{Code: -32602, Message: "bad \xff"}}
	r.Caller = "host\n1"
	res, err := intercept.NewChain(echo).Result(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(res, &got); err != nil {
		t.Fatalf("%s: %v", res, err)
	}
	want := `{"caller":"host\n1","era":"legacy","error":{"code":-32602,"message":"bad �"},"method":"tools/call","params":{"name":"t"},"protocolVersion":"2025-11-25","server":"fs"}`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Fatalf("input\n%s\nwant\n%s", b, want)
	}
}

// ABI.md §8.4: a hostile interceptor fails closed — the call fails with
// -32603 naming the module and the cause, nothing is sent or given — and
// its instance is thrown away.
func TestHostileInterceptorsFailClosed(t *testing.T) {
	h := newHost(t)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		wasm    []byte
		timeout time.Duration
		want    string
	}{
		"trap":           {interceptorWAT(t, interceptManifest, "", "(unreachable)", "(unreachable)"), 0, "trap: wasm error: unreachable"},
		"loop":           {interceptorWAT(t, interceptManifest, "", "(loop $l (br $l)) (i32.const 0)", "(loop $l (br $l)) (i32.const 0)"), 200 * time.Millisecond, "deadline of 200ms exceeded"},
		"huge":           {interceptorWAT(t, interceptManifest, "", "(call $set_output (i32.const 0) (i32.const 104857600)) (i32.const 3)", "(call $set_output (i32.const 0) (i32.const 104857600)) (i32.const 3)"), 0, "exceeds the limit of 8 MiB"},
		"bad json":       {fixed(t, 3, `{"name":"t",`), 0, "invalid output"},
		"not object":     {fixed(t, 3, `["t"]`), 0, "invalid output"},
		"ok with output": {fixed(t, 0, `{}`), 0, "returned OK with output"},
		"stop":           {fixed(t, 2, ""), 0, "returned status STOP (want OK, ERROR or REPLACE)"},
		"status 7":       {fixed(t, 7, ""), 0, "returned status invalid status 7"},
		"bad error":      {fixed(t, 1, `{"message":"no code"}`), 0, `error output has no "code"`},
	} {
		t.Run(name, func(t *testing.T) {
			m := load(t, h, ModuleConfig{Name: name, Wasm: tc.wasm, Timeout: tc.timeout})
			c := intercept.NewChain(m)
			for i := range 2 {
				_, err := c.Request(ctx, toolCall(`{"name":"t"}`))
				e := wantHandlerError(t, err, jsonrpc.CodeInternalError, `interceptor "`+name+`" failed on tools/call, so the request was not sent`, tc.want)
				if !errors.Is(err, intercept.ErrFailed) || !strings.Contains(string(e.Data), `"module":"`+name+`"`) {
					t.Fatalf("%v %s", err, e.Data)
				}
				if st := m.Stats(); st.Discarded != int64(i+1) {
					t.Fatalf("after failed call %d: %+v, want the instance discarded", i+1, st)
				}
			}
			_, err := c.Result(ctx, &intercept.Result{Request: *toolCall(`{"name":"t"}`), Result: json.RawMessage(`{"content":[]}`)})
			wantHandlerError(t, err, jsonrpc.CodeInternalError, `interceptor "`+name+`" failed on tools/call, so the answer was withheld`)
		})
	}
	// A well-formed rewrite into an invalid request fails closed too.
	m := load(t, h, ModuleConfig{Name: "rename", Wasm: fixed(t, 3, `{"name":"delete_all"}`)})
	_, err := intercept.NewChain(m).Request(ctx, toolCall(`{"name":"read_file"}`))
	wantHandlerError(t, err, jsonrpc.CodeInternalError, `interceptor "rename" failed`, `changes "name"`)
}

// FuzzInterceptEnvelope: whatever a request and an answer hold, the host
// builds a valid envelope, an echo module reads it and the host takes its
// answer back, or the call fails closed; the host never crashes.
func FuzzInterceptEnvelope(f *testing.F) {
	h := newHost(f)
	echo := load(f, h, ModuleConfig{Name: "echo", Wasm: interceptorWAT(f, `{"abi":2,"intercept":{"results":true}}`, "",
		"", "(call $echoResult (local.get $ptr) (local.get $len)) (i32.const 3)")})
	f.Add("tools/call", `{"name":"t"}`, `{"content":[]}`, "fs", "")
	f.Add("x\xff\"", `{"a":"\u0000"}`, `{"a":1,"A":2}`, "\x1b[2J", "c\\")
	f.Add("", `[]`, `nope`, "", "")
	f.Fuzz(func(t *testing.T, method, params, result, server, caller string) {
		r := &intercept.Result{Request: intercept.Request{Method: method, Params: json.RawMessage(params), Server: server, Caller: caller, Era: "modern", ProtocolVersion: "2026-07-28"},
			Result: json.RawMessage(result)}
		if intercept.CheckUnambiguous(r.Params) != nil {
			r.Params = json.RawMessage(`{}`)
		}
		res, err := intercept.NewChain(echo).Result(context.Background(), r)
		if err != nil {
			var je *jsonrpc.Error
			if !errors.As(err, &je) {
				t.Fatalf("%v", err)
			}
			if je.Code == jsonrpc.CodeInternalError && je.Kind == jsonrpc.KindHandler {
				t.Fatalf("the echo module failed on a valid envelope: %v", err)
			}
			return
		}
		var got struct {
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(res, &got); err != nil {
			t.Fatalf("%s: %v", res, err)
		}
		if !json.Valid(got.Result) {
			t.Fatalf("%s", res)
		}
	})
}
