package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A key of the config file that names no setting is an error naming the
// key, the file and its line, and the closest valid key: at the top level,
// nested (server.comand was taken for no server at all), in an mcpServers
// entry, and in JSON and TOML files.
func TestStrictConfigFileKeys(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	server := []string{"discover", "--", demo}

	y := write("top.yaml", "output: json\nprotocl: legacy\n")
	e := exits(t, cli(t, append([]string{"--config", y}, server...)...), exitUsage, "config")
	contains(t, "error", e.Message, y+":2: unknown key protocl (did you mean protocol?)")

	y = write("nested.yaml", fmt.Sprintf("server:\n  comand: %q\n", demo))
	e = exits(t, cli(t, "--config", y, "discover"), exitUsage, "config")
	contains(t, "error", e.Message, y+":2: unknown key server.comand (did you mean server.command?)")

	j := write("hosts.json", fmt.Sprintf("{\n  \"mcpServers\": {\n    \"demo\": {\"command\": %q,\n      \"arg\": []}\n  }\n}\n", demo))
	e = exits(t, cli(t, "--config", j, "--server", "demo", "discover"), exitUsage, "config")
	contains(t, "error", e.Message, j+":4: unknown key mcpServers.demo.arg (did you mean mcpServers.demo.args?)")

	tm := write("c.toml", "timeot = \"5s\"\n[guard]\nalow = [\"x\"]\n")
	e = exits(t, cli(t, append([]string{"--config", tm}, server...)...), exitUsage, "config")
	contains(t, "error", e.Message, tm+": unknown key timeot (did you mean timeout?)", tm+": unknown key guard.alow (did you mean guard.allow?)")

	// The error's data lists each key for programs.
	contains(t, "data", string(e.Data), `"key":"timeot"`, `"suggestion":"timeout"`)
}

// A SNODO_ environment variable that looks like a misspelt setting is an
// error too; one that is nowhere near a setting is someone else's and is
// left alone.
func TestStrictEnvironment(t *testing.T) {
	e := exits(t, cliWith(t, runOpts{env: []string{"SNODO_TIMOUT=5s"}}, "discover", "--", demo), exitUsage, "config")
	contains(t, "error", e.Message, "environment variable SNODO_TIMOUT names no snodo-run setting (did you mean SNODO_TIMEOUT?)")
	// Every setting's variable is accepted.
	ok(t, cliWith(t, runOpts{env: []string{"SNODO_CONNECT_TIMEOUT=20s", "SNODO_GUARD_DENY=x", "SNODO_SERVER_STDERR=false"}}, "discover", "--", demo))
	// A wrapper script's variables are not settings and not typos of one.
	ok(t, cliWith(t, runOpts{env: []string{"SNODO_RUN=/path/to/snodo-run", "SNODO_HOME=/opt/snodo", "SNODO_WRAPPER_VERSION=3"}}, "discover", "--", demo))
	// Among them, the typo is still caught, and only it is named.
	e = exits(t, cliWith(t, runOpts{env: []string{"SNODO_RUN=/path/to/snodo-run", "SNODO_PROTOCL=legacy"}}, "discover", "--", demo), exitUsage, "config")
	contains(t, "error", e.Message, "SNODO_PROTOCL names no snodo-run setting (did you mean SNODO_PROTOCOL?)")
	if strings.Contains(e.Message, "SNODO_RUN") {
		t.Errorf("error names SNODO_RUN, which is no typo of a setting: %s", e.Message)
	}
}

