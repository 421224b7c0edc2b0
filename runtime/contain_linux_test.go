package runtime

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startWithGrandchild starts the helper scenario as a legacy MCP server
// and returns the runner and the pid of the grandchild it names on stderr.
func startWithGrandchild(t *testing.T, scenario string, subreaper bool) (*Runner, int) {
	t.Helper()
	var stderr syncBuffer
	rt, err := Start(context.Background(), Config{
		Server:        Server{Command: os.Args[0], Env: []EnvVar{{Name: helperEnv, Value: scenario}}},
		Protocol:      "legacy",
		ShutdownGrace: 100 * time.Millisecond,
		ServerStderr:  &stderr,
		Subreaper:     subreaper,
	})
	if err != nil {
		t.Fatal(err)
	}
	line := ""
	for i := 0; i < 500 && !strings.HasSuffix(line, "\n"); i++ { // the copier is asynchronous
		time.Sleep(10 * time.Millisecond)
		line = stderr.String()
	}
	line = strings.TrimSpace(line)
	pid, err := strconv.Atoi(strings.TrimPrefix(line, "grandchild "))
	if err != nil {
		_ = rt.Close(context.Background())
		t.Fatalf("server's stderr %q does not name its grandchild", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return rt, pid
}

// A grandchild that leaves the server's process group and session with
// setsid, and ignores SIGTERM, is ended by Close although the server exits
// politely at EOF: it is found by its parent chain.
func TestCloseEndsGrandchildThatCalledSetsid(t *testing.T) {
	rt, grandchild := startWithGrandchild(t, "setsid-mcp", false)
	if pgid, _ := syscall.Getpgid(grandchild); pgid != grandchild {
		t.Fatalf("grandchild %d is in process group %d, not one of its own", grandchild, pgid)
	}
	if err := rt.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	waitGone(t, grandchild)
}

// With Config.Subreaper, a descendant orphaned before shutdown (its parent
// exited after it called setsid, so that no parent chain leads to it) is
// reparented to this process, ended by Close, and reaped.
func TestSubreaperCloseEndsAndReapsOrphanedDescendant(t *testing.T) {
	rt, grandchild := startWithGrandchild(t, "orphan-mcp", true)
	// The orphaner has exited: the grandchild is ours now.
	var st procStat
	for i := 0; i < 500; i++ {
		st, _ = readStat(grandchild)
		if st.ppid == os.Getpid() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st.ppid != os.Getpid() {
		t.Fatalf("orphaned grandchild %d has parent %d, not this process (%d)", grandchild, st.ppid, os.Getpid())
	}
	if err := rt.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	waitGone(t, grandchild)
	// Reaped, not left a zombie of this process.
	for i := 0; i < 500; i++ {
		if _, err := os.Stat("/proc/" + strconv.Itoa(grandchild)); err != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("grandchild %d was not reaped", grandchild)
}

// The server is started with a parent-death signal, from a thread that
// lives as long as the server runs.
func TestServerHasParentDeathSignal(t *testing.T) {
	attr := newServerAttr()
	if attr.Pdeathsig != syscall.SIGKILL || !attr.Setpgid {
		t.Errorf("server attributes %+v, want Setpgid and Pdeathsig SIGKILL", attr)
	}
}
