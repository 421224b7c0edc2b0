package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"
)

var eras = []string{"legacy", "modern"}

// contains fails the test unless s contains every one of subs.
func contains(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not contain %q:\n%s", what, sub, s)
		}
	}
}

// ok fails the test unless the run exited 0.
func ok(t *testing.T, r result) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit code %d, want 0\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	return r
}

// exits fails the test unless the run exited with code and reported one
// JSON error object of kind; it returns the object.
func exits(t *testing.T, r result, code int, kind string) errorBody {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	e := r.errObj(t)
	if kind != "" && e.Error.Kind != kind {
		t.Errorf("error kind %q, want %q: %s", e.Error.Kind, kind, e.Error.Message)
	}
	if e.Error.Message == "" {
		t.Error("error object without a message")
	}
	return e.Error
}

// "the built binary run against the demo server (both eras) … for every
// command"
func TestEveryCommandAgainstDemoServerInBothEras(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			server := []string{"--", demo, "--era", era}
			with := func(args ...string) []string { return append(args, server...) }

			t.Run("discover", func(t *testing.T) {
				v := ok(t, cli(t, with("discover")...)).json(t)
				if v["era"] != era {
					t.Errorf("era %v, want %s", v["era"], era)
				}
				contains(t, "discover", fmt.Sprint(v["serverInfo"]), "snodo-demo")
				text := ok(t, cli(t, with("discover", "--output", "text")...)).stdout
				contains(t, "discover text", text, "snodo-demo 1.0.0 ("+era+" era", "capabilities: tools, prompts, resources")
			})
			t.Run("tools list", func(t *testing.T) {
				r := ok(t, cli(t, with("tools", "list")...))
				contains(t, "tools list", r.stdout, `"name":"register"`, `"name":"count"`, `"inputSchema"`)
				text := ok(t, cli(t, with("tools", "list", "-o", "text")...)).stdout
				contains(t, "tools list text", text, "echo(text: string)\n    Sends the text back.", "count(delay_ms?: integer, steps?: integer)")
			})
			t.Run("tools call", func(t *testing.T) {
				r := ok(t, cli(t, with("tools", "call", "echo", "--arg", "text=123")...))
				// The schema says text is a string: 123 stays a string.
				contains(t, "echo result", r.stdout, `"text":"123"`)
				r = ok(t, cli(t, with("tools", "call", "echo", "--args", `{"text":"from json"}`, "-o", "text")...))
				if strings.TrimSpace(r.stdout) != "from json" {
					t.Errorf("text output %q, want the content's text", r.stdout)
				}
			})
			t.Run("tools call with progress lines", func(t *testing.T) {
				// "otherwise progress lines on stderr with --verbose"
				r := ok(t, cli(t, with("--verbose", "tools", "call", "count", "--arg", "steps=3", "--arg", "delay_ms=10")...))
				contains(t, "result", r.stdout, "counted to 3")
				if n := strings.Count(r.stderr, "msg=progress"); n != 3 {
					t.Errorf("%d progress lines on stderr, want 3:\n%s", n, r.stderr)
				}
				contains(t, "stderr", r.stderr, `message="step 3 of 3"`)
				quiet := ok(t, cli(t, with("tools", "call", "count", "--arg", "steps=2", "--arg", "delay_ms=10")...))
				if strings.Contains(quiet.stderr, "progress") {
					t.Errorf("progress shown without --verbose on a non-terminal:\n%s", quiet.stderr)
				}
			})
			t.Run("resources", func(t *testing.T) {
				contains(t, "resources list", ok(t, cli(t, with("resources", "list")...)).stdout, `"uri":"demo://readme"`, `"uri":"demo://counter"`)
				contains(t, "resources templates", ok(t, cli(t, with("resources", "templates")...)).stdout, `"uriTemplate":"demo://greeting/{name}"`)
				contains(t, "resources read", ok(t, cli(t, with("resources", "read", "demo://greeting/Ada")...)).stdout, `"text":"Hello, Ada!"`)
				contains(t, "resources read text", ok(t, cli(t, with("resources", "read", "demo://readme", "-o", "text")...)).stdout, "--- demo://readme\nThis server asks")
			})
			t.Run("prompts", func(t *testing.T) {
				contains(t, "prompts list", ok(t, cli(t, with("prompts", "list", "-o", "text")...)).stdout, "greet(name, style?)")
				r := ok(t, cli(t, with("prompts", "get", "greet", "--arg", "name=Ada", "--arg", "style=formal", "-o", "text")...))
				contains(t, "prompts get", r.stdout, "[user]\nPlease greet me like this: Good day, Ada.")
			})
			t.Run("complete", func(t *testing.T) {
				v := ok(t, cli(t, with("complete", "--prompt", "greet", "--arg", "name=G")...)).json(t)
				contains(t, "complete prompt", fmt.Sprint(v["completion"]), "values:[Grace]")
				r := ok(t, cli(t, with("complete", "--resource", "demo://greeting/{name}", "--arg", "name=a", "-o", "text")...))
				if r.stdout != "Ada\nAlan\n" {
					t.Errorf("complete resource text %q, want Ada and Alan", r.stdout)
				}
			})
			t.Run("listen", func(t *testing.T) {
				churn := []string{"--", demo, "--era", era, "--churn", "100ms"}
				r := ok(t, cli(t, append([]string{"listen", "--tools", "--count", "2"}, churn...)...))
				lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
				if len(lines) != 2 {
					t.Fatalf("%d events, want 2:\n%s", len(lines), r.stdout)
				}
				for _, l := range lines {
					var ev listenEvent
					if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Method != "notifications/tools/list_changed" {
						t.Errorf("event %q is not a tools/list_changed JSON line", l)
					}
				}
				r = ok(t, cli(t, append([]string{"listen", "--resource", "demo://counter", "--count", "1"}, churn...)...))
				contains(t, "resource event", r.stdout, `"method":"notifications/resources/updated"`, `"uri":"demo://counter"`)
			})
			t.Run("listen with a subscriber module", func(t *testing.T) {
				// "(events as JSON lines until interrupted, or handed to --subscriber)"
				r := ok(t, cli(t, "--subscriber", stopAfterWasm, "--handler-config", "stop-after=2", "-v",
					"listen", "--tools", "--", demo, "--era", era, "--churn", "100ms"))
				if r.stdout != "" {
					t.Errorf("events printed although a subscriber module consumes them: %s", r.stdout)
				}
				contains(t, "stderr", r.stderr, "subscriber module ended the subscription")
			})
			t.Run("call", func(t *testing.T) {
				v := ok(t, cli(t, with("call", "tools/call", "--params", `{"name":"echo","arguments":{"text":"raw"}}`)...)).json(t)
				contains(t, "call result", fmt.Sprint(v["content"]), "raw")
				params := filepath.Join(t.TempDir(), "p.json")
				os.WriteFile(params, []byte(`{"uri":"demo://readme"}`), 0o644)
				contains(t, "call @file", ok(t, cli(t, with("call", "resources/read", "--params", "@"+params)...)).stdout, "This server asks")
				r := ok(t, cliWith(t, runOpts{stdin: `{"name":"greet","arguments":{"name":"Bo"}}`}, with("call", "prompts/get", "--params", "@-")...))
				contains(t, "call @-", r.stdout, "Hi Bo!")
			})
			t.Run("pretty", func(t *testing.T) {
				r := ok(t, cli(t, with("resources", "read", "demo://counter", "-o", "pretty")...))
				contains(t, "pretty output", r.stdout, "{\n  \"contents\": [\n")
			})
		})
	}
}

