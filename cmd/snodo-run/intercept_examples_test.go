package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snodo/snodo/internal/fakeserver"
	"github.com/snodo/snodo/jsonrpc"
)

func init() { scenarios["tool-echo"] = toolEchoServer }

// toolEchoServer speaks both eras (it answers initialize and
// server/discover): its tools run_command and whoami answer with the
// arguments and _meta they got. It records each request it gets.
func toolEchoServer(s *fakeserver.Server) {
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
		case "initialize":
			s.Reply(r.ID, json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"tool-echo","version":"1"}}`))
		case "server/discover":
			s.Reply(r.ID, json.RawMessage(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"tool-echo","version":"1"}}}`))
		case "tools/list":
			s.Reply(r.ID, json.RawMessage(`{"tools":[{"name":"run_command","inputSchema":{"type":"object","properties":{"command":{"type":"string"}}}},{"name":"whoami","inputSchema":{"type":"object"}}]}`))
		case "tools/call":
			res, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": "ran " + string(r.Params)}}})
			s.Reply(r.ID, json.RawMessage(res))
		default:
			s.Send(jsonrpc.NewErrorResponse(r.ID, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no " + r.Method}))
		}
	}
}

// shellGuardTable is examples/handlers/go/shell-guard/testdata/commands.json.
type shellGuardTable struct {
	Config    json.RawMessage
	Harmless  []string
	Dangerous []string
}

func loadShellGuardTable(t *testing.T) shellGuardTable {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(examplesDir, "go", "shell-guard", "testdata", "commands.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c shellGuardTable
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// recordedCommands returns the command argument of each tools/call the
// recording server got.
func recordedCommands(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			Method string
			Params struct {
				Arguments struct {
					Command string `json:"command"`
				} `json:"arguments"`
			}
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if r.Method == "tools/call" {
			got = append(got, r.Params.Arguments.Command)
		}
	}
	return got
}

// examples/handlers/go/shell-guard behind snodo-run proxy, in both eras:
// of the table of command lines, every harmless one reaches the server and
// is answered; every dangerous one — spelled with spaces, quotes, split
// flags, paths, assignments, chaining, substitutions, look-alike letters
// and JSON escapes — is denied with -32030 naming the module and never
// reaches the server.
func TestShellGuardThroughProxy(t *testing.T) {
	cmds := loadShellGuardTable(t)
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "record.log")
			h := startHost(t, "--interceptor", shellWasm, "--handler-config", "shell-guard="+string(cmds.Config), "--protocol", era,
				"proxy", "--env", fakeserver.ScenarioEnv+"=tool-echo", "--env", recordEnv+"="+log, "--", fakeserver.Executable())
			h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
			if m := h.next("initialize"); string(m["id"]) != "0" {
				t.Fatalf("proxy: %v, want the initialize answer", m)
			}
			h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			call := func(id int, command string) map[string]json.RawMessage {
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
					"params": map[string]any{"name": "run_command", "arguments": map[string]any{"command": command}}})
				h.send(string(b))
				return h.next(command)
			}
			id := 1
			for _, c := range cmds.Harmless {
				id++
				if m := call(id, c); m["result"] == nil || !strings.Contains(string(m["result"]), "ran ") {
					t.Errorf("harmless %q: %v, want the server's answer", c, m)
				}
			}
			for _, c := range cmds.Dangerous {
				id++
				m := call(id, c)
				var e jsonrpc.Error
				if err := json.Unmarshal(m["error"], &e); err != nil || e.Code != -32030 || !strings.Contains(e.Message, `interceptor "shell-guard"`) || !strings.Contains(e.Message, "command refused") {
					t.Errorf("dangerous %q: %v, want a -32030 denial by shell-guard", c, m)
				}
			}
			// Written with JSON escapes, rm is still rm.
			id++
			h.send(`{"jsonrpc":"2.0","id":` + jsonInt(id) + `,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"\u0072\u006d -rf \u002f"}}}`)
			if m := h.next("escaped rm"); !strings.Contains(string(m["error"]), `"code":-32030`) {
				t.Errorf("\\u0072m -rf /: %v, want a denial", m)
			}
			// No command, or not a string: denied.
			for _, args := range []string{`{}`, `{"command":["rm","-rf","/"]}`, `{"command":null}`} {
				id++
				h.send(`{"jsonrpc":"2.0","id":` + jsonInt(id) + `,"method":"tools/call","params":{"name":"run_command","arguments":` + args + `}}`)
				if m := h.next(args); !strings.Contains(string(m["error"]), `"code":-32030`) || !strings.Contains(string(m["error"]), "must be the command line") {
					t.Errorf("arguments %s: %v, want a denial", args, m)
				}
			}
			_ = h.in.Close()
			h.exit("after the host's EOF")
			if got := recordedCommands(t, log); !slices.Equal(got, cmds.Harmless) {
				t.Fatalf("the server got\n%q\nwant only the harmless commands\n%q", got, cmds.Harmless)
			}
		})
	}
}

