package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// terminal is snodo-run running on a pseudo-terminal: what it printed, and
// its end.
type terminal struct {
	t    *testing.T
	ptmx *os.File
	cmd  *exec.Cmd
	mark string

	mu      sync.Mutex
	out     bytes.Buffer // everything read, escape sequences removed
	from    int          // where the next expect looks from
	changed chan struct{}
	readErr chan struct{} // closed when the reader stops

	waited chan error
}

// wait is how long any one expectation may take.
const wait = 60 * time.Second

// startTerminal runs snodo-run with args on a new pseudo-terminal, in an
// environment of its own (config, cache and state directories).
func startTerminal(t *testing.T, env []string, args ...string) *terminal {
	t.Helper()
	return startTerminalSized(t, pty.Winsize{Rows: 50, Cols: 250}, env, args...)
}

// startTerminalSized is startTerminal on a terminal of the given size.
func startTerminalSized(t *testing.T, size pty.Winsize, env []string, args ...string) *terminal {
	t.Helper()
	tm := &terminal{t: t, mark: newMark(), changed: make(chan struct{}, 1), readErr: make(chan struct{}), waited: make(chan error, 1)}
	cmd := exec.Command(binary, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "TERM=xterm", "XDG_CONFIG_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir(),
		"SNODO_CACHE_DIR="+cacheDir, markEnv+"="+tm.mark)
	cmd.Env = append(cmd.Env, env...)
	ptmx, err := pty.StartWithSize(cmd, &size)
	if err != nil {
		t.Fatalf("starting snodo-run on a pty: %v", err)
	}
	tm.ptmx, tm.cmd = ptmx, cmd
	go func() {
		defer close(tm.readErr)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			if n > 0 {
				tm.mu.Lock()
				tm.out.Write(buf[:n])
				tm.mu.Unlock()
				select {
				case tm.changed <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return // EIO once the terminal's other end is closed
			}
		}
	}()
	go func() { tm.waited <- cmd.Wait() }()
	t.Cleanup(func() {
		if tm.cmd.ProcessState == nil {
			_ = tm.cmd.Process.Kill()
			<-tm.waited
		}
		tm.ptmx.Close()
		<-tm.readErr
	})
	return tm
}