// "The same handler module answers elicitation/create in both eras": the
// demo's register tool asks for a form — an elicitation/create request
// from the legacy server, an input_required result from the modern one —
// and the Go-compiled elicit-policy module answers it through snodo-run.
func TestWasmHandlerAnswersDemoElicitationInBothEras(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			r := ok(t, cli(t, "--handler", elicitWasm, "--handler-config", `{"values":{"name":"Grace","plan":"pro"}}`,
				"tools", "call", "register", "-o", "text", "--", demo, "--era", era))
			contains(t, "register", r.stdout, "registered Grace (age 36, plan pro, newsletter false)")

			r = ok(t, cli(t, "--handler", "elicitation/create="+elicitWasm, "--handler-config", `elicit-policy={"rules":[{"match":"register","action":"decline"}]}`,
				"tools", "call", "register", "-o", "text", "--", demo, "--era", era))
			contains(t, "register declined", r.stdout, "registration declined")
		})
	}
}

// Sampling and roots are answered by modules too, in both eras.
func TestWasmHandlersAnswerSamplingAndRootsInBothEras(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			r := ok(t, cli(t, "--handler", samplingWasm, "tools", "call", "sample", "--arg", "prompt=hello", "-o", "text", "--", demo, "--era", era))
			contains(t, "sample", r.stdout, "snodo-echo answered: echo: hello")
			r = ok(t, cli(t, "--handler", testkitWasm, "--handler-config", `{"roots":[{"uri":"file:///work","name":"work"},{"uri":"file:///tmp"}]}`,
				"tools", "call", "roots", "-o", "text", "--", demo, "--era", era))
			contains(t, "roots", r.stdout, "2 roots: file:///work, file:///tmp")
		})
	}
}

// "a --progress module takes precedence": the module sees the progress and
// its "cancel" cancels the request on the server.
func TestProgressModuleCancelsTheRequestOnTheServer(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			r := cli(t, "--progress", testkitWasm, "--handler-config", `{"cancelAt":2}`, "--verbose", "--server-stderr",
				"tools", "call", "count", "--arg", "steps=50", "--arg", "delay_ms=20", "--", demo, "--era", era)
			e := exits(t, r, exitHandler, "handler")
			contains(t, "error", e.Message, `wasm module "testkit" cancelled the request`)
			contains(t, "server stderr", r.stderr, "count: cancelled at step")
			if strings.Contains(r.stderr, "msg=progress") {
				t.Errorf("progress lines shown although a progress module takes precedence:\n%s", r.stderr)
			}
		})
	}
}

// "Ctrl-C cancels the request in flight on the server and shuts down
// cleanly."
func TestCtrlCCancelsTheRequestAndShutsDown(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			r := cliWith(t, runOpts{interrupt: sigint("step 2 of 500")}, "--verbose", "--server-stderr",
				"tools", "call", "count", "--arg", "steps=500", "--arg", "delay_ms=20", "--", demo, "--era", era)
			e := exits(t, r, exitInterrupt, "interrupted")
			contains(t, "error", e.Message, "cancelled")
			contains(t, "server stderr", r.stderr, "count: cancelled at step", `msg="server stopped" how="exited after EOF"`)
		})
	}
}

// Ctrl-C is how listen ends: exit 0.
func TestCtrlCEndsListenWithSuccess(t *testing.T) {
	r := cliWith(t, runOpts{interrupt: sigint("subscription accepted")}, "--verbose", "listen", "--tools", "--", demo)
	ok(t, r)
}

