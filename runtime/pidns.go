package runtime

import (
	"errors"
	"github.com/snodo/snodo/handlers/wasm"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/snodo/snodo/transport/stdio"
)

// PIDNamespace runs the server in a PID namespace of its own (Linux), under
// a small init that is the namespace's PID 1. When that init dies, for
// whatever reason, including this process being SIGKILLed (the init has a
// parent-death signal), the kernel kills every process of the namespace:
// the server and everything it started, even what called setsid or was
// orphaned. See docs/security-processes.md.
//
// The init starts the server with the same stdin, stdout, stderr,
// environment and working directory, and keeps none of the stdio pipes
// open itself, so that EOF on stdin reaches the server. It forwards
// SIGTERM, SIGINT and SIGHUP to every process of the namespace, reaps
// orphans, and when the server exits, kills what is left with SIGKILL at
// once (no SIGTERM and grace, unlike Close without a namespace) and exits
// with the server's status (128+N for a server killed by signal N). Runner.Pid
// and Runner.ExitState are then the init's, which mirror the server's.
//
// When this process is not root, the namespace comes with a user namespace
// that maps its user and group IDs to themselves (not to root, as
// `unshare -r` does): the server runs as the same user, and set-user-ID
// programs do not gain privileges in it.
type PIDNamespace struct {
	// Init is the program to run as the namespace's PID 1: a Go program
	// that calls Init first thing in main, usually this one
	// (os.Executable()).
	Init string

	// Fallback starts the server without a namespace, as if
	// Config.PIDNamespace were nil, when the kernel refuses to create one
	// (EPERM, EINVAL, ENOSPC, EUSERS: no privilege, user namespaces
	// disabled, a limit reached) instead of failing Start. The Logger says
	// which happened, at debug level.
	Fallback bool
}

// initArg is the first argument of a PIDNamespace.Init run by Start.
const initArg = "__snodo-init"

// Init runs this process as the init of a server's PID namespace, and
// exits with the server's status, when Start ran it as PIDNamespace.Init;
// or compiles a Wasm module and exits, when a host with Config.CompileIn
// ran it for that (wasm.ServeCompile); otherwise it returns at once. A
// program named by PIDNamespace.Init, or whose Config sets CompileIn,
// calls it first thing in main.
func Init() {
	wasm.ServeCompile()
	if len(os.Args) < 2 || os.Args[1] != initArg {
		return
	}
	os.Exit(runInit(os.Args[2:]))
}

// connectFunc starts a server process: command run with args, with the
// given process attributes.
type connectFunc func(command string, args []string, attr *syscall.SysProcAttr) (*stdio.Conn, error)

// startProcess starts the server with connect: under the init of a new PID
// namespace when Config.PIDNamespace asks for one, else directly.
func (r *Runner) startProcess(attr *syscall.SysProcAttr, connect connectFunc) (*stdio.Conn, error) {
	srv, ns := r.cfg.Server, r.cfg.PIDNamespace
	if ns == nil {
		r.log.Debug("the server runs without a PID namespace")
		return connect(srv.Command, srv.Args, attr)
	}
	path, ok := serverPath(srv)
	if !ok {
		// Started directly, the server fails the way it does without a
		// namespace, with the same error.
		return connect(srv.Command, srv.Args, attr)
	}
	nsAttr, err := namespaceAttr(attr)
	if err == nil {
		args := append([]string{initArg, path, srv.Command}, srv.Args...)
		var conn *stdio.Conn
		if conn, err = connect(ns.Init, args, nsAttr); err == nil {
			r.log.Debug("the server runs in a PID namespace of its own", "init", ns.Init, "pid", conn.Pid())
			return conn, nil
		}
	}
	if !ns.Fallback || !namespaceRefused(err) {
		return nil, err
	}
	r.log.Debug("cannot create a PID namespace; the server runs without one (process group, /proc walk and subreaper only)", "error", err)
	return connect(srv.Command, srv.Args, attr)
}

// serverPath resolves the server's command as os/exec would (a name without
// a slash is looked up in PATH; a path is relative to the server's working
// directory) and reports whether it names an executable file.
func serverPath(srv Server) (string, bool) {
	if !strings.Contains(srv.Command, "/") {
		path, err := exec.LookPath(srv.Command)
		return path, err == nil
	}
	check := srv.Command
	if !filepath.IsAbs(check) && srv.Dir != "" {
		check = filepath.Join(srv.Dir, check)
	}
	if _, err := exec.LookPath(check); err != nil {
		return "", false
	}
	// The init runs in the server's working directory: the command as given.
	return srv.Command, true
}

// namespaceRefused reports whether err is the kernel refusing a new
// namespace, rather than a failure to run the init.
func namespaceRefused(err error) bool {
	for _, e := range []syscall.Errno{syscall.EPERM, syscall.EINVAL, syscall.ENOSPC, syscall.EUSERS, syscall.ENOSYS} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
