package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/snodo/snodo/internal/fakeserver"
	"github.com/snodo/snodo/jsonrpc"
)

func init() {
	scenarios["record"] = recordServer
	scenarios["modern-files"] = modernFilesServer
}

// recordEnv names the file where the recording servers write every line
// the client sent them, before the server acts on it.
const recordEnv = "SNODO_TEST_RECORD"

func recorder() func(line []byte) {
	f, err := os.OpenFile(os.Getenv(recordEnv), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		panic(err)
	}
	var mu sync.Mutex
	return func(line []byte) {
		mu.Lock()
		defer mu.Unlock()
		f.Write(append(append([]byte(nil), line...), '\n'))
	}
}

// recordServer runs the command of its arguments as the server, recording
// each line the client sends it.
func recordServer(s *fakeserver.Server) {
	record := recorder()
	cmd := exec.Command(s.Args[0], s.Args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil || cmd.Start() != nil {
		os.Exit(2)
	}
	br := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			record(line[:len(line)-1])
			in.Write(line)
		}
		if err != nil {
			break
		}
	}
	in.Close()
	cmd.Wait()
}

// modernFilesServer speaks 2026-07-28: one tool, read_text_file, reads the
// file its path names, anywhere. It records each line the client sends.
func modernFilesServer(s *fakeserver.Server) {
	record := recorder()
	for {
		m, err := s.Read()
		if err != nil {
			return
		}
		r, ok := m.(*jsonrpc.Request)
		if !ok {
			continue
		}
		line, _ := json.Marshal(r)
		record(line)
		switch r.Method {
		case "server/discover":
			s.Reply(r.ID, json.RawMessage(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern-files","version":"1"}}}`))
		case "tools/list":
			s.Reply(r.ID, json.RawMessage(`{"resultType":"complete","tools":[{"name":"read_text_file","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}]}`))
		case "tools/call":
			var p struct {
				Arguments struct{ Path string } `json:"arguments"`
			}
			_ = json.Unmarshal(r.Params, &p)
			b, err := os.ReadFile(p.Arguments.Path)
			text, isErr := string(b), false
			if err != nil {
				text, isErr = err.Error(), true
			}
			res, _ := json.Marshal(map[string]any{"resultType": "complete", "content": []any{map[string]string{"type": "text", "text": text}}, "isError": isErr})
			s.Reply(r.ID, json.RawMessage(res))
		default:
			s.Send(jsonrpc.NewErrorResponse(r.ID, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no " + r.Method}))
		}
	}
}

const planted = "sk-live-4f9c2a7e1b3d8f6a0c5e9b2d7a1f3c8e"

// filesDirs makes a directory holding notes.txt with the planted secret,
// and a sibling directory outside it.
func filesDirs(t *testing.T) (prefix, outside string) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	prefix, outside = filepath.Join(base, "allowed"), filepath.Join(base, "outside")
	for _, d := range []string{prefix, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(prefix, "notes.txt"), []byte("token: "+planted+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	return prefix, outside
}

// --interceptor with tools call, in both eras: against
// @modelcontextprotocol/server-filesystem (legacy) and a scripted
// 2026-07-28 server, each behind a recorder of every line it got, a path
// outside the prefix — plainly or with ".." — is denied (exit 2, -32030)
// and never reaches the server; the file inside is read with the planted
// secret redacted; each denial is audited by the proxy.
func TestInterceptorsToolsCall(t *testing.T) {
	fs, err := filepath.Abs(filesystemBin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fs); err != nil {
		t.Fatalf("@modelcontextprotocol/server-filesystem is not installed at %s: run `bash .ci/deps.d/20-npm-interop.sh`", fs)
	}
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			prefix, outside := filesDirs(t)
			log := filepath.Join(t.TempDir(), "record.log")
			server := []string{"--env", fakeserver.ScenarioEnv + "=record", "--env", recordEnv + "=" + log, "--", fakeserver.Executable(), fs, prefix}
			if era == "modern" {
				server = []string{"--env", fakeserver.ScenarioEnv + "=modern-files", "--env", recordEnv + "=" + log, "--", fakeserver.Executable()}
			}
			flags := []string{"--interceptor", confineWasm, "--interceptor", redactWasm,
				"--handler-config", `confine-paths={"prefix":"` + prefix + `"}`, "--protocol", era}
			call := func(path string) result {
				return cli(t, append(append(append([]string{}, flags...), "tools", "call", "read_text_file", "--arg", "path="+path), server...)...)
			}
			for _, p := range []string{filepath.Join(outside, "secret.txt"), prefix + "/../outside/secret.txt"} {
				e := exits(t, call(p), exitUsage, "handler")
				if e.Code != -32030 || !strings.Contains(e.Message, `interceptor "confine-paths"`) || !strings.Contains(e.Message, "is outside") {
					t.Fatalf("%s: %+v", p, e)
				}
			}
			r := ok(t, call("notes.txt"))
			if strings.Contains(r.stdout, planted) || !strings.Contains(r.stdout, "token: [REDACTED]") {
				t.Fatalf("stdout %s: the secret was not redacted", r.stdout)
			}
			got, _ := os.ReadFile(log)
			if strings.Contains(string(got), "outside") || !strings.Contains(string(got), filepath.Join(prefix, "notes.txt")) {
				t.Fatalf("the server got:\n%s", got)
			}
		})
	}
}

// A hostile interceptor fails closed through snodo-run: the call fails
// naming the module (exit 5) and the server never gets it.
func TestInterceptorTrapFailsClosed(t *testing.T) {
	log := filepath.Join(t.TempDir(), "record.log")
	r := cli(t, "--interceptor", filepath.Join(watDir, "hostile", "intercept-trap.wasm"), "--protocol", "modern",
		"tools", "call", "read_text_file", "--arg", "path=/etc/hostname",
		"--env", fakeserver.ScenarioEnv+"=modern-files", "--env", recordEnv+"="+log, "--", fakeserver.Executable())
	e := exits(t, r, exitHandler, "handler")
	if e.Code != -32603 || !strings.Contains(e.Message, `interceptor "intercept-trap" failed on tools/call, so the request was not sent`) ||
		!strings.Contains(e.Message, "unreachable") {
		t.Fatalf("%+v", e)
	}
	got, _ := os.ReadFile(log)
	if strings.Contains(string(got), "tools/call") {
		t.Fatalf("the server got the call:\n%s", got)
	}
}

// The proxy writes each interceptor decision to its audit log.
func TestProxyAuditsInterceptorDecisions(t *testing.T) {
	prefix, outside := filesDirs(t)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	log := filepath.Join(t.TempDir(), "record.log")
	// The host reads each answer before it sends on, and closes the
	// proxy's stdin (which cancels what is in flight) only at the end.
	h := startHost(t, "--interceptor", confineWasm, "--interceptor", redactWasm,
		"--handler-config", `confine-paths={"prefix":"`+prefix+`"}`, "--protocol", "modern",
		"proxy", "--audit", audit,
		"--env", fakeserver.ScenarioEnv+"=modern-files", "--env", recordEnv+"="+log, "--", fakeserver.Executable())
	h.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	if m := h.next("initialize"); string(m["id"]) != "1" {
		t.Fatalf("proxy: %v, want the initialize answer", m)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"` + filepath.Join(outside, "secret.txt") + `"}}}`)
	if m := h.next("the denied call"); string(m["id"]) != "2" || !strings.Contains(string(m["error"]), `"code":-32030`) {
		t.Fatalf("proxy: %v, want the denial", m)
	}
	h.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"notes.txt"}}}`)
	if m := h.next("the redacted call"); string(m["id"]) != "3" || strings.Contains(string(m["result"]), planted) || !strings.Contains(string(m["result"]), "[REDACTED]") {
		t.Fatalf("proxy: %v, want the redacted result", m)
	}
	_ = h.in.Close()
	h.exit("after the host's EOF")
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	var decisions []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec struct{ Direction, Phase, Module, Decision, Reason string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if rec.Direction == "interceptor" {
			decisions = append(decisions, rec.Module+" "+rec.Phase+" "+rec.Decision)
			if rec.Decision == "deny" && !strings.Contains(rec.Reason, "is outside") {
				t.Errorf("reason %q", rec.Reason)
			}
		}
	}
	want := "confine-paths request deny|confine-paths request rewrite|redact-secrets result replace"
	if strings.Join(decisions, "|") != want {
		t.Fatalf("audited %q, want %q\n%s", decisions, want, b)
	}
	got, _ := os.ReadFile(log)
	if strings.Contains(string(got), "outside") {
		t.Fatalf("the server got:\n%s", got)
	}
}