// So it is for proxy, whose host keeps its stdin open: SIGINT or SIGTERM
// ends it with 0, as README's exit-code table says, once connected and
// while it waits for the host's first message.
func TestSignalEndsProxyWithSuccess(t *testing.T) {
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}` + "\n"
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		for _, tc := range []struct{ name, stdin, when string }{
			{"connected", initialize, "connected"},
			{"waiting for the host", "", "waiting for the host"},
		} {
			t.Run(sig.String()+" "+tc.name, func(t *testing.T) {
				sent := false
				r := cliWith(t, runOpts{stdin: tc.stdin, holdStdin: true, interrupt: func(p *os.Process, line string) {
					if !sent && strings.Contains(line, tc.when) {
						sent = true
						_ = p.Signal(sig)
					}
				}}, "--verbose", "proxy", "--", demo)
				ok(t, r)
				if !sent {
					t.Errorf("no signal sent; stderr:\n%s", r.stderr)
				}
			})
		}
	}
}

// "the built binary run against … server-everything, for every command"
func TestEveryCommandAgainstServerEverything(t *testing.T) {
	srv := everything(t)
	with := func(args ...string) []string { return append(args, "--", srv) }
	handlers := []string{"--handler", elicitWasm, "--handler", samplingWasm, "--handler", testkitWasm,
		"--handler-config", `testkit={"roots":[{"uri":"file:///work"}]}`,
		"--handler-config", `elicit-policy={"action":"accept","onMissing":"decline"}`}

	t.Run("discover", func(t *testing.T) {
		v := ok(t, cli(t, with("discover")...)).json(t)
		contains(t, "serverInfo", fmt.Sprint(v["serverInfo"]), "mcp-servers/everything")
	})
	t.Run("tools list", func(t *testing.T) {
		r := ok(t, cli(t, append(handlers, with("tools", "list", "-o", "text")...)...))
		contains(t, "tools", r.stdout, "echo(message: string)", "get-sum(a: number, b: number)", "trigger-elicitation-request()", "trigger-sampling-request(prompt: string")
	})
	t.Run("tools call typed by schema", func(t *testing.T) {
		r := ok(t, cli(t, with("tools", "call", "get-sum", "--arg", "a=2", "--arg", "b=40", "-o", "text")...))
		contains(t, "sum", r.stdout, "42")
	})
	t.Run("tools call with progress", func(t *testing.T) {
		r := ok(t, cli(t, with("-v", "tools", "call", "trigger-long-running-operation", "--arg", "duration=1", "--arg", "steps=3")...))
		if n := strings.Count(r.stderr, "msg=progress"); n != 3 {
			t.Errorf("%d progress lines, want 3:\n%s", n, r.stderr)
		}
	})
	t.Run("elicitation, sampling and roots answered by Wasm", func(t *testing.T) {
		r := ok(t, cli(t, append(handlers, with("tools", "call", "trigger-elicitation-request", "-o", "text")...)...))
		contains(t, "elicitation", r.stdout, `"action":`)
		r = ok(t, cli(t, append(handlers, with("tools", "call", "trigger-sampling-request", "--arg", "prompt=hello", "-o", "text")...)...))
		contains(t, "sampling", r.stdout, `"model": "snodo-echo"`, "echo: ")
		r = ok(t, cli(t, append(handlers, with("tools", "call", "get-roots-list", "-o", "text")...)...))
		contains(t, "roots", r.stdout, "URI: file:///work")
	})
	t.Run("resources", func(t *testing.T) {
		contains(t, "list", ok(t, cli(t, with("resources", "list")...)).stdout, `"uri":"demo://resource/static/document/`)
		contains(t, "templates", ok(t, cli(t, with("resources", "templates")...)).stdout, `"uriTemplate":"demo://resource/dynamic/text/{resourceId}"`)
		contains(t, "read", ok(t, cli(t, with("resources", "read", "demo://resource/dynamic/text/1", "-o", "text")...)).stdout, "Resource 1:")
	})
	t.Run("prompts", func(t *testing.T) {
		contains(t, "list", ok(t, cli(t, with("prompts", "list", "-o", "text")...)).stdout, "args-prompt(city, state?)")
		contains(t, "get", ok(t, cli(t, with("prompts", "get", "args-prompt", "--arg", "city=Paris", "-o", "text")...)).stdout, "Paris")
	})
	t.Run("complete", func(t *testing.T) {
		contains(t, "complete", ok(t, cli(t, with("complete", "--prompt", "completable-prompt", "--arg", "department=E")...)).stdout, "Engineering")
	})
	t.Run("listen", func(t *testing.T) {
		ok(t, cliWith(t, runOpts{interrupt: sigint("subscription accepted")}, with("-v", "listen", "--resources")...))
	})
	t.Run("call", func(t *testing.T) {
		if r := ok(t, cli(t, with("call", "ping")...)); strings.TrimSpace(r.stdout) != "{}" {
			t.Errorf("ping result %q, want {}", r.stdout)
		}
	})
}

// "The config file can also hold the de facto standard mcpServers map …, so
// --server NAME starts a server from an existing host configuration"; env
// names keep their case and a null value unsets.
func TestServerFromMCPServersMap(t *testing.T) {
	srv := everything(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "claude_desktop_config.json")
	body := fmt.Sprintf(`{"mcpServers": {"Everything": {"command": %q, "args": [], "env": {"Snodo_Mixed_Case": "kept", "MCP_TEST_TO_UNSET": null}}}}`, srv)
	os.WriteFile(cfg, []byte(body), 0o644)
	r := ok(t, cliWith(t, runOpts{env: []string{"MCP_TEST_TO_UNSET=present"}}, "--config", cfg, "--server", "Everything", "tools", "call", "get-env", "-o", "text"))
	contains(t, "get-env", r.stdout, `"Snodo_Mixed_Case": "kept"`)
	if strings.Contains(r.stdout, "MCP_TEST_TO_UNSET") {
		t.Errorf("a null env value did not unset the variable:\n%s", r.stdout)
	}
	// SNODO_SERVER_NAME picks the server too.
	ok(t, cliWith(t, runOpts{env: []string{"SNODO_SERVER_NAME=Everything"}}, "--config", cfg, "discover"))
	e := exits(t, cli(t, "--config", cfg, "--server", "nope", "discover"), exitUsage, "config")
	contains(t, "error", e.Message, `no server named "nope" in mcpServers (have: Everything)`)
}

