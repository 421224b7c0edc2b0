package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serverUp is a server script's first stderr line, with its pid; the
// script never answers initialize, and ignores stdin's EOF, SIGTERM and
// SIGINT, so that shutdown takes its whole grace. The pid is read from
// /proc/self/stat by the shell itself, not taken from $$, which in a PID
// namespace is the namespace's.
const stubbornServer = `trap "" TERM INT; read -r pid rest </proc/self/stat; echo "server-up $pid" >&2; exec sleep 1000`

// serverPid returns the pid of a "server-up PID" line, or 0.
func serverPid(line string) int {
	rest, ok := strings.CutPrefix(line, "server-up ")
	if !ok {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(rest))
	return pid
}

// pidGone waits (bounded) for pid to stop running; zombies count as gone.
func pidGone(t *testing.T, pid int) {
	t.Helper()
	for i := 0; i < 500; i++ {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		s := string(stat)
		if j := strings.LastIndexByte(s, ')'); err != nil || (j > 0 && len(s) > j+2 && s[j+2] == 'Z') {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("process %d is still running", pid)
}

// A SIGKILLed snodo-run takes its server with it (Linux: Pdeathsig).
func TestServerDiesWithSIGKILLedSnodoRun(t *testing.T) {
	pid := 0
	r := cliWith(t, runOpts{interrupt: func(p *os.Process, line string) {
		if n := serverPid(line); n > 0 && pid == 0 {
			pid = n
			_ = p.Signal(syscall.SIGKILL)
		}
	}}, "--server-stderr", "discover", "--", "sh", "-c", stubbornServer)
	if pid == 0 {
		t.Fatalf("the server never started\nstderr:\n%s", r.stderr)
	}
	pidGone(t, pid)
}

// A descendant that calls setsid from a subshell that exits at once is an
// orphan before shutdown begins, outside the server's process group and
// with no parent chain to the server: snodo-run, a child subreaper, ends it
// (cliWith fails the test if it is left running).
func TestOrphanedSetsidDescendantIsEnded(t *testing.T) {
	script := `(setsid sleep 1000 </dev/null >/dev/null 2>&1 &); exec "$0" --era legacy`
	ok(t, cli(t, "discover", "--", "sh", "-c", script, demo))
}

// "the first SIGINT/SIGTERM cancels and starts shutdown; a second one exits
// at once (130 for SIGINT, 143 for SIGTERM) after killing the server's
// process group": a server that ignores EOF and SIGTERM would otherwise
// hold snodo-run for its whole shutdown grace (100 s, beyond the test's
// deadline).
func TestSecondSignalKillsTheServerAndExitsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, exitInterrupt}, {syscall.SIGTERM, exitTerminated}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			pid, sent := 0, 0
			r := cliWith(t, runOpts{interrupt: func(p *os.Process, line string) {
				if n := serverPid(line); n > 0 && sent == 0 {
					pid, sent = n, 1
					_ = p.Signal(tc.sig)
				} else if strings.Contains(line, "send it again") && sent == 1 {
					sent = 2
					_ = p.Signal(tc.sig)
				}
			}}, "--server-stderr", "--shutdown-grace", "100s", "discover", "--", "sh", "-c", stubbornServer)
			if sent != 2 {
				t.Fatalf("sent %d signals, want 2\nstderr:\n%s", sent, r.stderr)
			}
			e := exits(t, r, tc.code, "interrupted")
			contains(t, "error", e.Message, "received twice", "killed")
			pidGone(t, pid)
		})
	}
}

// The first SIGTERM alone ends a call with 143, as SIGINT does with 130.
func TestSIGTERMCancelsTheRequestWith143(t *testing.T) {
	sent := false
	r := cliWith(t, runOpts{interrupt: func(p *os.Process, line string) {
		if !sent && strings.Contains(line, "step 2 of 500") {
			sent = true
			_ = p.Signal(syscall.SIGTERM)
		}
	}}, "--verbose", "--server-stderr", "tools", "call", "count", "--arg", "steps=500", "--arg", "delay_ms=20", "--", demo)
	e := exits(t, r, exitTerminated, "interrupted")
	contains(t, "error", e.Message, "cancelled")
}

// A config file cannot make a module trusted by itself: only
// --allow-trusted on the command line allows it (not the environment).
func TestTrustedModuleNeedsAllowTrusted(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "snodo.yaml"), []byte("modules:\n  elicit-policy:\n    trusted: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", "snodo.yaml", "--handler", elicitWasm, "discover", "--", demo}
	e := exits(t, cliWith(t, runOpts{dir: dir}, args...), exitUsage, "config")
	contains(t, "error", e.Message, "elicit-policy", "trusted", "--allow-trusted")
	// SNODO_ALLOW_TRUSTED names no setting: an error that points to the flag.
	e = exits(t, cliWith(t, runOpts{dir: dir, env: []string{"SNODO_ALLOW_TRUSTED=true"}}, args...), exitUsage, "config")
	contains(t, "error", e.Message, "SNODO_ALLOW_TRUSTED", "--allow-trusted")
	e = exits(t, cliWith(t, runOpts{dir: dir}, "--config", "snodo.yaml", "handlers", "check", elicitWasm), exitUsage, "config")
	contains(t, "error", e.Message, "--allow-trusted")
	ok(t, cliWith(t, runOpts{dir: dir}, append([]string{"--allow-trusted"}, args...)...))
}

// The guard fails closed on a raw tools/call whose tool it cannot tell for
// sure: no "name", a "name" that is not a string, a key that differs from
// "name" only in case (a Go server matches keys without regard to case),
// a key twice. Escapes are decoded before matching.
func TestGuardFailsClosedOnRawToolsCall(t *testing.T) {
	for _, params := range []string{
		`{"Name":"count"}`,
		`{"NAME":"count","arguments":{}}`,
		`{"name":"echo","nAme":"count"}`,
		`{"name":"echo","name":"count"}`,
		`{"name":"count","name":"echo"}`,
		`{"arguments":{"text":"x"}}`,
		`{"name":["count"]}`,
		`{"name":null}`,
		`{"name":"\u0063ount"}`,
		`{"name":"echo","arguments":{"a":1,"a":2}}`,
	} {
		t.Run(params, func(t *testing.T) {
			e := exits(t, cli(t, "--deny-tool", "cou*", "call", "tools/call", "--params", params, "--", demo), exitUsage, "")
			if !strings.Contains(e.Message, "guard") && !strings.Contains(e.Message, "appears twice") {
				t.Errorf("error %q does not say why it is refused", e.Message)
			}
		})
	}
	// What the guard allows still goes through.
	ok(t, cli(t, "--deny-tool", "cou*", "call", "tools/call", "--params", `{"name":"echo","arguments":{"text":"x"}}`, "--", demo))
}