// The shell applies --interceptor to each of its calls: the outside path
// is denied and never reaches the server, the inside one is redacted.
func TestShellInterceptors(t *testing.T) {
	prefix, outside := filesDirs(t)
	log := filepath.Join(t.TempDir(), "record.log")
	script := "tools call read_text_file path=" + filepath.Join(outside, "secret.txt") + "\ntools call read_text_file path=notes.txt\n"
	r := cliWith(t, runOpts{stdin: script}, "--interceptor", confineWasm, "--interceptor", redactWasm,
		"--handler-config", `confine-paths={"prefix":"`+prefix+`"}`, "--protocol", "modern",
		"shell", "--env", fakeserver.ScenarioEnv+"=modern-files", "--env", recordEnv+"="+log, "--", fakeserver.Executable())
	if !strings.Contains(r.stderr, `"code":-32030`) || !strings.Contains(r.stdout, "token: [REDACTED]") || strings.Contains(r.stdout+r.stderr, planted) {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	got, _ := os.ReadFile(log)
	if strings.Contains(string(got), "outside") {
		t.Fatalf("the server got:\n%s", got)
	}
}

// handlers check shows an interceptor's entry points and methods.
func TestHandlersCheckShowsInterceptors(t *testing.T) {
	r := ok(t, cli(t, "handlers", "check", filepath.Join(watDir, "intercept-noop", "intercept-noop.wasm"), "-o", "text"))
	for _, want := range []string{"ABI version 2", "intercepts requests (snodo_intercept_request): every method", "intercepts results (snodo_intercept_result): every method"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("handlers check does not say %q:\n%s", want, r.stdout)
		}
	}
	r = ok(t, cli(t, "handlers", "check", confineWasm))
	if !strings.Contains(r.stdout, `"abi":2`) || !strings.Contains(r.stdout, `"intercept":{"requests":true,"methods":["tools/call"]}`) {
		t.Errorf("%s", r.stdout)
	}
}