// "precedence flags > environment (SNODO_…) > config file (--config or
// SNODO_CONFIG, or snodo.yaml in the user's config directory; YAML, TOML or
// JSON) > defaults"
func TestConfigPrecedence(t *testing.T) {
	version := func(r result) string {
		t.Helper()
		v := ok(t, r).json(t)
		return fmt.Sprint(v["protocolVersion"])
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "snodo.yaml"), []byte("protocol: \"2025-06-18\"\n"), 0o644)
	server := []string{"discover", "--", demo, "--era", "legacy"}

	if got := version(cli(t, server...)); got != "2025-11-25" {
		t.Errorf("default: protocol %s, want 2025-11-25", got)
	}
	if got := version(cliWith(t, runOpts{dir: dir}, append([]string{"--config", "./snodo.yaml"}, server...)...)); got != "2025-06-18" {
		t.Errorf("--config ./snodo.yaml: protocol %s, want 2025-06-18", got)
	}
	if got := version(cliWith(t, runOpts{dir: dir, env: []string{"SNODO_CONFIG=snodo.yaml"}}, server...)); got != "2025-06-18" {
		t.Errorf("SNODO_CONFIG=snodo.yaml: protocol %s, want 2025-06-18", got)
	}
	if got := version(cliWith(t, runOpts{dir: dir, env: []string{"SNODO_PROTOCOL=2025-03-26"}}, append([]string{"--config", "snodo.yaml"}, server...)...)); got != "2025-03-26" {
		t.Errorf("environment over config file: protocol %s, want 2025-03-26", got)
	}
	if got := version(cliWith(t, runOpts{dir: dir, env: []string{"SNODO_PROTOCOL=2025-03-26"}}, append([]string{"--config", "snodo.yaml", "--protocol", "2024-11-05"}, server...)...)); got != "2024-11-05" {
		t.Errorf("flag over environment: protocol %s, want 2024-11-05", got)
	}

	// TOML and JSON by --config; the user's config directory.
	toml := filepath.Join(t.TempDir(), "my.toml")
	os.WriteFile(toml, []byte("protocol = \"2025-03-26\"\n"), 0o644)
	if got := version(cli(t, append([]string{"--config", toml}, server...)...)); got != "2025-03-26" {
		t.Errorf("TOML --config: protocol %s", got)
	}
	js := filepath.Join(t.TempDir(), "my.json")
	os.WriteFile(js, []byte(`{"protocol": "2024-11-05"}`), 0o644)
	if got := version(cli(t, append([]string{"--config", js}, server...)...)); got != "2024-11-05" {
		t.Errorf("JSON --config: protocol %s", got)
	}
	xdg := t.TempDir()
	os.MkdirAll(filepath.Join(xdg, "snodo"), 0o755)
	os.WriteFile(filepath.Join(xdg, "snodo", "snodo.toml"), []byte("protocol = \"2025-06-18\"\n"), 0o644)
	if got := version(cliWith(t, runOpts{env: []string{"XDG_CONFIG_HOME=" + xdg}}, server...)); got != "2025-06-18" {
		t.Errorf("user config directory: protocol %s", got)
	}
}

