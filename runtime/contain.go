package runtime

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// markEnvName is the variable Snodo sets in every server's environment, to
// tell which Runner an orphaned descendant belongs to (see Config.Subreaper).
const markEnvName = "SNODO_RUNNER_MARK"

var markSeq atomic.Uint64

// contained is the containment of one running server: its process group,
// its descendants as far as they can be found (see tree), and the thread
// that started it (see startContained).
type contained struct {
	pid     int
	mark    string // markEnvName's value in the server's environment
	tree    *tree
	release func() // gives the starting thread back
}

// live holds the contained servers of this process, by pid, for stopServer
// and KillAll.
var live struct {
	mu      sync.Mutex
	servers map[int]*contained
}

// startContained starts a server with start, which must start it with the
// given process attributes and environment entry (markEnvName=…) and
// return its pid. On Linux it runs start on a dedicated OS thread, so that
// the server's parent-death signal fires when this process dies and not
// when some Go thread happens to exit; subreaper makes this process a child
// subreaper first.
func startContained(subreaper bool, start func(attr *syscall.SysProcAttr, mark EnvVar) (int, error)) (*contained, error) {
	if subreaper {
		if err := enableSubreaper(); err != nil {
			// Wrapped once more: startServer reports the cause it unwraps.
			return nil, fmt.Errorf("%w", err)
		}
	}
	c := &contained{mark: fmt.Sprintf("%d.%d", os.Getpid(), markSeq.Add(1))}
	c.tree = newTree(0, c.mark)
	// The mark is live before the server exists: no other Runner's Close
	// may take the new server for an orphan of its own.
	live.mu.Lock()
	liveMarks[c.mark] = true
	live.mu.Unlock()
	var err error
	c.release = onServerThread(func() {
		c.pid, err = start(newServerAttr(), EnvVar{Name: markEnvName, Value: c.mark})
	})
	if err != nil {
		c.release()
		live.mu.Lock()
		delete(liveMarks, c.mark)
		live.mu.Unlock()
		return nil, err
	}
	c.tree.setRoot(c.pid)
	live.mu.Lock()
	if live.servers == nil {
		live.servers = map[int]*contained{}
	}
	live.servers[c.pid] = c
	live.mu.Unlock()
	return c, nil
}

// liveMarks are the marks of the servers of running Runners; guarded by
// live.mu.
var liveMarks = map[string]bool{}

// done forgets the server, once stopped, and gives its thread back.
func (c *contained) done() {
	live.mu.Lock()
	if live.servers[c.pid] == c {
		delete(live.servers, c.pid)
	}
	delete(liveMarks, c.mark)
	live.mu.Unlock()
	c.release()
}

// treeFor returns the descendants of the server pid: those tracked since it
// was started, or, for a process Snodo did not start, a fresh tree.
func treeFor(pid int) *tree {
	live.mu.Lock()
	c := live.servers[pid]
	live.mu.Unlock()
	if c != nil {
		return c.tree
	}
	return newTree(pid, "")
}

// KillAll sends SIGKILL at once to the server of every running Runner of
// this process: to its process group and, on Linux, to every descendant
// found for it (see Config.Subreaper). It is for a program's emergency
// exit, such as a second Ctrl-C; the Runners still need Close.
func KillAll() {
	live.mu.Lock()
	servers := make([]*contained, 0, len(live.servers))
	for _, c := range live.servers {
		servers = append(servers, c)
	}
	live.mu.Unlock()
	for _, c := range servers {
		_ = syscall.Kill(-c.pid, syscall.SIGKILL)
		c.tree.kill()
	}
}
