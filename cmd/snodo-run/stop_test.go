package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stopBoundInTests bounds how long a run may take to end after its first
// signal, where the fault being tested would hold it 20 s or for ever; far
// over what stopping takes on a loaded machine.
const stopBoundInTests = 15 * time.Second

// namedConfig names the snodo.yaml of writeConfig's directory, which
// snodo-run reads only when named.
var namedConfig = []string{"SNODO_CONFIG=./snodo.yaml"}

// writeConfig writes a snodo.yaml into a new directory and returns it.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "snodo.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sigintAt sends SIGINT once, when a stderr line contains trigger, and
// records when.
func sigintAt(trigger string, sent *time.Time) func(p *os.Process, line string) {
	return func(p *os.Process, line string) {
		if sent.IsZero() && strings.Contains(line, trigger) {
			*sent = time.Now()
			_ = p.Signal(syscall.SIGINT)
		}
	}
}

// The first Ctrl-C stops a call of a module granted the clock that sleeps
// 20 s in WASI poll_oneoff (under a 60 s deadline) at once: snodo-run
// exits 130 long before the sleep would end — through a server in both
// eras, and in handlers test.
func TestFirstSignalStopsAModuleSleepingInPollOneoff(t *testing.T) {
	poll := filepath.Join(watDir, "hostile", "poll.wasm")
	dir := writeConfig(t, "modules:\n  poll:\n    config: \"s\"\n    timeout: 60s\n    grants:\n      clock: true\n")
	runs := map[string][]string{
		"handlers test": {"handlers", "test", poll, "--method", "elicitation/create", "--params", `{"message":"x","requestedSchema":{"type":"object"}}`},
	}
	for _, era := range eras {
		runs["tools call/"+era] = []string{"--verbose", "--handler", poll, "tools", "call", "register", "--", demo, "--era", era}
	}
	for name, args := range runs {
		t.Run(name, func(t *testing.T) {
			var sent time.Time
			r := cliWith(t, runOpts{dir: dir, env: namedConfig, interrupt: sigintAt("polling", &sent)}, args...)
			if sent.IsZero() {
				t.Fatalf("the module never got to poll_oneoff\nstderr:\n%s", r.stderr)
			}
			took := time.Since(sent)
			e := exits(t, r, exitInterrupt, "interrupted")
			contains(t, "error", e.Message, "interrupt")
			if took > stopBoundInTests {
				t.Fatalf("snodo-run took %s to stop after SIGINT: the sleep was not cut", took)
			}
			t.Logf("stopped %s after SIGINT", took)
		})
	}
}

// A module that opens a FIFO in its mount — for reading in a read-only
// mount, for appending in a read-write one — is refused at once ("Permission
// denied"): handlers test ends with the module's error, exit 5, instead of
// blocking in the open for ever.
func TestModuleOpeningAFIFOInAMountIsRefusedAtOnce(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "m")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(mnt, "fifo")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	escape := filepath.Join(examplesDir, "c", "hostile", "fs-escape.wasm")
	for _, c := range []struct {
		script string
		ro     bool
	}{{"read /m/fifo", true}, {"append /m/fifo", false}} {
		t.Run(c.script, func(t *testing.T) {
			dir := writeConfig(t, "modules:\n  fs-escape:\n    config: \""+c.script+"\"\n    grants:\n      mounts:\n"+
				"        - {host: \""+mnt+"\", guest: /m, read_only: "+map[bool]string{true: "true", false: "false"}[c.ro]+"}\n")
			done := make(chan result, 1)
			go func() {
				done <- cliWith(t, runOpts{dir: dir, env: namedConfig}, "handlers", "test", escape, "--method", "elicitation/create",
					"--params", `{"message":"x","requestedSchema":{"type":"object"}}`)
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(stopBoundInTests):
				// Let the blocked open through, so that the run ends.
				if f, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
					f.Close()
				}
				<-done
				t.Fatalf("handlers test still blocked opening the FIFO after %s", stopBoundInTests)
			}
			e := exits(t, r, exitHandler, "handler")
			contains(t, "error", e.Message, c.script+": Permission denied")
		})
	}
}

// If snodo-run cannot stop in order after the first signal — a trusted
// module that loops cannot be stopped, and the call waiting for it never
// ends — it exits anyway once its stop bound has passed (here 2×100 ms of
// grace + 2 s of connect timeout + 2 s), killing the server, with 130 and
// an error that says why. (GOGC=off keeps the garbage collector, which
// would wait for the looping guest with every goroutine, out of the way.)
func TestFirstSignalExitsWhenTheCallCannotBeStopped(t *testing.T) {
	loop := filepath.Join(watDir, "hostile", "loop.wasm")
	dir := writeConfig(t, "modules:\n  loop:\n    trusted: true\n    timeout: 60s\n")
	var sent time.Time
	r := cliWith(t, runOpts{dir: dir, env: append([]string{"GOGC=off", "GOMEMLIMIT=off"}, namedConfig...), interrupt: sigintAt("the server asks", &sent)},
		"--allow-trusted", "--shutdown-grace", "100ms", "--connect-timeout", "2s", "--verbose", "--handler", loop,
		"tools", "call", "register", "--", demo)
	if sent.IsZero() {
		t.Fatalf("the server never asked\nstderr:\n%s", r.stderr)
	}
	took := time.Since(sent)
	e := exits(t, r, exitInterrupt, "interrupted")
	contains(t, "error", e.Message, "did not stop within 4.2s", "killed")
	if took > 4200*time.Millisecond+stopBoundInTests {
		t.Fatalf("snodo-run took %s to exit after SIGINT", took)
	}
}