// A snodo.yaml in the working directory, which may have come with a
// checkout, is not read unless named: the user's config applies, its
// guard.deny kept (or none, when the user has none), the server does not
// get its server.env, and a one-line notice on stderr says how to use it;
// --config ./snodo.yaml uses it.
func TestWorkingDirectoryConfigIsNotReadImplicitly(t *testing.T) {
	dir := t.TempDir()
	planted := "guard:\n  allow: [\"*\"]\nserver:\n  env:\n    SNODO_TEST_FROM_CWD: planted\n"
	if err := os.WriteFile(filepath.Join(dir, "snodo.yaml"), []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	xdg := t.TempDir()
	userCfg := filepath.Join(xdg, "snodo", "snodo.yaml")
	os.MkdirAll(filepath.Dir(userCfg), 0o755)
	if err := os.WriteFile(userCfg, []byte("guard:\n  deny: [\"echo\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The server is the demo, started by a shell that first writes down
	// what it got of SNODO_TEST_FROM_CWD.
	envOut := filepath.Join(t.TempDir(), "env")
	server := []string{"--", "sh", "-c", `printf %s "$SNODO_TEST_FROM_CWD" > "$0"; exec "$1"`, envOut, demo}
	run := func(o runOpts, args ...string) (result, string) {
		t.Helper()
		os.Remove(envOut)
		r := ok(t, cliWith(t, o, append(args, server...)...))
		got, err := os.ReadFile(envOut)
		if err != nil {
			t.Fatalf("the server did not start: %v", err)
		}
		return r, string(got)
	}
	const notice = "./snodo.yaml was not read: a config file in the working directory is read only when named, with --config ./snodo.yaml"

	r, env := run(runOpts{dir: dir, env: []string{"XDG_CONFIG_HOME=" + xdg}}, "tools", "list", "-o", "text")
	if env != "" || strings.Contains(r.stdout, "echo(") {
		t.Errorf("with a user config, the working directory's config was applied: server env %q, tools:\n%s", env, r.stdout)
	}
	contains(t, "stderr", r.stderr, notice, "the config file read is "+userCfg)
	if n := strings.Count(r.stderr, "was not read"); n != 1 {
		t.Errorf("the notice is printed %d times:\n%s", n, r.stderr)
	}

	r, env = run(runOpts{dir: dir}, "tools", "list", "-o", "text")
	if env != "" {
		t.Errorf("without a user config, the working directory's config was applied: server env %q", env)
	}
	contains(t, "stderr", r.stderr, notice, "no config file is read")

	r, env = run(runOpts{dir: dir, env: []string{"XDG_CONFIG_HOME=" + xdg}}, "--config", "./snodo.yaml", "tools", "list", "-o", "text")
	if env != "planted" || !strings.Contains(r.stdout, "echo(") {
		t.Errorf("--config ./snodo.yaml: server env %q, tools:\n%s", env, r.stdout)
	}
	if strings.Contains(r.stderr, "was not read") {
		t.Errorf("--config ./snodo.yaml: a notice:\n%s", r.stderr)
	}
}

// The server, the handlers and their settings can all come from the
// config file.
func TestConfigFileHoldsServerAndModules(t *testing.T) {
	dir := t.TempDir()
	body := fmt.Sprintf(`server:
  command: %q
  args: ["--era", "modern"]
  env:
    SOME_VAR: "1"
handler: [%q]
output: text
modules:
  elicit-policy:
    config: {"values": {"name": "Linus"}}
`, demo, elicitWasm)
	os.WriteFile(filepath.Join(dir, "snodo.yaml"), []byte(body), 0o644)
	r := ok(t, cliWith(t, runOpts{dir: dir}, "--config", "snodo.yaml", "tools", "call", "register"))
	contains(t, "register", r.stdout, "registered Linus")

	// A sha256 pin that does not match refuses the module.
	pinned := body + "    sha256: \"0000000000000000000000000000000000000000000000000000000000000000\"\n"
	os.WriteFile(filepath.Join(dir, "snodo.yaml"), []byte(pinned), 0o644)
	e := exits(t, cliWith(t, runOpts{dir: dir}, "--config", "snodo.yaml", "tools", "call", "register"), exitHandler, "handler")
	contains(t, "error", e.Message, "elicit-policy", "sha256")
}

// modules.NAME.limits bound what the module may name: a Go module's
// functions have more locals than a limit of 8, and it is refused, naming
// the key.
func TestConfigModuleLimitsRefuseAModule(t *testing.T) {
	dir := t.TempDir()
	body := fmt.Sprintf("handler: [%q]\nmodules:\n  elicit-policy:\n    limits: {locals: 8}\n", elicitWasm)
	cfg := filepath.Join(dir, "limits.yaml")
	os.WriteFile(cfg, []byte(body), 0o600)
	e := exits(t, cli(t, "--config", cfg, "tools", "call", "register", "--", demo), exitHandler, "handler")
	contains(t, "error", e.Message, "elicit-policy", "over the limit of 8 (limits.locals)")
}

// The guard allows or denies tools by name pattern.
func TestGuardAllowsAndDeniesToolsByPattern(t *testing.T) {
	server := []string{"--", demo}
	r := ok(t, cli(t, append([]string{"--deny-tool", "toggle*", "--deny-tool", "fail", "tools", "list", "-o", "text"}, server...)...))
	if strings.Contains(r.stdout, "toggle_bonus") || strings.Contains(r.stdout, "fail(") {
		t.Errorf("denied tools listed:\n%s", r.stdout)
	}
	contains(t, "tools", r.stdout, "echo(")
	r = ok(t, cli(t, append([]string{"--allow-tool", "e*", "tools", "list", "-o", "text"}, server...)...))
	if strings.Count(r.stdout, "(") != 1 {
		t.Errorf("allow e* listed more than echo:\n%s", r.stdout)
	}
	e := exits(t, cli(t, append([]string{"--allow-tool", "e*", "tools", "call", "count"}, server...)...), exitUsage, "guard")
	contains(t, "error", e.Message, `tool "count" is not allowed by the guard`)
	exits(t, cli(t, append([]string{"--deny-tool", "echo", "call", "tools/call", "--params", `{"name":"echo"}`}, server...)...), exitUsage, "guard")
	r = ok(t, cli(t, append([]string{"--deny-tool", "*", "call", "tools/list"}, server...)...))
	contains(t, "raw tools/list", r.stdout, `"tools":[]`)
}

// "exit codes …: 0 success, 1 the server answered with an error or a tool
// result with isError, 2 usage or configuration error, 3 connection or
// transport failure, 4 timeout, 5 handler failure"
func TestExitCodes(t *testing.T) {
	server := []string{"--", demo}
	t.Run("0 success", func(t *testing.T) {
		ok(t, cli(t, append([]string{"tools", "call", "echo", "--arg", "text=x"}, server...)...))
	})
	t.Run("1 tool result with isError", func(t *testing.T) {
		r := cli(t, append([]string{"tools", "call", "fail", "--arg", "message=broken"}, server...)...)
		e := exits(t, r, exitServer, "tool")
		contains(t, "error", e.Message, "broken")
		contains(t, "stdout", r.stdout, `"isError":true`)
	})
	t.Run("1 server error", func(t *testing.T) {
		for _, era := range eras {
			e := exits(t, cli(t, "tools", "call", "no_such_tool", "--", demo, "--era", era), exitServer, "server")
			contains(t, "error", e.Message, "no_such_tool")
		}
	})
	t.Run("2 usage", func(t *testing.T) {
		e := exits(t, cli(t, "--bogus", "discover"), exitUsage, "usage")
		contains(t, "error", e.Message, "unknown flag: --bogus")
		exits(t, cli(t, "frobnicate"), exitUsage, "usage")
		exits(t, cli(t, "tools", "call"), exitUsage, "usage")
		e = exits(t, cli(t, append([]string{"--output", "xml", "discover"}, server...)...), exitUsage, "usage")
		contains(t, "error", e.Message, "--output must be json, pretty or text")
		e = exits(t, cli(t, append([]string{"--protocol", "1999-01-01", "discover"}, server...)...), exitUsage, "usage")
		contains(t, "error", e.Message, "protocol must be auto, legacy, modern")
		e = exits(t, cliWith(t, runOpts{env: []string{"SNODO_TIMEOUT=forever"}}, append([]string{"discover"}, server...)...), exitUsage, "usage")
		contains(t, "error", e.Message, "timeout must be a Go duration")
		e = exits(t, cli(t, "discover"), exitUsage, "usage")
		contains(t, "error", e.Message, "no server")
		exits(t, cli(t, append([]string{"tools", "call", "echo", "--args", "[1]"}, server...)...), exitUsage, "usage")
	})
	t.Run("2 no handler for what a modern server asks", func(t *testing.T) {
		e := exits(t, cli(t, "tools", "call", "register", "--", demo, "--era", "modern"), exitUsage, "config")
		contains(t, "error", e.Message, "elicitation/create", "no handler", "--handler")
	})
	t.Run("2 malformed config", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "snodo.yaml"), []byte("protocol: [unclosed\n"), 0o644)
		e := exits(t, cliWith(t, runOpts{dir: dir}, append([]string{"--config", "snodo.yaml", "discover"}, server...)...), exitUsage, "config")
		contains(t, "error", e.Message, "snodo.yaml is malformed")
		e = exits(t, cli(t, append([]string{"--config", filepath.Join(dir, "missing.yaml"), "discover"}, server...)...), exitUsage, "config")
		contains(t, "error", e.Message, "missing.yaml")
	})
	t.Run("3 server command not found", func(t *testing.T) {
		e := exits(t, cli(t, "discover", "--", "/nonexistent/mcp-server"), exitConnection, "transport")
		contains(t, "error", e.Message, `cannot start the server "/nonexistent/mcp-server"`, "no such file or directory")
	})
	t.Run("3 server exits at once, its stderr tail shown", func(t *testing.T) {
		r := cli(t, "discover", "--", "sh", "-c", "echo 'fatal: no API key configured' >&2; exit 7")
		e := exits(t, r, exitConnection, "transport")
		contains(t, "error", e.Message, "exit status 7", "fatal: no API key configured")
		var data struct {
			ExitCode int    `json:"exitCode"`
			Stderr   string `json:"stderr"`
		}
		if err := json.Unmarshal(e.Data, &data); err != nil || data.ExitCode != 7 || data.Stderr != "fatal: no API key configured" {
			t.Errorf("error data %s, want exitCode 7 and the stderr tail", e.Data)
		}
	})
	t.Run("3 no mutually supported version", func(t *testing.T) {
		// The SDK's era-aware legacy server answers the probe with -32022
		// and legacy versions only. Forced to the modern era, there is no
		// version both speak: a protocol failure.
		e := exits(t, cli(t, "--protocol", "modern", "discover", "--", demo, "--era", "legacy", "--sdk-discover"), exitConnection, "protocol")
		if e.Code != -32022 {
			t.Errorf("error code %d, want the server's -32022", e.Code)
		}
		contains(t, "error", e.Message, "the server supports only the versions [2025-11-25", "use --protocol legacy")
		// By default the client follows the server's list to a legacy
		// version, and the connection works.
		v := ok(t, cli(t, "discover", "--", demo, "--era", "legacy", "--sdk-discover")).json(t)
		if v["era"] != "legacy" {
			t.Errorf("era %v, want legacy from the server's -32022 list", v["era"])
		}
	})
	t.Run("4 timeout", func(t *testing.T) {
		e := exits(t, cli(t, append([]string{"--timeout", "200ms", "tools", "call", "count", "--arg", "steps=1", "--arg", "delay_ms=5000"}, server...)...), exitTimeout, "transport")
		contains(t, "error", e.Message, "timed out")
	})
	t.Run("5 missing module", func(t *testing.T) {
		e := exits(t, cli(t, append([]string{"--handler", "/nonexistent/elicit.wasm", "discover"}, server...)...), exitHandler, "handler")
		contains(t, "error", e.Message, "/nonexistent/elicit.wasm")
	})
	t.Run("5 invalid module", func(t *testing.T) {
		e := exits(t, cli(t, append([]string{"--handler", missingExpWasm, "discover"}, server...)...), exitHandler, "handler")
		contains(t, "error", e.Message, "missing-exports")
		notWasm := filepath.Join(t.TempDir(), "text.wasm")
		os.WriteFile(notWasm, []byte("not wasm"), 0o644)
		exits(t, cli(t, append([]string{"--handler", notWasm, "discover"}, server...)...), exitHandler, "handler")
	})
	t.Run("5 handler fails while answering", func(t *testing.T) {
		for _, era := range eras {
			e := exits(t, cli(t, "--handler", trapWasm, "tools", "call", "register", "--", demo, "--era", era), exitHandler, "handler")
			contains(t, "error", e.Message, "trap")
		}
	})
}