// A module that intercepts nothing is refused as an interceptor, saying so.
func TestInterceptorThatInterceptsNothingIsRefused(t *testing.T) {
	r := cli(t, "--interceptor", stopAfterWasm, "tools", "list", "--", demo)
	e := exits(t, r, exitHandler, "")
	if !strings.Contains(e.Message, `the module intercepts nothing (its manifest lacks "intercept", which needs "abi": 2)`) {
		t.Fatalf("%+v", e)
	}
}

// "handlers test FILE.wasm --intercept request|result --params ENVELOPE":
// a module's interceptor run on one envelope without a server, its decision
// printed as the client would act on it (continue, deny with the module's
// reason, rewrite with the checked params, replace with the new result),
// exit 0 whatever it decided; a module that fails or does not intercept the
// method exits 5, an envelope that is not one exits 2.
func TestHandlersTestInterceptors(t *testing.T) {
	type decision struct {
		Decision string
		Params   map[string]any
		Result   json.RawMessage
		Error    *struct {
			Code    int64
			Message string
		}
	}
	decide := func(r result) decision {
		t.Helper()
		var d decision
		if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
			t.Fatalf("stdout is not a decision: %v\n%s", err, r.stdout)
		}
		return d
	}
	confine := []string{"--handler-config", `{"prefix":"/srv/data"}`, "handlers", "test", confineWasm, "--intercept", "request", "--params"}
	call := func(path string) string {
		return `{"method":"tools/call","params":{"name":"read_file","arguments":{"path":"` + path + `"}},"server":"fs","era":"modern","protocolVersion":"2025-11-25"}`
	}
	if d := decide(ok(t, cli(t, append(confine, call("/srv/data/a.txt"))...))); d.Decision != "continue" || d.Params != nil || d.Error != nil {
		t.Errorf("a path inside: %+v, want continue", d)
	}
	d := decide(ok(t, cli(t, append(confine, call("../../etc/passwd"))...)))
	if d.Decision != "deny" || d.Error == nil || d.Error.Code != -32602 || !strings.Contains(d.Error.Message, "/etc/passwd") {
		t.Errorf("a path outside: %+v, want deny naming the path", d)
	}
	d = decide(ok(t, cli(t, append(confine, call("sub/./b.txt"))...)))
	if args, _ := d.Params["arguments"].(map[string]any); d.Decision != "rewrite" || d.Params["name"] != "read_file" || args["path"] != "/srv/data/sub/b.txt" {
		t.Errorf("a relative path: %+v, want a rewrite to /srv/data/sub/b.txt", d)
	}
	// The envelope on stdin (@-) and in a file (@FILE).
	r := ok(t, cliWith(t, runOpts{stdin: call("/srv/data/x")}, append(confine, "@-")...))
	if d := decide(r); d.Decision != "continue" {
		t.Errorf("envelope on stdin: %+v, want continue", d)
	}
	file := filepath.Join(t.TempDir(), "envelope.json")
	if err := os.WriteFile(file, []byte(call("/etc/shadow")), 0o644); err != nil {
		t.Fatal(err)
	}
	if d := decide(ok(t, cli(t, append(confine, "@"+file)...))); d.Decision != "deny" {
		t.Errorf("envelope in a file: %+v, want deny", d)
	}

	redact := []string{"handlers", "test", redactWasm, "--intercept", "result", "--params"}
	secret := "sk-" + strings.Repeat("a1", 12)
	d = decide(ok(t, cli(t, append(redact, `{"method":"tools/call","params":{"name":"x"},"result":{"content":[{"type":"text","text":"key `+secret+`"}]}}`)...)))
	if d.Decision != "replace" || !strings.Contains(string(d.Result), "[REDACTED]") || strings.Contains(string(d.Result), secret) {
		t.Errorf("a result with a secret: %+v, want it replaced, redacted", d)
	}
	d = decide(ok(t, cli(t, append(redact, `{"method":"tools/call","params":{"name":"x"},"error":{"code":-32000,"message":"bad key `+secret+`"}}`)...)))
	if d.Decision != "replace" || d.Error == nil || d.Error.Code != -32000 || strings.Contains(d.Error.Message, secret) {
		t.Errorf("an error with a secret: %+v, want the error replaced, redacted", d)
	}
	if d := decide(ok(t, cli(t, append(redact, `{"method":"tools/call","result":{"content":[]}}`)...))); d.Decision != "continue" {
		t.Errorf("a result without a secret: %+v, want continue", d)
	}

	// A rewrite the client would refuse — it changes the tool called — and
	// a replacement result with a key twice are failures, not decisions.
	e := exits(t, cli(t, "handlers", "test", rewriter(t), "--intercept", "request",
		"--params", `{"method":"tools/call","params":{"name":"read_file"}}`), exitHandler, "handler")
	contains(t, "a rewrite of the tool's name", e.Message, "invalid rewrite", `changes "name"`)
	e = exits(t, cli(t, "handlers", "test", rewriter(t), "--intercept", "result",
		"--params", `{"method":"tools/call","result":{}}`), exitHandler, "handler")
	contains(t, "an ambiguous replacement", e.Message, "invalid replacement result")

	// Failures: the module's (exit 5), the envelope's (exit 2).
	e = exits(t, cli(t, "handlers", "test", filepath.Join(watDir, "hostile", "intercept-trap.wasm"), "--intercept", "request",
		"--params", `{"method":"tools/call","params":{"name":"x"}}`), exitHandler, "handler")
	contains(t, "trap", e.Message, "intercept-trap", "trap")
	e = exits(t, cli(t, append(confine, `{"method":"prompts/get","params":{"name":"x"}}`)...), exitHandler, "handler")
	contains(t, "a method it does not intercept", e.Message, "does not intercept the requests of prompts/get")
	e = exits(t, cli(t, "handlers", "test", redactWasm, "--intercept", "request", "--params", `{"method":"tools/call"}`), exitHandler, "handler")
	contains(t, "no request interceptor", e.Message, "does not intercept the requests of tools/call")
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no method":          {append(confine, `{"params":{}}`), `"method" is missing`},
		"params not object":  {append(confine, `{"method":"tools/call","params":[1]}`), `"params" must be a JSON object`},
		"unknown member":     {append(confine, `{"method":"tools/call","parms":{}}`), `unknown field "parms"`},
		"duplicate key":      {append(confine, `{"method":"tools/call","method":"prompts/get"}`), "method"},
		"result in request":  {append(confine, `{"method":"tools/call","result":{}}`), "--intercept result"},
		"result and error":   {append(redact, `{"method":"tools/call","result":{},"error":{"code":1,"message":"x"}}`), "exactly one of"},
		"neither":            {append(redact, `{"method":"tools/call"}`), "exactly one of"},
		"error without code": {append(redact, `{"method":"tools/call","error":{"message":"x"}}`), "code or message missing"},
		"bad era":            {append(confine, `{"method":"tools/call","era":"future"}`), `"era" must be`},
		"not JSON":           {append(confine, `{nope`), "--params"},
		"no envelope":        {[]string{"handlers", "test", confineWasm, "--intercept", "request"}, "wants the envelope in --params"},
		"bad --intercept":    {[]string{"handlers", "test", confineWasm, "--intercept", "requests", "--params", "{}"}, "request or result"},
		"--method as well":   {[]string{"handlers", "test", confineWasm, "--intercept", "request", "--method", "tools/call", "--params", "{}"}, "not --method"},
	} {
		t.Run(name, func(t *testing.T) {
			e := exits(t, cli(t, tc.args...), exitUsage, "usage")
			contains(t, "usage error", e.Message, tc.want)
		})
	}
}