// A modules entry whose name matches no loaded module would drop that
// module's settings, its sha256 pin among them: it is an error.
func TestModulesEntryMustNameALoadedModule(t *testing.T) {
	dir := t.TempDir()
	body := "modules:\n  elicit-polcy:\n    sha256: \"0000000000000000000000000000000000000000000000000000000000000000\"\n"
	if err := os.WriteFile(filepath.Join(dir, "snodo.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	e := exits(t, cliWith(t, runOpts{dir: dir}, "--config", "snodo.yaml", "--handler", elicitWasm, "discover", "--", demo), exitUsage, "config")
	contains(t, "error", e.Message, "snodo.yaml:2: modules.elicit-polcy names no module this run loads", "sha256", "did you mean modules.elicit-policy?")
	// handlers check counts the module it is given.
	e = exits(t, cliWith(t, runOpts{dir: dir}, "--config", "snodo.yaml", "handlers", "check", elicitWasm), exitUsage, "config")
	contains(t, "error", e.Message, "did you mean modules.elicit-policy?")
}

// --connect-timeout bounds connecting to a server that never answers.
func TestConnectTimeout(t *testing.T) {
	start := time.Now()
	e := exits(t, cli(t, "--connect-timeout", "1s", "discover", "--", "sleep", "300"), exitTimeout, "transport")
	contains(t, "error", e.Message, "within 1s", "--connect-timeout")
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v with --connect-timeout 1s", d)
	}
}

// Unknown subcommands and flags are usage errors (exit 2) that say what
// was meant, at every level, and help on an unknown topic is one too.
func TestUnknownCommandsAndFlags(t *testing.T) {
	e := exits(t, cli(t, "tools", "lst", "--", demo), exitUsage, "usage")
	contains(t, "error", e.Message, `unknown command "lst" for "snodo-run tools"; did you mean list?`)
	e = exits(t, cli(t, "completion", "nushell"), exitUsage, "usage")
	contains(t, "error", e.Message, `unknown command "nushell" for "snodo-run completion"`, "bash")
	e = exits(t, cli(t, "--bogus", "tools", "list", "--", demo), exitUsage, "usage")
	contains(t, "error", e.Message, "unknown flag: --bogus", "see snodo-run --help")
	// An unknown flag close to one the command takes names it, persistent
	// flags and the command's own alike.
	e = exits(t, cli(t, "--timout", "5s", "tools", "list", "--", demo), exitUsage, "usage")
	contains(t, "error", e.Message, "unknown flag: --timout; did you mean --timeout?")
	e = exits(t, cli(t, "tools", "call", "echo", "--no-valdate", "--", demo), exitUsage, "usage")
	contains(t, "error", e.Message, "unknown flag: --no-valdate; did you mean --no-validate?", "see snodo-run tools call --help")
	e = exits(t, cli(t, "lisen"), exitUsage, "usage")
	contains(t, "error", e.Message, "did you mean listen?")
	e = exits(t, cli(t, "help", "tools", "lst"), exitUsage, "usage")
	contains(t, "error", e.Message, `unknown command "lst" for "snodo-run tools"`)
	exits(t, cli(t, "handlers", "check"), exitUsage, "usage")
	exits(t, cli(t, "version", "extra"), exitUsage, "usage")
	// A group without a subcommand shows its help.
	contains(t, "tools help", ok(t, cli(t, "tools")).stdout, "Available Commands:")
	contains(t, "help tools list", ok(t, cli(t, "help", "tools", "list")).stdout, "tools list")
}

// A working directory that does not exist is reported as such, with where
// it was set, not as the server's command missing.
func TestBadWorkingDirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nowhere")
	e := exits(t, cli(t, "--cd", missing, "discover", "--", demo), exitUsage, "config")
	contains(t, "error", e.Message, "working directory "+missing+" does not exist", "--cd")
	cfg := filepath.Join(t.TempDir(), "hosts.json")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`{"mcpServers":{"d":{"command":%q,"cwd":%q}}}`, demo, missing)), 0o644)
	e = exits(t, cli(t, "--config", cfg, "--server", "d", "discover"), exitUsage, "config")
	contains(t, "error", e.Message, "does not exist", "mcpServers.d.cwd")
}

// --protocol modern against a legacy server says what is missing and what
// to do.
func TestModernAgainstLegacyServer(t *testing.T) {
	e := exits(t, cli(t, "--protocol", "modern", "discover", "--", demo, "--era", "legacy"), exitConnection, "protocol")
	contains(t, "error", e.Message, "server/discover", "legacy era", "initialize", "--protocol legacy", "auto")
}

// Every -32601 names the method called, even when the server's message
// is a bare "Method not found".
func TestMethodNotFoundNamesTheMethod(t *testing.T) {
	e := exits(t, cli(t, "call", "no/such-method", "--", everything(t)), exitServer, "server")
	contains(t, "error", e.Message, "no/such-method")
}

// A config file that cannot be read says so and why, instead of calling
// it malformed.
func TestUnreadableConfigFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snodo.yaml") // a directory: unreadable as a file, even by root
	os.Mkdir(dir, 0o755)
	e := exits(t, cli(t, "--config", dir, "discover", "--", demo), exitUsage, "config")
	contains(t, "error", e.Message, "cannot be read", "is a directory")
	if strings.Contains(e.Message, "malformed") {
		t.Errorf("an unreadable file called malformed: %s", e.Message)
	}
}

