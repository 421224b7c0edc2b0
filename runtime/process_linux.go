//go:build linux

package runtime

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// newServerAttr returns the server's process attributes: the leader of its
// own process group (see newGroupAttr), killed by the kernel when the
// thread that started it ends, which onServerThread makes the same as when
// this process ends.
func newServerAttr() *syscall.SysProcAttr {
	a := newGroupAttr()
	a.Pdeathsig = syscall.SIGKILL
	return a
}

// The parent-death signal fires when the OS thread that forked the child
// exits, not the process. Go keeps its threads for the life of the process,
// except the thread of a goroutine that exits while locked to it. Servers
// are therefore started from one goroutine locked to its thread for as long
// as any server it started runs; it exits (and its thread with it) only
// when the last one has been stopped.
var spawner struct {
	mu    sync.Mutex
	users int
	reqs  chan func()
}

// onServerThread runs fn on the server-starting thread and returns the
// function that gives it back once the process fn started is stopped.
func onServerThread(fn func()) (release func()) {
	spawner.mu.Lock()
	if spawner.users == 0 {
		spawner.reqs = make(chan func())
		go spawnLoop(spawner.reqs)
	}
	spawner.users++
	reqs := spawner.reqs
	spawner.mu.Unlock()

	done := make(chan struct{})
	reqs <- func() {
		defer close(done)
		fn()
	}
	<-done
	var once sync.Once
	return func() {
		once.Do(func() {
			spawner.mu.Lock()
			spawner.users--
			if spawner.users == 0 {
				close(spawner.reqs)
				spawner.reqs = nil
			}
			spawner.mu.Unlock()
		})
	}
}

func spawnLoop(reqs <-chan func()) {
	// Never unlocked: the thread ends with the goroutine, when no server
	// it started is left.
	runtime.LockOSThread()
	for fn := range reqs {
		fn()
	}
}

var subreaper struct {
	mu  sync.Mutex
	on  bool
	err error
}

// enableSubreaper makes this process a child subreaper, for the rest of its
// life: an orphaned descendant is reparented to it instead of to init.
func enableSubreaper() error {
	subreaper.mu.Lock()
	defer subreaper.mu.Unlock()
	if subreaper.on {
		return nil
	}
	const prSetChildSubreaper = 36
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		return fmt.Errorf("cannot make the process a child subreaper: %w", e)
	}
	subreaper.on = true
	return nil
}

func subreaperOn() bool {
	subreaper.mu.Lock()
	defer subreaper.mu.Unlock()
	return subreaper.on
}

// procStat is what /proc/PID/stat says of a process.
type procStat struct {
	ppid  int
	start uint64 // start time in clock ticks after boot: with the pid, an identity
	state byte
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice num_threads
	// itrealvalue starttime …; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{ppid: ppid, start: start, state: f[0][0]}, true
}

func allProcs() map[int]procStat {
	entries, _ := os.ReadDir("/proc")
	procs := make(map[int]procStat, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok {
			procs[pid] = st
		}
	}
	return procs
}

// markOf returns the value of markEnvName in the environment pid started
// with, "" when it has none (or is a zombie).
func markOf(pid int) string {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	prefix := []byte(markEnvName + "=")
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(v)
		}
	}
	return ""
}

// tree is every descendant of a server found so far: by its parent chain
// while the chain holds (a process that calls setsid leaves the server's
// process group but not its parent), and, when this process is a child
// subreaper, among the orphans reparented to this process. A process is
// known by its pid and start time, so that a reused pid is never signalled.
type tree struct {
	mu    sync.Mutex
	root  int
	start uint64
	mark  string
	known map[int]uint64
}

func newTree(root int, mark string) *tree {
	t := &tree{mark: mark, known: map[int]uint64{}}
	t.setRoot(root)
	return t
}

func (t *tree) setRoot(root int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.root = root
	if st, ok := readStat(root); ok && root > 0 {
		t.start = st.start
	}
}

// scan adds what is new below the tree to it, and returns the processes
// of the tree alive now (zombies excluded) and the whole process table.
func (t *tree) scan() (alive []int, procs map[int]procStat) {
	procs = allProcs()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.root <= 0 {
		return nil, procs
	}
	children := map[int][]int{}
	for pid, st := range procs {
		children[st.ppid] = append(children[st.ppid], pid)
	}
	var queue []int
	if st, ok := procs[t.root]; ok && st.start == t.start {
		queue = append(queue, t.root)
	}
	for pid, start := range t.known {
		if st, ok := procs[pid]; ok && st.start == start {
			queue = append(queue, pid)
		}
	}
	if subreaperOn() && t.mark != "" {
		self := os.Getpid()
		live.mu.Lock()
		for _, pid := range children[self] {
			if _, ok := t.known[pid]; ok || pid == t.root || live.servers[pid] != nil {
				continue
			}
			// An orphan reparented to this process: this server's if it
			// carries its mark, or no mark of a running server (its
			// environment was cleared, or it is a zombie).
			if m := markOf(pid); m == t.mark || !liveMarks[m] {
				t.known[pid] = procs[pid].start
				queue = append(queue, pid)
			}
		}
		live.mu.Unlock()
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if _, ok := t.known[c]; ok || c == t.root {
				continue
			}
			t.known[c] = procs[c].start
			queue = append(queue, c)
		}
	}
	for pid, start := range t.known {
		if st, ok := procs[pid]; ok && st.start == start && st.state != 'Z' {
			alive = append(alive, pid)
		}
	}
	return alive, procs
}

// alive reports whether a process of the tree other than the server runs.
func (t *tree) alive() bool {
	alive, _ := t.scan()
	return len(alive) > 0
}

// signal sends sig to every process of the tree other than the server.
func (t *tree) signal(sig syscall.Signal) {
	alive, _ := t.scan()
	t.send(alive, sig)
}

func (t *tree) send(pids []int, sig syscall.Signal) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, pid := range pids {
		// The identity is checked again right before the signal.
		if st, ok := readStat(pid); ok && st.start == t.known[pid] {
			_ = syscall.Kill(pid, sig)
		}
	}
}

// kill stops the tree with SIGSTOP until no new process appears, so that
// nothing forks its way out while it is killed, then sends SIGKILL to all.
func (t *tree) kill() {
	var alive []int
	for range 50 {
		var more []int
		more, _ = t.scan()
		t.send(more, syscall.SIGSTOP)
		if len(more) == len(alive) {
			break
		}
		alive = more
	}
	alive, _ = t.scan()
	t.send(alive, syscall.SIGKILL)
}

// reap waits for the processes of the tree that are this process's
// children (orphans reparented to it) once they have died, each by its
// pid: never wait4(-1), which would take the server from os/exec.
func (t *tree) reap(d time.Duration) {
	self := os.Getpid()
	deadline := time.Now().Add(d)
	for {
		_, procs := t.scan()
		t.mu.Lock()
		pending := 0
		for pid, start := range t.known {
			st, ok := procs[pid]
			if !ok || st.start != start || st.ppid != self {
				continue
			}
			var ws syscall.WaitStatus
			if got, _ := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); got != pid {
				pending++
			}
		}
		t.mu.Unlock()
		if pending == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(groupPoll)
	}
}