// rewriter builds an interceptor whose request interceptor rewrites every
// request's params to {"name":"rm"} and whose result interceptor replaces
// every result with {"a":1,"a":2}.
func rewriter(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	manifest := `{"abi":2,"name":"rewriter","intercept":{"requests":true,"results":true}}`
	wat := fmt.Sprintf(`(module
  (import "snodo" "set_output" (func $set_output (param i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 16) %q)
  (data (i32.const 256) %q)
  (data (i32.const 512) %q)
  (func (export "snodo_describe") (result i32)
    (call $set_output (i32.const 16) (i32.const %d)) (i32.const 0))
  (func (export "snodo_alloc") (param i32) (result i32) (i32.const 65536))
  (func (export "snodo_intercept_request") (param i32 i32) (result i32)
    (call $set_output (i32.const 256) (i32.const 13)) (i32.const 3))
  (func (export "snodo_intercept_result") (param i32 i32) (result i32)
    (call $set_output (i32.const 512) (i32.const 24)) (i32.const 3)))`,
		manifest, `{"name":"rm"}`, `{"result":{"a":1,"a":2}}`, len(manifest))
	src, out := filepath.Join(dir, "rewriter.wat"), filepath.Join(dir, "rewriter.wasm")
	if err := os.WriteFile(src, []byte(wat), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("wat2wasm", src, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm (Debian package wabt): %v\n%s", err, b)
	}
	return out
}