var escapes = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|\r|\x07`)

// screen is the output so far, without escape sequences and CRs.
func (tm *terminal) screen() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return escapes.ReplaceAllString(tm.out.String(), "")
}

// expect waits until sub appears after what the last expect matched, and
// returns the output up to and including it.
func (tm *terminal) expect(sub string) string {
	tm.t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		s := tm.screen()
		if i := strings.Index(s[tm.from:], sub); i >= 0 {
			got := s[tm.from : tm.from+i+len(sub)]
			tm.from += i + len(sub)
			return got
		}
		select {
		case <-tm.changed:
		case <-tm.readErr:
			if !strings.Contains(tm.screen()[tm.from:], sub) {
				tm.t.Fatalf("the terminal closed before %q appeared; after the last match:\n%s", sub, tm.screen()[tm.from:])
			}
		case <-deadline.C:
			tm.t.Fatalf("%q did not appear within %v; after the last match:\n%s", sub, wait, tm.screen()[tm.from:])
		}
	}
}

// expectAny waits until one of subs appears after what the last expect
// matched, and returns its index.
func (tm *terminal) expectAny(subs ...string) int {
	tm.t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		s := tm.screen()[tm.from:]
		best, at := -1, len(s)
		for k, sub := range subs {
			if i := strings.Index(s, sub); i >= 0 && i < at {
				best, at = k, i
			}
		}
		if best >= 0 {
			tm.from += at + len(subs[best])
			return best
		}
		select {
		case <-tm.changed:
		case <-tm.readErr:
			tm.t.Fatalf("the terminal closed before any of %q appeared; after the last match:\n%s", subs, s)
		case <-deadline.C:
			tm.t.Fatalf("none of %q appeared within %v; after the last match:\n%s", subs, wait, s)
		}
	}
}

// send types s.
func (tm *terminal) send(s string) {
	tm.t.Helper()
	if _, err := tm.ptmx.Write([]byte(s)); err != nil {
		tm.t.Fatalf("typing %q: %v", s, err)
	}
}

// end waits for snodo-run to exit and returns its exit code; nothing it
// started may be left running.
func (tm *terminal) end() int {
	tm.t.Helper()
	select {
	case err := <-tm.waited:
		var ee *exec.ExitError
		code := 0
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			tm.t.Fatalf("waiting for snodo-run: %v", err)
		}
		assertNoneLeft(tm.t, tm.mark)
		return code
	case <-time.After(wait):
		tm.t.Fatalf("snodo-run did not exit within %v; its output:\n%s", wait, tm.screen())
		return -1
	}
}

// "an interactive session on one connection": the built binary on a
// pseudo-terminal, against the demo server in both eras.
func TestShellOnATerminal(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			history := filepath.Join(t.TempDir(), "hist")
			tm := startTerminal(t, nil, "--protocol", era, "shell", "--history", history, "--", demo, "--era", era)
			tm.expect("snodo-demo 1.0.0 (" + era + " era")
			tm.expect("snodo-demo> ")

			// tools list shows the tools.
			tm.send("tools list\r")
			tm.expect(`{"tools":[`)
			tm.expect(`"name":"echo"`)
			tm.expect(`"name":"toggle_bonus"`)

			// Tab completes a partial tool name and an argument name.
			tm.send("call ech\t")
			tm.expect("call echo ")
			tm.send("te\t")
			tm.expect("text=")
			tm.send("from-tab\r")
			tm.expect(`"text":"from-tab"`)

			// A bad command prints an error, and the session goes on; so
			// does a failing call.
			tm.send("frobnicate\r")
			tm.expect(`{"error":{"kind":"usage","message":"unknown command \"frobnicate\"`)
			tm.send("tools call fail message=boom\r")
			tm.expect(`"isError":true`)
			tm.expect(`"exitCode":1}`)
			tm.send("output text\r")
			tm.send("tools call echo text=still-here\r")
			tm.expect("\nstill-here\n")

			// listen in the background, then toggle_bonus: the list change
			// is printed.
			tm.send("listen --tools\r")
			tm.expect("listening for tool list changes")
			tm.send("tools call tog\t")
			tm.expect("tools call toggle_bonus ")
			tm.send("\r")
			tm.expect("added the bonus tool")
			tm.expect(`{"method":"notifications/tools/list_changed"`)

			// The completion names follow the list change: bonus appears.
			completed := false
			for i := 0; i < 100 && !completed; i++ {
				tm.send("call bon\t\r")
				completed = tm.expectAny("\nbonus!\n", `"exitCode":`) == 0
				if !completed {
					time.Sleep(50 * time.Millisecond) // the names are fetched in the background
				}
			}
			if !completed {
				t.Errorf("Tab never completed the bonus tool after the list change:\n%s", tm.screen())
			}
			tm.send("unlisten\r")

			// Ctrl-C cancels the call in flight, not the session.
			tm.send("tools call count steps=1000 delay_ms=100\r")
			// The bar redraws at each whole percent: step 10 is the first.
			tm.expect("step 10 of 1000")
			tm.send("\x03")
			tm.expect(`{"error":{"kind":"interrupted"`)
			if msg := tm.expect(`"exitCode":130}`); strings.Contains(msg, "context canceled: context canceled") {
				t.Errorf("the interrupted call's error repeats its cause: %s", msg)
			}
			tm.send("tools call echo text=after-ctrl-c\r")
			tm.expect("\nafter-ctrl-c\n")

			tm.send("exit\r")
			if code := tm.end(); code != 0 {
				t.Errorf("exit code %d, want 0; output:\n%s", code, tm.screen())
			}
			b, err := os.ReadFile(history)
			if err != nil {
				t.Fatalf("no history file: %v", err)
			}
			contains(t, "history", string(b), "tools list\n", "listen --tools\n", "exit\n")
		})
	}
}

