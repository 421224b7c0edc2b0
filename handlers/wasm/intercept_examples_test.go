package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/jsonrpc"
)

// confineModule loads examples/handlers/go/confine-paths confining to
// prefix, with prefix mounted read-only at /data when mount is set.
func confineModule(t *testing.T, h *Host, prefix string, mount bool) *Module {
	cfg := map[string]any{"prefix": prefix}
	mc := ModuleConfig{Name: "confine-paths", Wasm: goGuest(t, "confine-paths")}
	if mount {
		cfg["mount"] = "/data"
		mc.Grants.Mounts = []Mount{{HostDir: prefix, GuestPath: "/data", ReadOnly: true}}
	}
	mc.Config, _ = json.Marshal(cfg)
	return load(t, h, mc)
}

func readFile(path string) *intercept.Request {
	b, _ := json.Marshal(map[string]any{"name": "read_file", "arguments": map[string]any{"path": path}})
	return &intercept.Request{Method: "tools/call", Params: b, Era: "legacy", ProtocolVersion: "2025-11-25"}
}

// examples/handlers/go/confine-paths: paths inside the prefix go, relative
// and dotted ones are sent clean and absolute, and every way out — an
// outside path, "..", a look-alike prefix, "~", a NUL, a symlink the
// module can see — is denied with -32030.
func TestExampleConfinePaths(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "docs", "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(root, "etc-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("docs", filepath.Join(root, "docs-link")); err != nil {
		t.Fatal(err)
	}
	h := newHost(t)
	c := intercept.NewChain(confineModule(t, h, root, true))
	ctx := context.Background()
	for in, want := range map[string]string{
		root + "/docs/a.txt":           root + "/docs/a.txt",
		"docs/a.txt":                   root + "/docs/a.txt",
		root + "/docs/../docs/./a.txt": root + "/docs/a.txt",
		root:                           root,
		root + "/new/file.txt":         root + "/new/file.txt",
	} {
		p, err := c.Request(ctx, readFile(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		var got struct{ Arguments struct{ Path string } }
		_ = json.Unmarshal(p, &got)
		if got.Arguments.Path != want {
			t.Errorf("%s: sent %s, want %s", in, p, want)
		}
	}
	for in, why := range map[string]string{
		"/etc/passwd":                "is outside",
		root + "/../etc/passwd":      "is outside",
		"../../etc/passwd":           "is outside",
		root + "x/secret":            "is outside",
		"~/.ssh/id_rsa":              "starts with ~",
		root + "/docs/a.txt\x00.png": "NUL byte",
		root + `\..\x`:               "backslash",
		root + "/etc-link/passwd":    "goes through a symlink",
		root + "/docs-link/a.txt":    "goes through a symlink",
	} {
		_, err := c.Request(ctx, readFile(in))
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != intercept.CodeDenied || !strings.Contains(je.Message, why) || !strings.Contains(je.Message, `interceptor "confine-paths"`) {
			t.Errorf("%q: %v, want a denial saying %q", in, err, why)
		}
	}
	// An array of paths is checked element by element.
	_, err := c.Request(ctx, &intercept.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"read_multiple_files","arguments":{"paths":["` + root + `/docs/a.txt","/etc/shadow"]}}`)})
	if !errors.Is(err, intercept.ErrDenied) || !strings.Contains(err.Error(), "[1]") {
		t.Fatalf("%v", err)
	}
	// Without its prefix, the module denies nothing: it fails closed.
	bad := load(t, h, ModuleConfig{Name: "confine-paths-unset", Wasm: goGuest(t, "confine-paths")})
	_, err = intercept.NewChain(bad).Request(ctx, readFile(root+"/docs/a.txt"))
	if !errors.Is(err, intercept.ErrDenied) || !strings.Contains(err.Error(), `"prefix" must be a clean absolute path`) {
		t.Fatalf("%v", err)
	}
}

// secret is an API-key-like token the redaction example must remove.
const secret = "sk-live-4f9c2a7e1b3d8f6a0c5e9b2d7a1f3c8e"

// examples/handlers/go/redact-secrets: a planted secret is redacted from a
// result — written plainly or with \u escapes — and from an error; a
// result without one passes unchanged; look-alikes inside words stay.
func TestExampleRedactSecrets(t *testing.T) {
	h := newHost(t)
	c := intercept.NewChain(load(t, h, ModuleConfig{Name: "redact-secrets", Wasm: goGuest(t, "redact-secrets"),
		Config: json.RawMessage(`{"prefixes":["acme_live_"]}`)}))
	ctx := context.Background()
	res := func(result string) (string, error) {
		b, err := c.Result(ctx, &intercept.Result{Request: *readFile("/srv/.env"), Result: json.RawMessage(result)})
		return string(b), err
	}
	for in, want := range map[string]string{
		`{"content":[{"type":"text","text":"OPENAI_API_KEY=` + secret + `\nAWS=AKIAIOSFODNN7EXAMPLE"}]}`: `{"content":[{"type":"text","text":"OPENAI_API_KEY=[REDACTED]\nAWS=[REDACTED]"}]}`,
		`{"content":[{"type":"text","text":"\u0073k-live-4f9c2a7e1b3d8f6a0c5e9b2d7a1f3c8e"}]}`:           `{"content":[{"type":"text","text":"[REDACTED]"}]}`,
		`{"content":[{"type":"text","text":"line\n` + secret + `\t` + secret + `"}]}`:                    `{"content":[{"type":"text","text":"line\n[REDACTED]\t[REDACTED]"}]}`,
		`{"content":[{"type":"text","text":"acme_live_0123456789abcdef0123"}]}`:                          `{"content":[{"type":"text","text":"[REDACTED]"}]}`,
		`{"content":[{"type":"text","text":"task-0123456789abcdefghijklmnop is fine"}]}`:                 `{"content":[{"type":"text","text":"task-0123456789abcdefghijklmnop is fine"}]}`,
	} {
		got, err := res(in)
		if err != nil || got != want {
			t.Errorf("%s:\n got %s %v\nwant %s", in, got, err, want)
		}
	}
	_, err := c.Result(ctx, &intercept.Result{Request: *readFile("/srv/.env"), Error: &jsonrpc.Error{Code: -32603, Message: "cannot use " + secret}})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != -32603 || strings.Contains(je.Message, secret) || !strings.Contains(je.Message, "[REDACTED]") {
		t.Fatalf("%v", err)
	}
}

// examples/handlers/wat/intercept-noop lets everything through.
func TestExampleInterceptNoop(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "intercept-noop", Wasm: wasmFile(t, "wat/intercept-noop/intercept-noop.wasm")})
	c := intercept.NewChain(m)
	p, err := c.Request(context.Background(), readFile("/x"))
	if err != nil || !strings.Contains(string(p), `"/x"`) {
		t.Fatalf("%s %v", p, err)
	}
	r, err := c.Result(context.Background(), &intercept.Result{Request: *readFile("/x"), Result: json.RawMessage(`{"content":[]}`)})
	if err != nil || string(r) != `{"content":[]}` {
		t.Fatalf("%s %v", r, err)
	}
}

// examples/handlers/go/shell-guard, on the table of its testdata: every
// harmless command line goes unchanged, every dangerous one is denied with
// -32030 naming the module; so is a call without the command, or with a
// command that is not a string. Other tools pass.
func TestExampleShellGuard(t *testing.T) {
	b, err := os.ReadFile("../../examples/handlers/go/shell-guard/testdata/commands.json")
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Config              json.RawMessage
		Harmless, Dangerous []string
	}
	if err := json.Unmarshal(b, &table); err != nil {
		t.Fatal(err)
	}
	h := newHost(t)
	c := intercept.NewChain(load(t, h, ModuleConfig{Name: "shell-guard", Wasm: goGuest(t, "shell-guard"), Config: table.Config}))
	ctx := context.Background()
	run := func(tool string, args any) (json.RawMessage, error) {
		p, _ := json.Marshal(map[string]any{"name": tool, "arguments": args})
		return c.Request(ctx, &intercept.Request{Method: "tools/call", Params: p, Era: "legacy", ProtocolVersion: "2025-11-25"})
	}
	for _, s := range table.Harmless {
		p, err := run("run_command", map[string]any{"command": s})
		if err != nil || !strings.Contains(string(p), `"run_command"`) {
			t.Errorf("harmless %q: %s %v, want it sent", s, p, err)
		}
	}
	denied := func(what string, err error, why string) {
		t.Helper()
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != intercept.CodeDenied || !strings.Contains(je.Message, `interceptor "shell-guard"`) || !strings.Contains(je.Message, why) {
			t.Errorf("%s: %v, want a denial saying %q", what, err, why)
		}
	}
	for _, s := range table.Dangerous {
		_, err := run("run_command", map[string]any{"command": s})
		denied(s, err, "command refused")
	}
	for _, tool := range []string{"shell", "exec"} {
		_, err := run(tool, map[string]any{"command": "sudo rm -rf /"})
		denied(tool, err, "command refused")
	}
	_, err = c.Request(ctx, &intercept.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"run_command","arguments":{"command":"\u0072m -rf \u002f"}}`)})
	denied(`\u0072m -rf \u002f`, err, "rm -r of /")
	_, err = run("run_command", map[string]any{})
	denied("no command", err, `argument "command" is missing`)
	_, err = run("run_command", map[string]any{"command": []string{"rm", "-rf", "/"}})
	denied("an array", err, "must be the command line, a string, not an array")
	if _, err := run("read_file", map[string]any{"command": "rm -rf /"}); err != nil {
		t.Errorf("another tool: %v, want it to pass", err)
	}
	// A tool name a lenient server would match, and argv given apart.
	_, err = run("Run-Command", map[string]any{"command": "rm -rf /"})
	denied("Run-Command", err, "rm -r of /")
	_, err = run("run_command", map[string]any{"command": "rm", "args": []string{"-rf", "/"}})
	denied("args apart", err, "rm -r of /")
	if _, err := run("run_command", map[string]any{"command": "ls", "args": []string{"-la", "it's here"}}); err != nil {
		t.Errorf("harmless args apart: %v, want it sent", err)
	}
	// A lone surrogate, which decoders read differently.
	_, err = c.Request(ctx, &intercept.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"run_command","arguments":{"command":"rm -rf /\ud800"}}`)})
	denied("a lone surrogate", err, "U+FFFD")
}

// examples/handlers/go/add-meta adds its entries to the _meta of every
// request — params absent or not — keeping the request's own members and
// replacing a caller's look-alike of a configured key; a configuration
// naming a key MCP reserves fails every call with an error that says so.
func TestExampleAddMeta(t *testing.T) {
	h := newHost(t)
	c := intercept.NewChain(load(t, h, ModuleConfig{Name: "add-meta", Wasm: goGuest(t, "add-meta"),
		Config: json.RawMessage(`{"meta":{"com.example/tenant":"acme","com.example/request-source":"snodo"}}`)}))
	ctx := context.Background()
	for params, want := range map[string]string{
		`{}`: `{"_meta":{"com.example/request-source":"snodo","com.example/tenant":"acme"}}`,
		// A caller's key with ſ for s is the operator's key to a decoder.
		`{"_meta":{"com.example/request-ſource":"evil"}}`: `{"_meta":{"com.example/request-source":"snodo","com.example/tenant":"acme"}}`,
		// <, > and & are sent as they came: the host requires the name
		// byte for byte.
		`{"name":"a<b&c","arguments":{"q":"x>y"}}`: `{"_meta":{"com.example/request-source":"snodo","com.example/tenant":"acme"},"arguments":{"q":"x>y"},"name":"a<b&c"}`,
		`{"name":"read_file","arguments":{"path":"a"},"_meta":{"progressToken":"t","io.modelcontextprotocol/related-task":{"taskId":"1"},"com.example/TENANT":"evil","com.example/other":1}}`: `{"_meta":{"com.example/other":1,"com.example/request-source":"snodo","com.example/tenant":"acme","io.modelcontextprotocol/related-task":{"taskId":"1"},"progressToken":"t"},"arguments":{"path":"a"},"name":"read_file"}`,
	} {
		p, err := c.Request(ctx, &intercept.Request{Method: "tools/call", Params: json.RawMessage(params), Era: "modern", ProtocolVersion: "2026-07-28"})
		if err != nil || string(p) != want {
			t.Errorf("%s:\n got %s %v\nwant %s", params, p, err, want)
		}
	}
	for cfg, why := range map[string]string{
		`{"meta":{"io.modelcontextprotocol/logLevel":"debug"}}`: `the prefix "io.modelcontextprotocol/" is reserved for MCP`,
		`{"meta":{"dev.mcp/x":1}}`:                              "reserved for MCP",
		`{"meta":{"progressToken":1}}`:                          "unprefixed keys are MCP's own",
		`{"meta":{"com.example/a":1,"com.example/A":2}}`:        "differ only in case",
		`{"meta":{"com.example/":1}}`:                           "the name",
		`{"meta":{"com.example/x":{"k":1,"K":2}}}`:              `the keys "k" and "K"`,
		`{"metas":{}}`: `unknown field "metas"`,
		`null`:         `"meta" must hold the entries`,
	} {
		bad := intercept.NewChain(load(t, h, ModuleConfig{Name: "add-meta-bad", Wasm: goGuest(t, "add-meta"), Config: json.RawMessage(cfg)}))
		_, err := bad.Request(ctx, readFile("/x"))
		if !errors.Is(err, intercept.ErrDenied) || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: %v, want a failure saying %s", cfg, err, why)
		}
	}
}