func jsonInt(i int) string { b, _ := json.Marshal(i); return string(b) }

// examples/handlers/go/add-meta through snodo-run tools call, in both
// eras: the server sees the configured _meta entries and, beside them,
// the progress token (--verbose shows progress) and trace context
// (--trace) Snodo adds, and in 2026-07-28 its io.modelcontextprotocol/*
// members.
func TestAddMetaThroughServer(t *testing.T) {
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "record.log")
			ok(t, cli(t, "--verbose", "--trace", "--interceptor", addMetaWasm,
				"--handler-config", `add-meta={"meta":{"com.example/tenant":"acme","com.example/request-source":"snodo"}}`,
				"--protocol", era, "tools", "call", "whoami",
				"--env", fakeserver.ScenarioEnv+"=tool-echo", "--env", recordEnv+"="+log, "--", fakeserver.Executable()))
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			var meta map[string]json.RawMessage
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var r struct {
					Method string
					Params struct {
						Name string
						Meta map[string]json.RawMessage `json:"_meta"`
					}
				}
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				if r.Method == "tools/call" {
					if r.Params.Name != "whoami" {
						t.Fatalf("the call's name changed: %s", line)
					}
					meta = r.Params.Meta
				}
			}
			if string(meta["com.example/tenant"]) != `"acme"` || string(meta["com.example/request-source"]) != `"snodo"` {
				t.Fatalf("the server's _meta %s lacks the configured entries\n%s", meta, b)
			}
			if meta["progressToken"] == nil || !strings.HasPrefix(string(meta["traceparent"]), `"00-`) {
				t.Fatalf("the server's _meta lacks Snodo's progress token or trace context\n%s", b)
			}
			if era == "modern" && string(meta["io.modelcontextprotocol/protocolVersion"]) != `"2026-07-28"` {
				t.Fatalf("the server's _meta lacks the 2026-07-28 members\n%s", b)
			}
		})
	}
}

// snodo-run handlers test runs both examples on one envelope: shell-guard
// denies a dangerous command and lets a harmless one go; add-meta rewrites
// the params, keeping the request's own _meta members and replacing a
// caller's look-alike of a configured key; a configuration naming a
// reserved key fails with an error that says so.
func TestHandlersTestShellGuardAddMeta(t *testing.T) {
	type decision struct {
		Decision string
		Params   map[string]json.RawMessage
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
	shell := func(command string) result {
		return cli(t, "handlers", "test", shellWasm, "--intercept", "request", "--params",
			`{"method":"tools/call","params":{"name":"run_command","arguments":{"command":`+command+`}}}`)
	}
	if d := decide(ok(t, shell(`"ls -la"`))); d.Decision != "continue" {
		t.Errorf("ls -la: %+v, want continue", d)
	}
	if d := decide(ok(t, shell(`"FOO=1 /bin/r''m -r -f \u002f"`))); d.Decision != "deny" || d.Error == nil || !strings.Contains(d.Error.Message, "rm -r of /") {
		t.Errorf("rm -rf /: %+v, want deny", d)
	}
	addMeta := func(config, params string) result {
		return cli(t, "--handler-config", config, "handlers", "test", addMetaWasm, "--intercept", "request", "--params", params)
	}
	cfg := `{"meta":{"com.example/tenant":"acme"}}`
	d := decide(ok(t, addMeta(cfg, `{"method":"tools/call","params":{"name":"x","_meta":{"progressToken":7,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","com.example/Tenant":"evil"}}}`)))
	if d.Decision != "rewrite" || string(d.Params["name"]) != `"x"` {
		t.Fatalf("%+v, want a rewrite", d)
	}
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(d.Params["_meta"], &meta)
	if string(meta["com.example/tenant"]) != `"acme"` || string(meta["progressToken"]) != "7" || meta["traceparent"] == nil || meta["com.example/Tenant"] != nil || len(meta) != 3 {
		t.Errorf("_meta %s, want the caller's members and the tenant acme", d.Params["_meta"])
	}
	if d := decide(ok(t, addMeta(cfg, `{"method":"resources/list"}`))); d.Decision != "rewrite" || string(d.Params["_meta"]) != `{"com.example/tenant":"acme"}` || len(d.Params) != 1 {
		t.Errorf("no params: %+v, want {\"_meta\": {...}}", d)
	}
	for config, want := range map[string]string{
		`{"meta":{"io.modelcontextprotocol/protocolVersion":"x"}}`: "reserved for MCP",
		`{"meta":{"progressToken":1}}`:                             "unprefixed keys",
		`{"meta":{"traceparent":"x"}}`:                             "unprefixed keys",
	} {
		if d := decide(ok(t, addMeta(config, `{"method":"tools/list"}`))); d.Decision != "deny" || d.Error == nil || !strings.Contains(d.Error.Message, want) {
			t.Errorf("%s: %+v, want a configuration error saying %q", config, d, want)
		}
	}
}