// "handlers check FILE.wasm (validate a module against the ABI, print what
// it declares and what it imports)"
func TestHandlersCheck(t *testing.T) {
	var rep struct {
		Name     string
		SHA256   string
		Manifest struct{ Methods []string }
		Imports  []string
		Exports  []string
	}
	r := ok(t, cli(t, "handlers", "check", elicitWasm))
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Name != "elicit-policy" || len(rep.SHA256) != 64 || fmt.Sprint(rep.Manifest.Methods) != "[elicitation/create]" {
		t.Errorf("report %+v", rep)
	}
	contains(t, "imports", strings.Join(rep.Imports, "\n"), "snodo.set_output(i32, i32)", "wasi_snapshot_preview1.fd_write(i32, i32, i32, i32) -> i32")
	// The module's own imports, each once (Go's runtime imports fd_write
	// twice), without the one Snodo's instrumentation adds.
	for i, imp := range rep.Imports {
		if strings.Contains(imp, "yield") && strings.HasPrefix(imp, "snodo.") {
			t.Errorf("imports list Snodo's own %s", imp)
		}
		if i > 0 && rep.Imports[i-1] == imp {
			t.Errorf("imports list %s twice", imp)
		}
	}
	contains(t, "exports", strings.Join(rep.Exports, "\n"), "snodo_handle(i32, i32) -> i32", "snodo_describe() -> i32")

	text := ok(t, cli(t, "handlers", "check", stopAfterWasm, "-o", "text")).stdout
	contains(t, "text", text, "stop-after", "consumes subscription events", "imports:\n  snodo.config(i32, i32) -> i32")

	e := exits(t, cli(t, "handlers", "check", missingExpWasm), exitHandler, "handler")
	contains(t, "missing exports", e.Message, "missing-exports", "snodo_")
	exits(t, cli(t, "handlers", "check", badManifestWasm), exitHandler, "handler")
	exits(t, cli(t, "handlers", "check", "/nonexistent.wasm"), exitHandler, "handler")
}