// The error of an interrupted run says it once.
func TestInterruptMessageOnce(t *testing.T) {
	r := cliWith(t, runOpts{interrupt: sigint("step 2 of 500")}, "--verbose",
		"tools", "call", "count", "--arg", "steps=500", "--arg", "delay_ms=20", "--", demo)
	e := exits(t, r, exitInterrupt, "interrupted")
	if n := strings.Count(e.Message, "cancel"); n != 1 {
		t.Errorf("the message says cancelled %d times: %s", n, e.Message)
	}
	contains(t, "error", e.Message, "interrupted (interrupt)")
	if n := strings.Count(r.stderr, "stopping the server"); n != 1 {
		t.Errorf("the signal notice shown %d times:\n%s", n, r.stderr)
	}
}

// An empty --handler is a usage error, not no handler.
func TestEmptyHandlerIsAUsageError(t *testing.T) {
	e := exits(t, cli(t, "--handler", "", "discover", "--", demo), exitUsage, "usage")
	contains(t, "error", e.Message, "--handler")
}

// Each frame of the progress bar shows the server's message with its own
// value, and the last shows 100%.
func TestProgressBarFramesMatchTheirText(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Fatal("script(1) is needed to give snodo-run a terminal: install the Debian package bsdutils (util-linux)")
	}
	line := strings.Join([]string{binary, "tools", "call", "count", "--arg", "steps=4", "--arg", "delay_ms=50", "--", demo}, " ")
	cmd := exec.Command(scriptBin, "-qec", line, "/dev/null")
	cmd.Env = append(os.Environ(), "SNODO_CACHE_DIR="+cacheDir, "TERM=xterm")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	frames := regexp.MustCompile(`step (\d) of 4 +(\d+)%`).FindAllStringSubmatch(string(out), -1)
	if len(frames) == 0 {
		t.Fatalf("no progress frames:\n%q", out)
	}
	for _, f := range frames {
		step, _ := strconv.Atoi(f[1])
		if want := strconv.Itoa(step * 100 / 4); f[2] != want {
			t.Errorf("frame %q: step %d of 4 shows %s%%, want %s%%", f[0], step, f[2], want)
		}
	}
	contains(t, "terminal output", string(out), "step 4 of 4 100%")
}

// snodo-run version and the clientInfo the client sends are one version.
func TestVersionMatchesClientInfo(t *testing.T) {
	v := ok(t, cli(t, "version")).json(t)
	version, _ := v["version"].(string)
	if version == "" || version == "dev" {
		t.Errorf("version %q", version)
	}
	// A server that shows the first request it receives and exits.
	r := cli(t, "--protocol", "legacy", "discover", "--", "sh", "-c", `read l; echo "$l" >&2; exit 1`)
	e := exits(t, r, exitConnection, "transport")
	contains(t, "initialize request", e.Message, `"clientInfo":{"name":"snodo","version":"`+version+`"}`)
}

// The README's handlers test example names a file that exists, and runs.
func TestREADMEHandlersTestExample(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`handlers test \$P --method (\S+) --params @(\S+)`).FindStringSubmatch(string(readme))
	if m == nil {
		t.Fatal("README.md has no handlers test example")
	}
	file, err := filepath.Abs(filepath.Join(root, m[2]))
	if err != nil {
		t.Fatal(err)
	}
	r := ok(t, cli(t, "handlers", "test", elicitWasm, "--method", m[1], "--params", "@"+file))
	contains(t, "result", r.stdout, `"action"`)
}

// A sha256 pin shown in the docs is the sha256 of the module the build
// produces: a copied pin must work.
func TestDocumentedPinsMatchTheBuild(t *testing.T) {
	b, err := os.ReadFile(elicitWasm)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	want := hex.EncodeToString(sum[:])
	pin := regexp.MustCompile(`sha256: "([0-9a-f]{64})"`)
	for _, doc := range []string{"README.md", "docs/CLI.md"} {
		text, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range pin.FindAllStringSubmatch(string(text), -1) {
			if m[1] != want {
				t.Errorf("%s pins sha256 %s; the build's elicit-policy.wasm is %s", doc, m[1], want)
			}
		}
	}
}
