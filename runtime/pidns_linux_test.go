package runtime

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/jsonrpc"
)

// The test binary is its own PIDNamespace.Init, as snodo-run is.
func init() { Init() }

// nsMarkEnv marks the processes of one namespaced test run, init included,
// so that they can be found from outside the namespace (their own view of
// their pids is the namespace's).
const nsMarkEnv = "SNODO_PIDNS_TEST_MARK"

// startInNamespace starts the helper scenario in a PID namespace and
// returns the runner, the mark of its processes, and its debug log.
func startInNamespace(t *testing.T, scenario string, ns *PIDNamespace) (*Runner, string, *syncBuffer, error) {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	mark := hex.EncodeToString(b)
	var log syncBuffer
	// A polite server exits at EOF: it gets all the grace it may need on
	// a loaded machine (a race-enabled test binary took over 100 ms to exit
	// at load 10), and costs no more when it is quick. The stubborn one
	// ignores EOF and SIGTERM: its grace is short, to see the signals.
	grace := 10 * time.Second
	if scenario == "stubborn-mcp" {
		grace = 100 * time.Millisecond
	}
	rt, err := Start(context.Background(), Config{
		Server: Server{Command: os.Args[0], Env: []EnvVar{
			{Name: helperEnv, Value: scenario}, {Name: nsMarkEnv, Value: mark},
			// A race-enabled process otherwise waits a second at exit:
			// the polite server would be past its grace.
			{Name: "GORACE", Value: strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")},
		}},
		Protocol:      "legacy",
		ShutdownGrace: grace,
		Logger:        slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		PIDNamespace:  ns,
	})
	t.Cleanup(func() {
		for _, pid := range marked(mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return rt, mark, &log, err
}

// marked returns the running processes (zombies excluded) that carry the
// mark in their environment.
func marked(mark string) []int {
	var pids []int
	entry := []byte(nsMarkEnv + "=" + mark + "\x00")
	for pid := range allProcs() {
		env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err == nil && bytes.Contains(env, entry) && !processGone(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitMarked waits (bounded) until n processes carry the mark.
func waitMarked(t *testing.T, mark string, n int) []int {
	t.Helper()
	var pids []int
	for i := 0; i < 500; i++ {
		if pids = marked(mark); len(pids) >= n {
			return pids
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d processes carry the mark, want %d: %v", len(pids), n, pids)
	return nil
}

// waitNoneMarked waits (bounded) until no process carries the mark.
func waitNoneMarked(t *testing.T, mark string) {
	t.Helper()
	var pids []int
	for i := 0; i < 500; i++ {
		if pids = marked(mark); len(pids) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	var desc []string
	for _, pid := range pids {
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		desc = append(desc, strings.TrimSpace(string(stat)))
	}
	t.Fatalf("processes still running: %v", desc)
}

func pidNS(t *testing.T, pid int) string {
	t.Helper()
	ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// In a PID namespace, the server and a grandchild that called setsid run
// under the init, in another namespace than this process; EOF on stdin
// still reaches the server, which exits politely; Close ends the
// grandchild, and the exit state is the server's.
func TestPIDNamespaceCloseEndsSetsidGrandchild(t *testing.T) {
	rt, mark, log, err := startInNamespace(t, "setsid-mcp", &PIDNamespace{Init: os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	pids := waitMarked(t, mark, 3) // init, server, grandchild
	self := pidNS(t, os.Getpid())
	for _, pid := range pids {
		if pid == rt.Pid() {
			continue // the init is seen from both; its own namespace is ours
		}
		if ns := pidNS(t, pid); ns == self {
			t.Errorf("process %d is in this process's PID namespace %s", pid, ns)
		}
	}
	if err := rt.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	waitNoneMarked(t, mark)
	if st := rt.ExitState(); st == nil || st.ExitCode() != 0 {
		t.Errorf("exit state %v, want exit status 0", st)
	}
	for _, want := range []string{"runs in a PID namespace", `how="exited after EOF"`} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log does not say %q:\n%s", want, log)
		}
	}
}

// A server that ignores EOF and SIGTERM is killed after the grace, with
// its grandchild, through its namespace.
func TestPIDNamespaceKillsServerThatIgnoresSIGTERM(t *testing.T) {
	rt, mark, log, err := startInNamespace(t, "stubborn-mcp", &PIDNamespace{Init: os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	waitMarked(t, mark, 3)
	if err := rt.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	waitNoneMarked(t, mark)
	if !strings.Contains(log.String(), `how=killed`) {
		t.Errorf("log does not say the server was killed:\n%s", log)
	}
}

// The init's exit status mirrors the server's: a call's error explains the
// server's exit as it does without a namespace.
func TestPIDNamespaceExitStatusIsTheServers(t *testing.T) {
	rt, mark, _, err := startInNamespace(t, "dies-on-call", &PIDNamespace{Init: os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	err = rt.Call(context.Background(), nil, func(ctx context.Context, opts ...snodo.CallOption) error {
		_, err := rt.Client().CallTool(ctx, "anything", nil, opts...)
		return err
	})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeConnectionClosed {
		t.Fatalf("call: %v, want -32000", err)
	}
	for _, want := range []string{"exit status 4", "panic: the database is gone"} {
		if !strings.Contains(je.Message, want) {
			t.Errorf("error %q does not contain %q", je.Message, want)
		}
	}
	waitNoneMarked(t, mark)
}

// A command that cannot be run fails Start as it does without a namespace.
func TestPIDNamespaceServerNotFound(t *testing.T) {
	_, err := Start(context.Background(), Config{
		Server:       Server{Command: "/nonexistent/server"},
		PIDNamespace: &PIDNamespace{Init: os.Args[0]},
	})
	if err == nil || !strings.Contains(err.Error(), "no such file or directory") {
		t.Errorf("Start: %v, want no such file or directory", err)
	}
}

// refuseNamespace makes the kernel refuse the namespace for the test:
// CLONE_THREAD without CLONE_SIGHAND is EINVAL.
func refuseNamespace(t *testing.T) {
	pidnsAttrHook = func(a *syscall.SysProcAttr) { a.Cloneflags |= syscall.CLONE_THREAD }
	t.Cleanup(func() { pidnsAttrHook = nil })
}

// When the kernel refuses the namespace, Fallback starts the server
// without one, in this process's namespace, and says so in the log;
// without Fallback, Start fails.
func TestPIDNamespaceFallback(t *testing.T) {
	refuseNamespace(t)
	rt, mark, log, err := startInNamespace(t, "setsid-mcp", &PIDNamespace{Init: os.Args[0], Fallback: true})
	if err != nil {
		t.Fatal(err)
	}
	pids := waitMarked(t, mark, 2) // server, grandchild: no init
	self := pidNS(t, os.Getpid())
	for _, pid := range pids {
		if ns := pidNS(t, pid); ns != self {
			t.Errorf("process %d is in PID namespace %s, not this process's %s", pid, ns, self)
		}
	}
	if !strings.Contains(log.String(), "cannot create a PID namespace") {
		t.Errorf("log does not say the namespace was refused:\n%s", log)
	}
	if err := rt.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	waitNoneMarked(t, mark)

	_, _, _, err = startInNamespace(t, "setsid-mcp", &PIDNamespace{Init: os.Args[0]})
	if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Start without Fallback: %v, want EINVAL", err)
	}
}

// The init refuses to run outside a namespace of its own, where kill(-1)
// would reach every process of the user.
func TestInitRefusesToRunAsAnyOtherPID(t *testing.T) {
	out, err := exec.Command(os.Args[0], initArg, "/bin/true", "true").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 127 || !strings.Contains(string(out), "not the first process") {
		t.Errorf("init outside a namespace: %v, %q", err, out)
	}
}