// A compilation cache directory others can write is refused before any
// module runs, as a configuration error (exit 2) that names the directory,
// what is wrong and the fix: whoever can write it could choose the code a
// module runs.
func TestCacheDirOthersCanWriteIsAConfigError(t *testing.T) {
	loose := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(loose, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o777); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"tools list":     {"--handler", elicitWasm, "tools", "list", "--", demo},
		"proxy":          {"--handler", elicitWasm, "proxy", "--", demo},
		"handlers check": {"handlers", "check", elicitWasm},
		"handlers test":  {"handlers", "test", elicitWasm, "--method", "elicitation/create", "--params", `{"message":"x","requestedSchema":{"type":"object"}}`},
	} {
		t.Run(name, func(t *testing.T) {
			e := exits(t, cli(t, append([]string{"--cache-dir", loose}, args...)...), exitUsage, "config")
			contains(t, "error", e.Message, loose, "writable by group and others", "chmod go-w "+loose, "--cache-dir")
		})
	}
}

// "handlers test FILE.wasm --method M --params JSON|@file (run one input
// through a module without a server: the handler author's inner loop)"
func TestHandlersTest(t *testing.T) {
	req := `{"mode":"form","message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"},"plan":{"type":"string","enum":["free","pro"],"default":"free"}},"required":["name"]}}`
	file := filepath.Join(t.TempDir(), "req.json")
	os.WriteFile(file, []byte(req), 0o644)
	r := ok(t, cli(t, "--handler-config", `{"values":{"name":"Ada"}}`, "handlers", "test", elicitWasm, "--method", "elicitation/create", "--params", "@"+file))
	var res struct {
		Action  string
		Content map[string]any
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Action != "accept" || res.Content["name"] != "Ada" || res.Content["plan"] != "free" {
		t.Errorf("elicitation result %s", r.stdout)
	}
	r = ok(t, cli(t, "handlers", "test", elicitWasm, "--method", "elicitation/create", "--params", req))
	contains(t, "without config", r.stdout, `"action":"decline"`)

	r = ok(t, cli(t, "handlers", "test", samplingWasm, "--method", "sampling/createMessage", "--params",
		`{"messages":[{"role":"user","content":{"type":"text","text":"hi there"}}],"maxTokens":10}`))
	contains(t, "sampling", r.stdout, `"model":"snodo-echo"`, "echo: hi there")

	r = ok(t, cli(t, "--handler-config", "1", "handlers", "test", stopAfterWasm, "--method", "notifications/tools/list_changed", "--params", `{}`))
	if strings.TrimSpace(r.stdout) != `{"stop":true}` {
		t.Errorf("event consumer answered %s, want stop", r.stdout)
	}
	r = ok(t, cli(t, "--handler-config", `{"cancelAt":5}`, "handlers", "test", testkitWasm, "--method", "progress", "--params", `{"progressToken":1,"progress":1}`))
	if strings.TrimSpace(r.stdout) != `{"stop":false}` {
		t.Errorf("progress consumer answered %s, want go on", r.stdout)
	}

	e := exits(t, cli(t, "handlers", "test", trapWasm, "--method", "elicitation/create", "--params", req), exitHandler, "handler")
	contains(t, "trap", e.Message, "trap")
	exits(t, cli(t, "handlers", "test", elicitWasm, "--method", "roots/list"), exitHandler, "handler")
	exits(t, cli(t, "handlers", "test", elicitWasm, "--method", "tools/call"), exitUsage, "usage")
	exits(t, cli(t, "handlers", "test", elicitWasm), exitUsage, "usage")
	exits(t, cli(t, "handlers", "test", elicitWasm, "--method", "elicitation/create", "--params", "{not json"), exitUsage, "usage")
}

// Guest text reaches the terminal escaped: a module (named by a hostile
// file name) that logs "\n[INFO] forged\x1b[31m" and answers an error
// message doing the same cannot start a line, forge one, colour the
// terminal or reorder it with a bidi override — in handlers test's logs or
// in its error report.
func TestHandlersTestEscapesGuestText(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(watDir, "hostile", "log-forge.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "forge\n[WARN] name\x1b[2J.wasm")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	r := cli(t, "handlers", "test", path, "--method", "elicitation/create", "--params", `{"message":"x","requestedSchema":{"type":"object"}}`)
	e := exits(t, r, exitHandler, "handler")
	contains(t, "error message", e.Message, `refused\n[ERROR] forged\x1b[31m\r\u202e`)
	contains(t, "stderr", r.stderr, `\n[INFO] forged\x1b[31m\u202e`, `wasm_module="forge`)
	for what, out := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
		for _, bad := range []string{"\x1b", "\r", "\u202e", "\n[INFO] forged", "\n[ERROR] forged", "\n[WARN] name"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s holds %q raw:\n%s", what, bad, out)
			}
		}
	}
}

// "--help with an example for every command", and shell completion.
func TestHelpHasAnExampleForEveryCommand(t *testing.T) {
	root := (&app{}).newRoot()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Name() == "help" || sub.Name() == "completion" {
				continue // cobra's own
			}
			if sub.Example == "" {
				t.Errorf("%s has no example in --help", sub.CommandPath())
			}
			walk(sub)
		}
	}
	walk(root)
	r := ok(t, cli(t, "--help"))
	contains(t, "help", r.stdout, "Exit codes:", "5  handler failure", "Examples:")
	r = ok(t, cli(t, "tools", "call", "--help"))
	contains(t, "tools call help", r.stdout, "Examples:", "snodo-run tools call echo --arg text=hello")
	contains(t, "completion", ok(t, cli(t, "completion", "bash")).stdout, "bash completion")
	contains(t, "version", ok(t, cli(t, "version")).stdout, `"handlerABI":2`)
}

