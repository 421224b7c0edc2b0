package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// nonBlocking reports whether fd has O_NONBLOCK set, or fails the test.
func nonBlocking(t *testing.T, fd int) bool {
	t.Helper()
	flags, err := fcntl(fd, syscall.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	return flags&syscall.O_NONBLOCK != 0
}

// checkPollable: f supports read deadlines (only files the runtime's
// poller reads do), so a read of an empty f with a past deadline returns
// at once instead of blocking the thread in read(2).
func checkPollable(t *testing.T, f *os.File) {
	t.Helper()
	if err := f.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatalf("SetReadDeadline: %v: standard input is not read through the poller", err)
	}
	if _, err := f.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read with a past deadline: %v, want %v", err, os.ErrDeadlineExceeded)
	}
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
}

// A blocking pipe, as an MCP host gives its server: snodo-run reads it
// through a new open file description, non-blocking and pollable, and the
// pipe's own description keeps its flags. isTerminal leaves it pollable.
func TestPollableStdinPipe(t *testing.T) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(p[0]), "stdin"), os.NewFile(uintptr(p[1]), "w")
	defer r.Close()
	defer w.Close()
	if err := r.SetReadDeadline(time.Now()); !errors.Is(err, os.ErrNoDeadline) {
		t.Fatalf("the blocking pipe supports deadlines (%v): the test's premise is wrong", err)
	}
	in, restore := pollableStdin(r)
	defer restore()
	if in == r {
		t.Fatal("pollableStdin returned the blocking pipe itself")
	}
	defer in.Close()
	checkPollable(t, in)
	if isTerminal(in) {
		t.Fatal("a pipe is a terminal")
	}
	if !nonBlocking(t, int(in.Fd())) {
		t.Fatal("standard input is in blocking mode after isTerminal")
	}
	if nonBlocking(t, p[0]) {
		t.Fatal("the pipe's own open file description was made non-blocking")
	}
	if _, err := w.Write([]byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	b, err := io.ReadAll(in)
	if err != nil || string(b) != "{}\n" {
		t.Fatalf("read %q, %v; want the line, then EOF", b, err)
	}
}

// A socket (what Node's child_process gives as stdin) is made
// non-blocking itself, and restore gives it its flags back.
func TestPollableStdinSocket(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, peer := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "peer")
	defer s.Close()
	defer peer.Close()
	in, restore := pollableStdin(s)
	defer in.Close()
	checkPollable(t, in)
	if isTerminal(in) {
		t.Fatal("a socket is a terminal")
	}
	// isTerminal (os.File.Fd) did not put it in blocking mode, where a
	// read without a deadline would block its thread again.
	if !nonBlocking(t, fds[0]) {
		t.Fatal("standard input is in blocking mode after isTerminal")
	}
	if _, err := peer.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if n, err := in.Read(make([]byte, 1)); n != 1 || err != nil {
		t.Fatalf("read %d, %v", n, err)
	}
	restore()
	restore() // a second call changes nothing
	if nonBlocking(t, fds[0]) {
		t.Fatal("restore left the socket non-blocking")
	}
}

// Anything else (here a regular file) is read as it is.
func TestPollableStdinRegularFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in, restore := pollableStdin(f)
	defer restore()
	if in != f {
		t.Fatal("a regular file was replaced")
	}
}
