package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/jsonrpc"
)

// examples/handlers/c/tool-deny and examples/handlers/assemblyscript/tool-deny
// (with assemblyscript/snodo.ts): the same interceptor in C and in
// AssemblyScript, run through the host.
func TestExampleCToolDeny(t *testing.T) {
	checkToolDeny(t, "c/tool-deny/tool-deny.wasm")
}

func TestExampleAssemblyScriptToolDeny(t *testing.T) {
	checkToolDeny(t, "assemblyscript/tool-deny/tool-deny.wasm")
}

// checkToolDeny: the manifest says ABI version 2 and tools/call requests
// only; a tool off the deny list passes unchanged; a listed one is denied
// with -32030 and the module's reason however its name is escaped, and
// when a "name" inside its arguments comes first; the name is compared
// exactly, from the params' top level only; a call without a string name
// is denied (-32602 in the module's error); a bad configuration denies
// every call and says what is wrong (-32603).
func checkToolDeny(t *testing.T, file string) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "tool-deny", Wasm: wasmFile(t, file),
		Config: json.RawMessage(`{"deny":["delete_file","move\u005ffile","say \"hi\"\u0001\ud83d\ude00"]}`)})
	if mf := m.Manifest(); mf.ABI != 2 || mf.Intercept == nil || !mf.Intercept.Requests || mf.Intercept.Results ||
		strings.Join(mf.Intercept.Methods, ",") != "tools/call" {
		t.Fatalf("manifest %+v", mf)
	}
	c := intercept.NewChain(m)
	ctx := context.Background()
	req := func(params string) (json.RawMessage, error) {
		return c.Request(ctx, &intercept.Request{Method: "tools/call", Params: json.RawMessage(params), Era: "legacy", ProtocolVersion: "2025-11-25"})
	}
	for _, p := range []string{
		`{"name":"read_file","arguments":{"path":"/x"}}`,
		// A denied name elsewhere than the params' own "name" is not the tool's.
		`{"arguments":{"name":"delete_file"},"name":"read_file"}`,
		`{"name":"read_file","arguments":{"tool":{"name":"delete_file"}},"x":["delete_file"]}`,
		`{"name":"Delete_File"}`,
		`{"name":"delete_file2"}`,
		`{"name":"delete"}`,
		`{"name":"delete_file\u0000"}`,
	} {
		got, err := req(p)
		if err != nil || string(got) != p {
			t.Errorf("%s: got %s %v, want it unchanged", p, got, err)
		}
	}
	denied := func(p, why string) {
		t.Helper()
		_, err := req(p)
		var je *jsonrpc.Error
		var data struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if !errors.As(err, &je) || je.Code != intercept.CodeDenied || !strings.Contains(je.Message, `interceptor "tool-deny"`) ||
			json.Unmarshal(je.Data, &data) != nil || !strings.Contains(data.Error.Message, why) || data.Error.Code != -32602 {
			t.Errorf("%s: got %v (data %s), want -32030 with %q", p, err, dataOf(err), why)
		}
	}
	const listed = "this tool is on this client's deny list: "
	denied(`{"name":"delete_file","arguments":{"path":"/x"}}`, listed+"delete_file")
	denied(`{"name":"move_file"}`, listed+"move_file")
	denied(`{"name":"delete\u005ffile"}`, listed+"delete_file")
	denied(`{"name":"\u0064\u0065lete_file"}`, listed+"delete_file")
	denied(`{"arguments":{"name":"read_file","x":"}\"name\":"},"name":"delete_file"}`, listed+"delete_file")
	denied(`{ "arguments" : [ {"name" : "read_file"} , 1.5e3, true, null ] , "name" : "delete_file" }`, listed+"delete_file")
	// A name with a quote, a control character and an emoji (a surrogate
	// pair when escaped) comes back in a valid error object (the host shows
	// the control character as \x01).
	denied(`{"name":"say \"hi\"\u0001😀"}`, listed+`say "hi"\x01😀`)
	denied(`{"arguments":{"path":"/x"}}`, "tools/call without a tool name")
	denied(`{"name":7}`, "tools/call without a tool name")
	denied(`{"name":null}`, "tools/call without a tool name")
	denied(`{}`, "tools/call without a tool name")

	for _, cfg := range []string{`null`, `{"deny":"delete_file"}`, `{"deny":[1]}`, `{"deny":[""]}`, `["delete_file"]`} {
		bad := load(t, h, ModuleConfig{Name: "tool-deny", Wasm: wasmFile(t, file), Config: json.RawMessage(cfg)})
		_, err := intercept.NewChain(bad).Request(ctx, &intercept.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"read_file"}`)})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != intercept.CodeDenied || !strings.Contains(string(je.Data), `"code":-32603,"message":"tool-deny: configuration`) ||
			!strings.Contains(string(je.Data), `deny`) {
			t.Errorf("configuration %s: got %v (data %s), want every call denied saying what is wrong", cfg, err, dataOf(err))
		}
	}
}
