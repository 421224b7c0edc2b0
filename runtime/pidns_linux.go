//go:build linux

package runtime

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// pidnsAttrHook, when set, changes the attributes of a namespaced start:
// tests use it to make the kernel refuse the namespace.
var pidnsAttrHook func(*syscall.SysProcAttr)

// namespaceAttr returns the attributes of the init of a new PID namespace:
// the server's own (process group, parent-death signal), with CLONE_NEWPID,
// and, when this process is not root, CLONE_NEWUSER with this process's
// user and group IDs mapped to themselves.
func namespaceAttr(attr *syscall.SysProcAttr) (*syscall.SysProcAttr, error) {
	a := *attr
	a.Cloneflags |= syscall.CLONE_NEWPID
	if uid, gid := os.Geteuid(), os.Getegid(); uid != 0 {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
	if pidnsAttrHook != nil {
		pidnsAttrHook(&a)
	}
	return &a, nil
}

// initPoll bounds how long the init may miss a SIGCHLD (the signal channel
// was full) before it looks for exited children anyway.
const initPoll = time.Second

// runInit is the init of a server's PID namespace: args are the server's
// path, then its argv. It returns the exit code of the init.
func runInit(args []string) int {
	if os.Getpid() != 1 {
		// kill(-1) below would reach every process of the user.
		fmt.Fprintln(os.Stderr, "snodo init: not the first process of a PID namespace")
		return 127
	}
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "snodo init: no server command")
		return 127
	}
	sigs := make(chan os.Signal, 64)
	// Before the server exists, so that no SIGCHLD is missed.
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGCHLD)
	server, err := syscall.ForkExec(args[0], args[1:], &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "snodo init: cannot start the server %s: %v\n", args[0], err)
		if errors.Is(err, syscall.ENOENT) {
			return 127
		}
		return 126
	}
	releaseStdio()
	tick := time.NewTicker(initPoll)
	defer tick.Stop()
	for {
		if ws, exited := reapAll(server); exited {
			// What the server leaves behind dies with it, as it would
			// when this process exits.
			_ = syscall.Kill(-1, syscall.SIGKILL)
			for {
				if _, err := syscall.Wait4(-1, nil, 0, nil); err == syscall.ECHILD {
					break
				} else if err != nil && err != syscall.EINTR {
					break
				}
			}
			return exitCode(ws)
		}
		select {
		case sig := <-sigs:
			if sig != syscall.SIGCHLD {
				// Every process of the namespace but this one, as Snodo
				// signals the server's process group and descendants.
				_ = syscall.Kill(-1, sig.(syscall.Signal))
			}
		case <-tick.C:
		}
	}
}

// releaseStdio points the init's stdin and stdout at /dev/null: the server
// has its own copies, and the init's would keep EOF from reaching it. Its
// stderr is kept, for its own errors; it closes when the init exits.
func releaseStdio() {
	null, err := syscall.Open("/dev/null", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	for _, fd := range []int{0, 1} {
		if err == nil {
			_ = syscall.Dup3(null, fd, 0)
		} else {
			_ = syscall.Close(fd)
		}
	}
	if err == nil {
		_ = syscall.Close(null)
	}
}

// reapAll reaps every child that has exited, orphans included, and reports
// the server's status once it has exited.
func reapAll(server int) (status syscall.WaitStatus, exited bool) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return status, exited
		}
		if pid == server {
			status, exited = ws, true
		}
	}
}

// exitCode is the exit code that mirrors a server's end: its own, or
// 128+N for a server killed by signal N.
func exitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
