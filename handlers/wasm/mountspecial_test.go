package wasm

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// specialDirs is a mount directory with a regular file, a FIFO, a symlink
// to the FIFO and a Unix socket: only the first may be opened.
func specialDirs(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "m")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("fifo", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return dir
}

// releaseFIFO opens the FIFO at path for reading and writing and closes it
// again: a reader or a writer blocked opening it gets its other end.
func releaseFIFO(path string) {
	if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
		f.Close()
	}
}

// ABI.md §5: a guest that opens a FIFO, a symlink to one or a socket in a
// read-only or a read-write mount — to read, to write or to append — is
// refused at once with EACCES ("Permission denied"; writing a read-only
// mount stays EROFS), and its call goes on to its end. No open waits for
// the FIFO's other end.
func TestMountFIFOAndSocketAreRefusedAtOnce(t *testing.T) {
	dir := specialDirs(t)
	const denied, readOnly = "Permission denied", "Read-only file system"
	for _, ro := range []bool{true, false} {
		mount := Mount{HostDir: dir, GuestPath: "/m", ReadOnly: ro}
		for _, c := range []struct{ script, rw, ro string }{
			{"read /m/fifo", denied, denied},
			{"append /m/fifo", denied, readOnly},
			{"write /m/fifo", denied, readOnly},
			{"read /m/link", denied, denied},
			{"append /m/link", denied, readOnly},
			{"read /m/sock", denied, denied},
			{"append /m/sock", denied, readOnly},
		} {
			t.Run(sprintf("ro=%t/%s", ro, c.script), func(t *testing.T) {
				want := c.rw
				if ro {
					want = c.ro
				}
				cfg, _ := json.Marshal(c.script)
				h := newHost(t)
				m := load(t, h, ModuleConfig{Name: "fs-escape", Wasm: wasmFile(t, "c/hostile/fs-escape.wasm"),
					Config: cfg, Grants: Grants{Mounts: []Mount{mount}}})
				type answer struct {
					res json.RawMessage
					err error
				}
				done := make(chan answer, 1)
				go func() {
					res, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("x"))
					done <- answer{res, err}
				}()
				var a answer
				select {
				case a = <-done:
				case <-time.After(blockBound):
					// Let the blocked open through, so the call ends.
					releaseFIFO(filepath.Join(dir, "fifo"))
					<-done
					t.Fatalf("%s still blocked after %s", c.script, blockBound)
				}
				wantRefused(t, a.res, a.err, c.script+": "+want)
			})
		}
	}
}

// The rootFS opens regular files and directories only, and never waits to
// open: a FIFO (whatever the flags, O_NONBLOCK included), a symlink to
// one, a socket and a device are EACCES; O_DIRECTORY on one is ENOTDIR and
// O_CREAT|O_EXCL EEXIST, as the kernel says. A regular file's descriptor
// is blocking unless the guest asked for O_NONBLOCK.
func TestRootFSOpensOnlyRegularFilesAndDirectories(t *testing.T) {
	dir := specialDirs(t)
	r, err := newRootFS(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	const (
		rd    = experimentalsys.O_RDONLY
		wr    = experimentalsys.O_WRONLY
		rdwr  = experimentalsys.O_RDWR
		nonbl = experimentalsys.O_NONBLOCK
	)
	for _, c := range []struct {
		name string
		flag experimentalsys.Oflag
		want experimentalsys.Errno
	}{
		{"fifo", rd, experimentalsys.EACCES},
		{"fifo", wr, experimentalsys.EACCES},
		{"fifo", rdwr, experimentalsys.EACCES},
		{"fifo", rd | nonbl, experimentalsys.EACCES},
		{"fifo", wr | experimentalsys.O_APPEND, experimentalsys.EACCES},
		{"fifo", wr | experimentalsys.O_TRUNC, experimentalsys.EACCES},
		{"fifo", wr | experimentalsys.O_CREAT, experimentalsys.EACCES},
		{"link", rd, experimentalsys.EACCES},
		{"link", wr, experimentalsys.EACCES},
		{"sock", rd, experimentalsys.EACCES},
		{"sock", rdwr, experimentalsys.EACCES},
		{"fifo", rd | experimentalsys.O_DIRECTORY, experimentalsys.ENOTDIR},
		{"fifo", wr | experimentalsys.O_CREAT | experimentalsys.O_EXCL, experimentalsys.EEXIST},
	} {
		done := make(chan experimentalsys.Errno, 1)
		go func() {
			f, e := r.OpenFile(c.name, c.flag, 0o644)
			if e == 0 {
				f.Close()
			}
			done <- e
		}()
		select {
		case e := <-done:
			if e != c.want {
				t.Errorf("open %s with %v: %v, want %v", c.name, c.flag, e, c.want)
			}
		case <-time.After(blockBound):
			releaseFIFO(filepath.Join(dir, "fifo"))
			<-done
			t.Errorf("open %s with %v blocked", c.name, c.flag)
		}
	}

	dev, err := newRootFS("/dev", true)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.close()
	if _, e := dev.OpenFile("null", rd, 0); e != experimentalsys.EACCES {
		t.Errorf("open /dev/null in a mount of /dev: %v, want EACCES", e)
	}

	for _, c := range []struct {
		flag     experimentalsys.Oflag
		nonblock bool
	}{{rd, false}, {rdwr, false}, {rd | nonbl, true}} {
		f, e := r.OpenFile("f.txt", c.flag, 0)
		if e != 0 {
			t.Fatalf("open f.txt with %v: %v", c.flag, e)
		}
		var flags int
		rc, _ := f.(*rootFile).file.SyscallConn()
		rc.Control(func(fd uintptr) { flags = getfl(fd) })
		if got := flags&syscall.O_NONBLOCK != 0; got != c.nonblock {
			t.Errorf("f.txt opened with %v: O_NONBLOCK %t, want %t", c.flag, got, c.nonblock)
		}
		f.Close()
	}
	if f, e := r.OpenFile("/", rd|experimentalsys.O_DIRECTORY, 0); e != 0 {
		t.Errorf("open the mount's directory: %v", e)
	} else {
		f.Close()
	}
}

// getfl is fcntl(fd, F_GETFL).
func getfl(fd uintptr) int {
	flags, _, _ := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	return int(flags)
}
