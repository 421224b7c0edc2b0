package runtime

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// serverProcess is what stopping needs of a running server: the stdio
// connection closes the server's stdin, waits for the process, and knows its
// process ID (which is also its process group ID: the runtime starts every
// server as the leader of a new process group).
type serverProcess interface {
	Close() error
	Wait(ctx context.Context) (*os.ProcessState, error)
	Pid() int
}

// newGroupAttr returns the process attributes that make the server the
// leader of its own process group, so that its children and grandchildren
// (npx, uvx, a shell wrapper) can be signalled with it, and a Ctrl-C at the
// terminal reaches Snodo, which then shuts the server down in order, instead
// of reaching the whole group at once.
func newGroupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// groupPoll is how often stopServer checks whether a process group is gone.
const groupPoll = 10 * time.Millisecond

// stopServer shuts a server down the way MCP's stdio transport asks: it
// closes the server's stdin and gives it grace to exit on its own; then it
// sends SIGTERM to the server's process group and waits termGrace; then
// SIGKILL. Once the server itself has exited, what is left of its process
// group (grandchildren that ignored the EOF) gets the same SIGTERM, then
// SIGKILL, so that nothing the server started is left behind.
//
// On Linux the same signals go to the server's descendants that left its
// process group (setsid, setpgid): those found by their parent chain, and,
// with Config.Subreaper, the orphans reparented to this process. The last
// of them are stopped with SIGSTOP before SIGKILL, so that none forks its
// way out, and those that are this process's children are reaped.
//
// It returns the server's exit state (nil if it could not be waited for)
// and how far the escalation went, for the log.
func stopServer(ctx context.Context, p serverProcess, grace, termGrace time.Duration, log *slog.Logger) (*os.ProcessState, string) {
	pgid := p.Pid()
	desc := treeFor(pgid)
	desc.alive() // what runs below the server now, before it can exit and orphan it
	_ = p.Close()

	how := "exited after EOF"
	state, exited := waitFor(ctx, p, grace)
	if !exited && pgid > 0 {
		how = "exited after SIGTERM"
		log.Debug("server still running after stdin closed; sending SIGTERM to its process group", "pgid", pgid, "grace", grace)
		signalServer(pgid, syscall.SIGTERM)
		desc.signal(syscall.SIGTERM)
		state, exited = waitFor(ctx, p, termGrace)
		if !exited {
			how = "killed"
			log.Debug("server still running after SIGTERM; sending SIGKILL to its process group", "pgid", pgid, "grace", termGrace)
			signalServer(pgid, syscall.SIGKILL)
			desc.kill()
			state, _ = waitFor(ctx, p, -1)
		}
	}
	left := func() bool { return pgid > 0 && (groupAlive(pgid) || desc.alive()) }
	if left() {
		log.Debug("the server's process group or descendants outlived it; sending SIGTERM", "pgid", pgid)
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		desc.signal(syscall.SIGTERM)
		if !waitUntilGone(ctx, left, termGrace) {
			log.Debug("the server's process group or descendants outlived SIGTERM; sending SIGKILL", "pgid", pgid)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			desc.kill()
		}
		how += ", its process group stopped"
	}
	desc.reap(termGrace)
	return state, how
}

// signalServer sends sig to the server's process group, and to the server
// itself in case it moved to another group.
func signalServer(pid int, sig syscall.Signal) {
	_ = syscall.Kill(-pid, sig)
	_ = syscall.Kill(pid, sig)
}

// waitFor waits up to d (forever when d < 0, always bounded by ctx) for the
// process to exit.
func waitFor(ctx context.Context, p serverProcess, d time.Duration) (*os.ProcessState, bool) {
	if d >= 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	state, err := p.Wait(ctx)
	if err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return nil, false
	}
	return state, true
}

// groupAlive reports whether any process is left in the process group.
// Zombies count: a grandchild whose parent is gone is reaped by init.
func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) == nil
}

// waitUntilGone waits up to d, bounded by ctx, for left to report false.
func waitUntilGone(ctx context.Context, left func() bool, d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	for left() {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
	return true
}
