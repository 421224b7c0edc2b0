package wasm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/snodo/snodo/jsonrpc"
)

// up climbs far enough from any mount to reach the host's root directory.
var up = strings.Repeat("../", 24)

// escapeDirs is a mount directory with, beside it and outside it, a secret
// file and a directory: what a guest must never reach.
type escapeDirs struct{ mnt, secret, outside string }

func newEscapeDirs(t *testing.T) escapeDirs {
	t.Helper()
	base := t.TempDir()
	d := escapeDirs{mnt: filepath.Join(base, "mnt"), secret: filepath.Join(base, "secret.txt"), outside: filepath.Join(base, "outside")}
	for _, dir := range []string{d.mnt, d.outside, filepath.Join(d.mnt, "sub"), filepath.Join(d.mnt, "empty")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(d.secret, []byte("top secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.mnt, "f.txt"), []byte("inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

// fsEscape runs the fs-escape module's script once with the mounts.
func fsEscape(t *testing.T, script string, mounts ...Mount) (json.RawMessage, error) {
	t.Helper()
	cfg, _ := json.Marshal(script)
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "fs-escape", Wasm: wasmFile(t, "c/hostile/fs-escape.wasm"),
		Config: cfg, Grants: Grants{Mounts: mounts}})
	return m.HandleRequest(context.Background(), "elicitation/create", elicit("x"))
}

// wantRefused checks that the script failed with the module's own error
// (an errno, not a crash) and that nothing of the host leaked into the
// answer.
func wantRefused(t *testing.T, res json.RawMessage, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the attack succeeded: %s", res)
	}
	e := wantHandlerError(t, err, jsonrpc.CodeInternalError, append([]string{"fs-escape: "}, parts...)...)
	for _, leak := range []string{"root:", "top secret"} {
		if strings.Contains(e.Message, leak) || strings.Contains(string(res), leak) {
			t.Fatalf("host file content leaked: %s %v", res, err)
		}
	}
}

// ABI.md §5: a guest-made symlink that points out of a read-write mount
// leads nowhere: the link is refused or its target cannot be opened.
func TestMountGuestSymlinkCannotEscapeToRead(t *testing.T) {
	d := newEscapeDirs(t)
	rw := Mount{HostDir: d.mnt, GuestPath: "/rw"}
	for _, script := range []string{
		"symlink " + up + "etc/passwd /rw/x; read /rw/x",
		"symlink ../secret.txt /rw/y; read /rw/y",
		"symlink ../../secret.txt /rw/sub/z; read /rw/sub/z",
	} {
		t.Run(script, func(t *testing.T) {
			res, err := fsEscape(t, script, rw)
			wantRefused(t, res, err)
		})
	}
}

// ABI.md §5: a guest-made symlink to a directory outside a mount cannot be
// written through.
func TestMountGuestSymlinkToOutsideDirCannotBeWritten(t *testing.T) {
	d := newEscapeDirs(t)
	res, err := fsEscape(t, "symlink ../outside /rw/d; write /rw/d/pwned", Mount{HostDir: d.mnt, GuestPath: "/rw"})
	wantRefused(t, res, err)
	if _, err := os.Lstat(filepath.Join(d.outside, "pwned")); err == nil {
		t.Fatal("the guest wrote outside its mount through a symlink")
	}
}

// ABI.md §5: a symlink already in a mounted directory that points outside
// it is not followed, in a read-only mount or a read-write one.
func TestMountPreexistingOutsideSymlinkIsNotFollowed(t *testing.T) {
	d := newEscapeDirs(t)
	for name, target := range map[string]string{"abs": "/etc/passwd", "rel": "../secret.txt", "dir": "../outside", "absdir": d.outside} {
		if err := os.Symlink(target, filepath.Join(d.mnt, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, ro := range []bool{true, false} {
		mount := Mount{HostDir: d.mnt, GuestPath: "/m", ReadOnly: ro}
		scripts := []string{"read /m/abs", "read /m/rel", "list /m/dir", "list /m/absdir", "read /m/sub/../rel"}
		if !ro {
			scripts = append(scripts, "write /m/dir/pwned", "write /m/absdir/pwned", "append /m/rel", "write /m/rel", "mkdir /m/dir/new")
		}
		for _, script := range scripts {
			t.Run(sprintf("ro=%t/%s", ro, script), func(t *testing.T) {
				res, err := fsEscape(t, script, mount)
				wantRefused(t, res, err)
			})
		}
	}
	if b, _ := os.ReadFile(d.secret); string(b) != "top secret\n" {
		t.Fatalf("the secret outside the mount was changed: %q", b)
	}
	if ents, _ := os.ReadDir(d.outside); len(ents) != 0 {
		t.Fatalf("the guest created %v outside its mount", ents)
	}
}

// ABI.md §5: ".." cannot climb out of a mount.
func TestMountDotDotCannotTraverse(t *testing.T) {
	d := newEscapeDirs(t)
	for _, ro := range []bool{true, false} {
		mount := Mount{HostDir: d.mnt, GuestPath: "/m", ReadOnly: ro}
		for _, script := range []string{"read /m/../secret.txt", "read /m/sub/../../secret.txt", "list /m/..", "read /m/" + up + "etc/passwd"} {
			t.Run(sprintf("ro=%t/%s", ro, script), func(t *testing.T) {
				res, err := fsEscape(t, script, mount)
				wantRefused(t, res, err)
			})
		}
	}
}

// ABI.md §5: a read-only mount refuses every write with EROFS ("Read-only
// file system" in wasi-libc), and the host directory is left as it was.
func TestReadOnlyMountRefusesEveryWriteWithEROFS(t *testing.T) {
	d := newEscapeDirs(t)
	ro := Mount{HostDir: d.mnt, GuestPath: "/ro", ReadOnly: true}
	for _, script := range []string{
		"write /ro/new.txt",
		"write /ro/f.txt",
		"append /ro/f.txt",
		"truncate /ro/f.txt",
		"mkdir /ro/newdir",
		"rmdir /ro/empty",
		"unlink /ro/f.txt",
		"rename /ro/f.txt /ro/g.txt",
		"symlink f.txt /ro/l",
		"link /ro/f.txt /ro/h",
		"utimes /ro/f.txt",
	} {
		t.Run(script, func(t *testing.T) {
			res, err := fsEscape(t, script, ro)
			wantRefused(t, res, err, "Read-only file system")
		})
	}
	if b, _ := os.ReadFile(filepath.Join(d.mnt, "f.txt")); string(b) != "inside\n" {
		t.Fatalf("f.txt in a read-only mount was changed: %q", b)
	}
	ents, _ := os.ReadDir(d.mnt)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "empty f.txt sub" {
		t.Fatalf("read-only mount holds %v, want empty f.txt sub", names)
	}
}

// ABI.md §5: inside a read-write mount everything works, symlinks that
// stay inside included.
func TestReadWriteMountWorksInside(t *testing.T) {
	d := newEscapeDirs(t)
	res, err := fsEscape(t, "mkdir /rw/n; write /rw/n/a; symlink a /rw/n/l; symlink ../f.txt /rw/n/up; read /rw/n/up; append /rw/n/l; rename /rw/n/a /rw/n/b; link /rw/n/b /rw/n/c; unlink /rw/n/l; utimes /rw/n/b; truncate /rw/n/c; read /rw/sub/../n/b; list /rw/n",
		Mount{HostDir: d.mnt, GuestPath: "/rw"})
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Content struct{ Got string } }
	json.Unmarshal(res, &r)
	got := strings.Fields(r.Content.Got)
	slices.Sort(got)
	if strings.Join(got, " ") != ". .. b c up" {
		t.Fatalf("list of /rw/n: %q", r.Content.Got)
	}
	if fi, err := os.Lstat(filepath.Join(d.mnt, "n", "up")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("symlink inside the mount: %v %v", fi, err)
	}
}

// The read-only rootFS refuses every change with EROFS, chmod included
// (WASI preview 1 has no chmod, so no guest can try it), and a file opened
// for reading cannot be written, truncated or touched through.
func TestReadOnlyRootFSRefusesEveryChange(t *testing.T) {
	d := newEscapeDirs(t)
	r, err := newRootFS(d.mnt, true)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	for what, e := range map[string]experimentalsys.Errno{
		"chmod":   r.Chmod("f.txt", 0o777),
		"mkdir":   r.Mkdir("n", 0o755),
		"rename":  r.Rename("f.txt", "g.txt"),
		"rmdir":   r.Rmdir("empty"),
		"unlink":  r.Unlink("f.txt"),
		"link":    r.Link("f.txt", "h"),
		"symlink": r.Symlink("f.txt", "l"),
		"utimens": r.Utimens("f.txt", 0, 0),
	} {
		if e != experimentalsys.EROFS {
			t.Errorf("%s: %v, want EROFS", what, e)
		}
	}
	for _, flag := range []experimentalsys.Oflag{experimentalsys.O_WRONLY, experimentalsys.O_RDWR,
		experimentalsys.O_RDONLY | experimentalsys.O_CREAT, experimentalsys.O_RDONLY | experimentalsys.O_TRUNC,
		experimentalsys.O_RDONLY | experimentalsys.O_APPEND} {
		if _, e := r.OpenFile("f.txt", flag, 0o644); e != experimentalsys.EROFS {
			t.Errorf("open with %v: %v, want EROFS", flag, e)
		}
	}
	f, e := r.OpenFile("f.txt", experimentalsys.O_RDONLY, 0)
	if e != 0 {
		t.Fatal(e)
	}
	defer f.Close()
	if _, e := f.Write([]byte("x")); e != experimentalsys.EROFS {
		t.Errorf("write: %v, want EROFS", e)
	}
	if _, e := f.Pwrite([]byte("x"), 0); e != experimentalsys.EROFS {
		t.Errorf("pwrite: %v, want EROFS", e)
	}
	if e := f.Truncate(0); e != experimentalsys.EROFS {
		t.Errorf("truncate: %v, want EROFS", e)
	}
	if e := f.Utimens(0, 0); e != experimentalsys.EROFS {
		t.Errorf("utimens: %v, want EROFS", e)
	}
	if b, _ := os.ReadFile(filepath.Join(d.mnt, "f.txt")); string(b) != "inside\n" {
		t.Fatalf("f.txt changed: %q", b)
	}
}

// A symlink that leaves the root is refused by the rootFS's Symlink, and
// one made behind its back (by the host) is not followed: os.Root refuses
// it with EPERM, for Stat, OpenFile, and as a directory on the way.
func TestRootFSConfinesEveryPath(t *testing.T) {
	d := newEscapeDirs(t)
	r, err := newRootFS(d.mnt, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	for _, target := range []string{"/etc/passwd", "../secret.txt", "sub/../../secret.txt", up + "etc"} {
		if e := r.Symlink(target, "l"); e != experimentalsys.EPERM {
			t.Errorf("symlink %s: %v, want EPERM", target, e)
		}
	}
	if e := r.Symlink("../f.txt", "sub/ok"); e != 0 {
		t.Fatalf("symlink inside: %v", e)
	}
	os.Symlink("../secret.txt", filepath.Join(d.mnt, "hostmade"))
	os.Symlink(d.outside, filepath.Join(d.mnt, "hostdir"))
	for _, name := range []string{"hostmade", "hostdir/x", "../secret.txt", "/../secret.txt", "sub/../../secret.txt"} {
		if _, e := r.Stat(name); e == 0 {
			t.Errorf("stat %s: found, want refused", name)
		}
		if f, e := r.OpenFile(name, experimentalsys.O_RDWR|experimentalsys.O_CREAT, 0o644); e == 0 {
			f.Close()
			t.Errorf("open %s: opened, want refused", name)
		}
	}
	if e := r.Mkdir("hostdir/new", 0o755); e == 0 {
		t.Error("mkdir through a symlink to outside succeeded")
	}
	if e := r.Rename("f.txt", "hostdir/f.txt"); e == 0 {
		t.Error("rename through a symlink to outside succeeded")
	}
	if e := r.Link("hostmade", "hard"); e == 0 {
		// A hard link to the symlink itself is harmless only if it is
		// still not followed.
		if _, e := r.Stat("hard"); e == 0 {
			t.Error("a hard link made the outside file reachable")
		}
	}
	if ents, _ := os.ReadDir(d.outside); len(ents) != 0 {
		t.Fatalf("created %v outside the root", ents)
	}
}
