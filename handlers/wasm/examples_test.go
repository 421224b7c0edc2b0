package wasm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/snodo/snodo/jsonrpc"
)

const form = `{"message":%q,"requestedSchema":{"type":"object","properties":{
	"name":{"type":"string"},
	"environment":{"type":"string","enum":["staging","production"]},
	"confirm":{"type":"boolean","default":false},
	"replicas":{"type":"integer","default":2}},
	"required":["name","environment"]}}`

func policyAnswer(t *testing.T, m *Module, message string) string {
	t.Helper()
	params, _ := json.Marshal(json.RawMessage(sprintf(form, message)))
	res, err := m.HandleRequest(context.Background(), "elicitation/create", params)
	if err != nil {
		t.Fatal(err)
	}
	return string(res)
}

// Issue item 7: "an elicitation policy answering forms from its config —
// fill defaults, accept or decline by rule".
func TestExampleGoElicitationPolicy(t *testing.T) {
	checkElicitationPolicy(t, ModuleConfig{Name: "elicit-policy", Wasm: goGuest(t, "elicit-policy")})
}

// checkElicitationPolicy runs the elicitation policy example of a
// language (Go, Rust) through the host: the same configuration gives the
// same answers.
func checkElicitationPolicy(t *testing.T, cfg ModuleConfig) {
	t.Helper()
	h := newHost(t)
	cfg.Config = json.RawMessage(`{
		"rules": [
			{"match": "delete", "action": "decline"},
			{"match": "deploy", "action": "accept", "values": {"environment": "staging", "confirm": true}}
		],
		"values": {"name": "Snodo", "environment": "moon"}
	}`)
	m := load(t, h, cfg)
	for _, c := range []struct{ message, want string }{
		{"Delete everything?", `{"action":"decline"}`},
		// The fields come in the form's order.
		{"Deploy now?", `{"action":"accept","content":{"name":"Snodo","environment":"staging","confirm":true,"replicas":2}}`},
		// "moon" is not in the enum of the required field: onMissing.
		{"Who are you?", `{"action":"decline"}`},
	} {
		if got := policyAnswer(t, m, c.message); got != c.want {
			t.Errorf("%q: got %s, want %s", c.message, got, c.want)
		}
	}
	url, err := m.HandleRequest(context.Background(), "elicitation/create", json.RawMessage(`{"mode":"url","message":"Sign in","url":"https://example.com","elicitationId":"e1"}`))
	if err != nil || string(url) != `{"action":"decline"}` {
		t.Fatalf("url mode: %s %v", url, err)
	}
}

// Issue item 7: "a deterministic sampling responder".
func TestExampleGoSamplingResponderIsDeterministic(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "sampling-echo", Wasm: goGuest(t, "sampling-echo"), Config: json.RawMessage(`{"replies":[{"match":"weather","text":"Sunny."}]}`)})
	ask := func(text string, maxTokens int) string {
		params, _ := json.Marshal(map[string]any{"maxTokens": maxTokens, "messages": []any{
			map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": text}}}})
		res, err := m.HandleRequest(context.Background(), "sampling/createMessage", params)
		if err != nil {
			t.Fatal(err)
		}
		return string(res)
	}
	if got, want := ask("How is the weather?", 100), `{"role":"assistant","content":{"type":"text","text":"Sunny."},"model":"snodo-echo","stopReason":"endTurn"}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	first := ask("one two three four", 2)
	if want := `{"role":"assistant","content":{"type":"text","text":"echo: one two"},"model":"snodo-echo","stopReason":"maxTokens"}`; first != want {
		t.Fatalf("got %s, want %s", first, want)
	}
	if again := ask("one two three four", 2); again != first {
		t.Fatalf("same request, different answers: %s and %s", first, again)
	}
}

// Issue item 7: "C with clang + wasi-libc (roots from config)".
func TestExampleCRootsFromConfig(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "roots", Wasm: wasmFile(t, "c/roots/roots.wasm"), Config: json.RawMessage(`["/home/me/project/", "/srv/shared data"]`)})
	res, err := m.HandleRequest(context.Background(), "roots/list", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"roots":[{"uri":"file:///home/me/project","name":"project"},{"uri":"file:///srv/shared%20data","name":"shared data"}]}`; string(res) != want {
		t.Fatalf("got %s, want %s", res, want)
	}
	bad := load(t, h, ModuleConfig{Name: "roots-bad", Wasm: wasmFile(t, "c/roots/roots.wasm"), Config: json.RawMessage(`["relative/path"]`)})
	_, err = bad.HandleRequest(context.Background(), "roots/list", nil)
	wantHandlerError(t, err, jsonrpc.CodeInternalError, "roots: configuration has a path that is not absolute")
}

// Issue item 7, hostile: "reading /etc/passwd" — in the default sandbox
// there is no file to read; with a granted mount there is only what it
// holds.
func TestHostileCReadPasswdFindsNothingInTheSandbox(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "read-passwd", Wasm: wasmFile(t, "c/hostile/read-passwd.wasm")})
	_, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("x"))
	wantHandlerError(t, err, jsonrpc.CodeInternalError, "cannot open /etc/passwd")

	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "etc"), 0o755)
	os.WriteFile(filepath.Join(dir, "etc", "passwd"), []byte("nobody:x:65534:65534::/:/bin/false\n"), 0o644)
	granted := load(t, h, ModuleConfig{Name: "read-passwd-granted", Wasm: wasmFile(t, "c/hostile/read-passwd.wasm"),
		Grants: Grants{Mounts: []Mount{{HostDir: dir, GuestPath: "/", ReadOnly: true}}}})
	res, err := granted.HandleRequest(context.Background(), "elicitation/create", elicit("x"))
	if err != nil || string(res) != `{"action":"accept","content":{"firstLine":"nobody:x:65534:65534::/:/bin/false "}}` {
		t.Fatalf("granted mount: %s %v", res, err)
	}
}

// Issue item 7: "AssemblyScript (a progress consumer that cancels on a
// configured condition)".
func TestExampleAssemblyScriptProgressCancel(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "progress-cancel", Wasm: wasmFile(t, "assemblyscript/progress-cancel/progress-cancel.wasm"),
		Config: json.RawMessage(`{"maxFraction": 0.5, "cancelOnMessage": "retrying"}`)})
	onProgress := m.ProgressFunc(context.Background())
	if err := onProgress(progressParams(2, 10, "working")); err != nil {
		t.Fatalf("2/10: %v", err)
	}
	wantHandlerError(t, onProgress(progressParams(3, 10, "retrying step 3")), jsonrpc.CodeInternalError, "progress-cancel: message contains the configured text")
	wantHandlerError(t, onProgress(progressParams(6, 10, "")), jsonrpc.CodeInternalError, "progress-cancel: progress 6.0/10.0 is over the fraction 0.5")
	if st := m.Stats(); st.Discarded != 0 {
		t.Fatalf("STOP answers discarded instances: %+v", st)
	}
}

// The WAT subscription consumer is tested in consumers_test.go.