// A terminal that reports no columns (a serial console, some CI
// terminals) gets the same completion as any other: Tab completes, and
// the line is redrawn without stray control characters.
func TestShellOnATerminalWithoutColumns(t *testing.T) {
	tm := startTerminalSized(t, pty.Winsize{}, nil, "shell", "--no-history", "--", demo)
	tm.expect("snodo-demo> ")
	tm.send("tools list\r")
	tm.expect(`"name":"echo"`)
	tm.expect("snodo-demo> ")
	tm.mu.Lock()
	start := tm.out.Len()
	tm.mu.Unlock()
	tm.send("call ech\t")
	tm.expect("call echo ")
	tm.send("te\t")
	tm.expect("text=")
	tm.send("from-tab\r")
	tm.expect(`"text":"from-tab"`)
	tm.send("exit\r")
	if code := tm.end(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	tm.mu.Lock()
	typed := tm.out.String()[start:]
	tm.mu.Unlock()
	// Redrawing uses the line editor's usual sequences only.
	rest := regexp.MustCompile(`\x1b\[(J|2K)|[\r\n\x08]`).ReplaceAllString(typed, "")
	if i := strings.IndexFunc(rest, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
		t.Errorf("stray control character %q in the redrawn line: %q", rest[i], typed)
	}
}

// Ctrl-D ends the session as exit does; the default history file is in
// the user's state directory, and --no-history keeps none.
func TestShellCtrlDAndHistoryFile(t *testing.T) {
	state := t.TempDir()
	tm := startTerminal(t, []string{"XDG_STATE_HOME=" + state}, "shell", "--", demo)
	tm.expect("snodo-demo> ")
	tm.send("discover\r")
	tm.expect(`{"serverInfo":`)
	tm.expect("snodo-demo> ") // a control key typed ahead, before the prompt, is the terminal's
	tm.send("\x04")
	if code := tm.end(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	b, err := os.ReadFile(filepath.Join(state, "snodo", "shell_history"))
	if err != nil {
		t.Fatalf("no default history file: %v", err)
	}
	contains(t, "history", string(b), "discover\n")
	// The history holds the arguments typed: only the user reads it.
	wantMode(t, filepath.Join(state, "snodo", "shell_history"), 0o600)
	wantMode(t, filepath.Join(state, "snodo"), 0o700|os.ModeDir)

	state = t.TempDir()
	tm = startTerminal(t, []string{"XDG_STATE_HOME=" + state}, "shell", "--no-history", "--", demo)
	tm.expect("snodo-demo> ")
	tm.send("quit\r")
	if code := tm.end(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Errorf("--no-history left %v in the state directory", entries)
	}
}

// wantMode fails unless path has mode want.
func wantMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != want {
		t.Errorf("%s has mode %v, want %v", path, fi.Mode(), want)
	}
}

// A history file others can read (as older versions left it) is made
// private, with a notice; one longer than the history keeps is cut in
// place and stays private (the line editor would rewrite it through a new
// file others can read).
func TestShellHistoryFileIsPrivate(t *testing.T) {
	history := filepath.Join(t.TempDir(), "hist")
	var old strings.Builder
	for i := range historyLimit + 5 {
		fmt.Fprintf(&old, "tools call login password=hunter%d\n", i)
	}
	if err := os.WriteFile(history, []byte(old.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(history, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	tm := startTerminal(t, nil, "shell", "--history", history, "--", demo)
	tm.expect("snodo-demo> ")
	contains(t, "the terminal", tm.screen(), "could be read by others (mode 0644); it is now 0600")
	tm.send("discover\r")
	tm.expect(`{"serverInfo":`)
	tm.expect("snodo-demo> ")
	tm.send("exit\r")
	if code := tm.end(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	wantMode(t, history, 0o600)
	b, err := os.ReadFile(history)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) > historyLimit+2 || lines[0] != "tools call login password=hunter5" || !slices.Contains(lines, "discover") {
		t.Errorf("history of %d lines, from %q: want the last %d kept, then this session's", len(lines), lines[0], historyLimit)
	}
}

// "when stdin is not a terminal, read commands line by line": the output
// of each command, no prompt, and the exit code of the last failure.
func TestShellScript(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			server := []string{"shell", "--", demo, "--era", era}
			script := strings.Join([]string{
				"# a comment, and an empty line",
				"",
				"tools list",
				"tools call echo text=123",
				`call echo {"text": "from json"}`,
				"prompts get greet name=Ada style=formal",
				"resources read demo://readme",
				"listen --tools --count 1",
				"tools call toggle_bonus",
				"wait",
				"output text",
				"prompts list",
			}, "\n")
			r := ok(t, cliWith(t, runOpts{stdin: script}, server...))
			if r.stderr != "" {
				t.Errorf("stderr of a script that did not fail: %s", r.stderr)
			}
			if strings.Contains(r.stdout, "snodo-demo>") {
				t.Errorf("a prompt in script mode:\n%s", r.stdout)
			}
			lines := strings.Split(r.stdout, "\n")
			if len(lines) < 7 {
				t.Fatalf("stdout has %d lines:\n%s", len(lines), r.stdout)
			}
			contains(t, "tools list", lines[0], `{"tools":[`, `"name":"echo"`)
			contains(t, "echo", lines[1], `"text":"123"`)
			contains(t, "echo json", lines[2], `"text":"from json"`)
			contains(t, "prompt", lines[3], "Good day, Ada.")
			contains(t, "resource", lines[4], `"uri":"demo://readme"`)
			contains(t, "toggle", r.stdout, "added the bonus tool")
			contains(t, "event", r.stdout, `{"method":"notifications/tools/list_changed"`)
			contains(t, "text output", r.stdout, "greet(name, style?)")

			// Failures go on; the exit code is the last failure's.
			r = cliWith(t, runOpts{stdin: "frobnicate\ntools call fail\ntools call echo text=on\n"}, server...)
			e := exits(t, r, exitServer, "tool")
			contains(t, "summary", e.Message, "2 of 3 commands failed")
			contains(t, "still ran", r.stdout, `"text":"on"`)
			if n := strings.Count(r.stderr, `{"error":`); n != 3 {
				t.Errorf("%d error objects on stderr, want one a failure and the summary:\n%s", n, r.stderr)
			}
			r = cliWith(t, runOpts{stdin: "tools call fail\nresources read\nexit\ntools call echo text=never\n"}, server...)
			exits(t, r, exitUsage, "usage")
			if strings.Contains(r.stdout, "never") {
				t.Errorf("a command after exit ran:\n%s", r.stdout)
			}
		})
	}
}

// A server that cannot start fails the shell as it fails a one-shot
// command.
func TestShellServerThatExits(t *testing.T) {
	r := cliWith(t, runOpts{stdin: "tools list\ntools list\n"}, "shell", "--", "sh", "-c", "exit 7")
	exits(t, r, exitConnection, "transport")
}

func TestShellWords(t *testing.T) {
	for in, want := range map[string][]string{
		`a b  c`:                 {"a", "b", "c"},
		`text="hello world" x=1`: {"text=hello world", "x=1"},
		`k='a "b" c'`:            {`k=a "b" c`},
		`k="a \"q\" \\ b"`:       {`k=a "q" \ b`},
		`a\ b`:                   {"a b"},
		`""`:                     {""},
	} {
		got, err := words(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("words(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`"open`, `'open`} {
		if _, err := words(bad); err == nil {
			t.Errorf("words(%q) did not fail", bad)
		}
	}
}

func TestShellCompletionCandidates(t *testing.T) {
	n := newNames()
	n.tools = map[string][]string{"echo": {"text"}, "count": {"steps", "delay_ms"}, "toggle_bonus": nil}
	n.prompts = map[string][]string{"greet": {"name", "style"}}
	n.resources = []string{"demo://readme", "demo://counter"}
	do := func(line string) []string {
		ends, length := n.Do([]rune(line), len([]rune(line)))
		var out []string
		for _, e := range ends {
			out = append(out, line[len(line)-length:]+string(e))
		}
		return out
	}
	for line, want := range map[string][]string{
		"too":                     {"tools "},
		"tools call tog":          {"toggle_bonus "},
		"call ":                   {"count ", "echo ", "toggle_bonus "},
		"call count st":           {"steps="},
		"call count steps=1 ":     {"delay_ms="},
		"prompts get greet s":     {"style="},
		"resources read demo://r": {"demo://readme "},
		"listen --resource demo:": {"demo://counter ", "demo://readme "},
		"output p":                {"pretty "},
		"frobnicate ":             nil,
	} {
		if got := do(line); !slices.Equal(got, want) {
			t.Errorf("completing %q: %q, want %q", line, got, want)
		}
	}
	n.changed("notifications/tools/list_changed")
	if !n.pending["tools"] {
		t.Error("a tools list change did not mark the tools to fetch again")
	}
}
