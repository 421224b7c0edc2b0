package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// escapingServer starts a grandchild that calls setsid from a subshell that
// exits at once (an orphan outside the server's process group and
// session), then behaves as stubbornServer.
const escapingServer = `(setsid sleep 1000 </dev/null >/dev/null 2>&1 &); ` + stubbornServer

// pidsWith returns the pids of the running processes whose environment
// holds envEntry.
func pidsWith(t *testing.T, envEntry string) []int {
	t.Helper()
	var pids []int
	for _, p := range processesWith(envEntry) {
		pid, err := strconv.Atoi(strings.Fields(p)[0])
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return pids
}

func pidNamespaceOf(pid int) string {
	ns, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	return ns
}

// With the PID namespace (the default on Linux), a SIGKILLed snodo-run
// takes with it the server and everything it started, including an
// orphaned grandchild that called setsid: the init dies by its
// parent-death signal, and the kernel kills its namespace.
func TestSIGKILLedSnodoRunTakesEveryDescendant(t *testing.T) {
	mark := "SNODORUN_PIDNS_TEST=" + newMark()
	self := pidNamespaceOf(os.Getpid())
	var seen []int
	inside := 0
	r := cliWith(t, runOpts{env: []string{mark}, interrupt: func(p *os.Process, line string) {
		if serverPid(line) > 0 && seen == nil {
			// The server writes its line while its setsid grandchild may
			// still be on its way (the subshell forks it in the
			// background): wait, boundedly, until all four are there.
			for wait := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if seen = pidsWith(t, mark); len(seen) >= 4 || time.Now().After(wait) {
					break
				}
			}
			for _, pid := range seen {
				if ns := pidNamespaceOf(pid); ns != "" && ns != self {
					inside++
				}
			}
			_ = p.Signal(syscall.SIGKILL)
		}
	}}, "--server-stderr", "discover", "--", "sh", "-c", escapingServer)
	// snodo-run, init, the server, the setsid grandchild (its subshell has
	// exited)
	if len(seen) < 4 {
		t.Fatalf("found %d processes of the run before the kill (%v), want 4\nstderr:\n%s", len(seen), seen, r.stderr)
	}
	if inside < 2 {
		t.Errorf("%d of the processes %v run in a PID namespace other than this one, want the server and its grandchild", inside, seen)
	}
	for _, pid := range seen {
		pidGone(t, pid)
	}
}

// --no-pid-namespace and the no_pid_namespace setting run the server
// without a namespace, in snodo-run's, as the debug log says; by default
// it has one.
func TestNoPIDNamespace(t *testing.T) {
	r := ok(t, cli(t, "-v", "discover", "--", demo))
	contains(t, "log", r.stderr, "runs in a PID namespace of its own")
	for _, o := range []struct {
		env  []string
		args []string
	}{
		{args: []string{"--no-pid-namespace"}},
		{env: []string{"SNODO_NO_PID_NAMESPACE=true"}},
	} {
		r := ok(t, cliWith(t, runOpts{env: o.env}, append(o.args, "-v", "discover", "--", demo)...))
		contains(t, "log", r.stderr, "runs without a PID namespace")
		if strings.Contains(r.stderr, "runs in a PID namespace") {
			t.Errorf("%v: the server ran in a PID namespace\nstderr:\n%s", o, r.stderr)
		}
	}
}

// Where the kernel refuses a PID namespace (here, snodo-run runs in a user
// namespace that allows none), snodo-run falls back to the process group,
// /proc walk and subreaper, says so in the debug log, and still ends an
// orphaned setsid descendant at shutdown.
func TestPIDNamespaceFallsBackWhereRefused(t *testing.T) {
	const refuse = `echo 0 >/proc/sys/user/max_pid_namespaces && exec "$@"`
	if out, err := exec.Command("unshare", "-U", "-r", "sh", "-c", refuse+` && exit 9`, "sh", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot make a user namespace that refuses PID namespaces: %v %s", err, out)
	}
	mark := newMark()
	cmd := exec.Command("unshare", "-U", "-r", "sh", "-c", refuse, "sh",
		binary, "-v", "discover", "--", "sh", "-c", `(setsid sleep 1000 </dev/null >/dev/null 2>&1 &); exec "$0" --era legacy`, demo)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "SNODO_CACHE_DIR="+cacheDir, markEnv+"="+mark)
	out, err := cmd.CombinedOutput()
	assertNoneLeft(t, mark)
	if err != nil {
		t.Fatalf("snodo-run: %v\n%s", err, out)
	}
	contains(t, "log", string(out), "cannot create a PID namespace", "no space left on device")
}
