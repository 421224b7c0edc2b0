package main

import (
	"os"
	"strconv"
	"syscall"
)

// pollableStdin returns standard input as a file that the Go runtime's
// poller reads, when it is a pipe, a FIFO or a socket, and f itself
// otherwise (a terminal, a regular file). restore undoes what it changed
// and is safe to call more than once; f stays open.
//
// An MCP host gives snodo-run a pipe (or, from Node's child_process, a
// Unix socket) in blocking mode, so os.Stdin reads with a blocking
// read(2), and snodo-run's stdin reader spends its life in that system
// call. Go 1.26's runtime can then hang: a stop-the-world that starts
// while the reader is entering read(2), after it checked for one and
// before it counted as in a system call, waits for the reader's processor
// until read(2) returns, and the host, waiting for a response, writes
// nothing. Read through the poller, a read that would block parks the
// goroutine instead of the thread and the stop-the-world proceeds.
//
// A pipe or FIFO is opened again through /proc/self/fd: a new open file
// description of the same pipe, so O_NONBLOCK on it changes nothing for
// any other process holding the pipe. A socket cannot be opened again; its
// own description is set non-blocking, unless it is also standard output
// (one socket for both), which os.Stdout writes in blocking mode.
func pollableStdin(f *os.File) (_ *os.File, restore func()) {
	noop := func() {}
	fd := int(f.Fd()) // os.Stdin is ours, in blocking mode: Fd changes nothing
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return f, noop
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFIFO:
		return reopenNonBlocking(fd, st, f)
	case syscall.S_IFSOCK:
		var out syscall.Stat_t
		if syscall.Fstat(1, &out) == nil && out.Dev == st.Dev && out.Ino == st.Ino {
			return f, noop
		}
		flags, err := fcntl(fd, syscall.F_GETFL, 0)
		if err != nil || flags&syscall.O_NONBLOCK != 0 {
			return f, noop
		}
		// A descriptor of its own (the same description), so that the
		// new file and os.Stdin never close each other's.
		nfd, err := fcntl(fd, syscall.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return f, noop
		}
		if _, err := fcntl(nfd, syscall.F_SETFL, flags|syscall.O_NONBLOCK); err != nil {
			syscall.Close(nfd)
			return f, noop
		}
		restored := false
		return os.NewFile(uintptr(nfd), f.Name()), func() {
			if !restored {
				restored = true
				_, _ = fcntl(fd, syscall.F_SETFL, flags)
			}
		}
	}
	return f, noop
}

// reopenNonBlocking opens the pipe or FIFO fd again, non-blocking, and
// checks that it is still the one st describes.
func reopenNonBlocking(fd int, st syscall.Stat_t, f *os.File) (*os.File, func()) {
	nfd, err := syscall.Open("/proc/self/fd/"+strconv.Itoa(fd), syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return f, func() {}
	}
	var nst syscall.Stat_t
	if err := syscall.Fstat(nfd, &nst); err != nil || nst.Dev != st.Dev || nst.Ino != st.Ino {
		syscall.Close(nfd)
		return f, func() {}
	}
	// os.NewFile of a non-blocking descriptor registers it with the
	// poller.
	return os.NewFile(uintptr(nfd), f.Name()), func() {}
}

func fcntl(fd, cmd, arg int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), uintptr(arg))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