// handlers check passes every example module, in each language, as
// scripts/build-examples.sh builds or commits it.
func TestHandlersCheckEveryExampleModule(t *testing.T) {
	modules := []string{elicitWasm, samplingWasm,
		filepath.Join(examplesDir, "c", "roots", "roots.wasm"),
		filepath.Join(examplesDir, "assemblyscript", "progress-cancel", "progress-cancel.wasm"),
		filepath.Join(examplesDir, "wat", "accept", "accept.wasm"),
		stopAfterWasm,
	}
	for _, m := range modules {
		t.Run(filepath.Base(m), func(t *testing.T) {
			r := ok(t, cli(t, "handlers", "check", m, "-o", "text"))
			contains(t, "check", r.stdout, "ABI version 1", "exports:")
		})
	}
}

// The C roots module and the AssemblyScript progress consumer at work
// against the demo server, in both eras.
func TestCAndAssemblyScriptModulesAgainstDemo(t *testing.T) {
	roots := filepath.Join(examplesDir, "c", "roots", "roots.wasm")
	progress := filepath.Join(examplesDir, "assemblyscript", "progress-cancel", "progress-cancel.wasm")
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			r := ok(t, cli(t, "--handler", roots, "--handler-config", `["/srv/shared data","/home/me"]`,
				"tools", "call", "roots", "-o", "text", "--", demo, "--era", era))
			contains(t, "roots", r.stdout, "2 roots: file:///srv/shared%20data, file:///home/me")
			r = cli(t, "--progress", progress, "--handler-config", `{"maxProgress":2}`,
				"tools", "call", "count", "--arg", "steps=50", "--arg", "delay_ms=20", "--", demo, "--era", era)
			exits(t, r, exitHandler, "handler")
		})
	}
}

// "when the server reports progress and stderr is a terminal, a live
// progress bar with the server's message": run under script(1), which
// gives snodo-run a pseudo-terminal.
func TestProgressBarOnATerminal(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Fatal("script(1) is needed to give snodo-run a terminal: install the Debian package bsdutils (util-linux)")
	}
	line := strings.Join([]string{binary, "tools", "call", "count", "--arg", "steps=3", "--arg", "delay_ms=50", "--", demo}, " ")
	cmd := exec.Command(scriptBin, "-qec", line, "/dev/null")
	cmd.Env = append(os.Environ(), "SNODO_CACHE_DIR="+cacheDir, "TERM=xterm")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	contains(t, "terminal output", string(out), "step 2 of 3  66% |", "step 3 of 3", "counted to 3")
}

// --env, --cd and --max-line-bytes reach the server and its connection.
func TestServerEnvDirAndLineLimit(t *testing.T) {
	dir := t.TempDir()
	r := cli(t, "--env", "GREETING=hello from env", "--cd", dir, "discover", "--", "sh", "-c", `echo "$GREETING in $(pwd)" >&2; exit 1`)
	e := exits(t, r, exitConnection, "transport")
	contains(t, "stderr tail", e.Message, "hello from env in "+dir)

	// A response line over the limit is discarded: the request times out.
	long := strings.Repeat("x", 4000)
	exits(t, cli(t, "--max-line-bytes", "2048", "--timeout", "1s", "tools", "call", "echo", "--arg", "text="+long, "--", demo), exitTimeout, "transport")
	ok(t, cli(t, "--max-line-bytes", "8192", "tools", "call", "echo", "--arg", "text="+long, "--", demo))
}

// "text: tool lists as name, signature and description; content blocks
// readable"
func TestTextOutputRendersContentBlocks(t *testing.T) {
	srv := everything(t)
	r := ok(t, cli(t, "tools", "call", "get-tiny-image", "-o", "text", "--", srv))
	contains(t, "image", r.stdout, "[image image/png, ")
	r = ok(t, cli(t, "tools", "call", "get-resource-links", "--arg", "count=2", "-o", "text", "--", srv))
	contains(t, "links", r.stdout, "[link demo://resource/")
	r = ok(t, cli(t, "resources", "read", "demo://resource/dynamic/blob/1", "-o", "text", "--", srv))
	contains(t, "blob", r.stdout, "--- demo://resource/dynamic/blob/1 [", "bytes base64]")
}
