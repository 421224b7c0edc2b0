package wasm

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// rootFS is a mounted host directory as a wazero filesystem, confined with
// Go's os.Root: every path a guest gives is resolved by the kernel relative
// to the mount's directory, and no path component — "..", a symlink the
// guest made, a symlink that was already there, absolute or relative — may
// resolve outside it. A path that would is refused with EPERM.
//
// wazero's own directory mount joins paths as strings and lets the host
// follow symlinks, so a guest with a read-write mount could link to
// ../../etc/passwd and read it; rootFS is why it cannot.
//
// A read-only rootFS refuses every change with EROFS: opening for writing,
// creating, truncating, mkdir, rename, unlink, rmdir, symlink, link,
// utimes and chmod.
//
// Only regular files and directories are opened: a FIFO, a socket, a
// character or block device — or a symlink to one — is refused with EACCES
// (OpenFile), so that no open, read or write of a guest can wait on one.
type rootFS struct {
	root     *os.Root
	readOnly bool
}

var _ experimentalsys.FS = (*rootFS)(nil)

func newRootFS(dir string, readOnly bool) (*rootFS, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &rootFS{root: root, readOnly: readOnly}, nil
}

func (r *rootFS) close() error { return r.root.Close() }

// String names the host directory (wazero shows it in its fs listings).
func (r *rootFS) String() string { return r.root.Name() }

// rel turns a path wazero gives, relative to the mount and perhaps with a
// leading slash, into a name for os.Root. ".." stays: os.Root resolves it
// and refuses it when it climbs out.
func rel(name string) string {
	name = strings.TrimLeft(name, "/")
	if name == "" {
		return "."
	}
	return name
}

// errno maps an error of os.Root to a WASI errno. os.Root's refusal of a
// path that escapes the root is not an errno of its own; it becomes EPERM.
func errno(err error) experimentalsys.Errno {
	if err == nil {
		return 0
	}
	var se syscall.Errno
	if errors.As(err, &se) {
		return experimentalsys.UnwrapOSError(se)
	}
	if strings.Contains(err.Error(), "path escapes from parent") {
		return experimentalsys.EPERM
	}
	return experimentalsys.UnwrapOSError(err)
}

const writeFlags = experimentalsys.O_WRONLY | experimentalsys.O_RDWR | experimentalsys.O_CREAT |
	experimentalsys.O_TRUNC | experimentalsys.O_APPEND | experimentalsys.O_EXCL

func (r *rootFS) OpenFile(name string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if flag&experimentalsys.O_DIRECTORY != 0 && flag&(experimentalsys.O_WRONLY|experimentalsys.O_RDWR) != 0 {
		return nil, experimentalsys.EISDIR
	}
	if r.readOnly && flag&writeFlags != 0 {
		return nil, experimentalsys.EROFS
	}
	name = rel(name)
	if e := r.refuseSpecial(name, flag); e != 0 {
		return nil, e
	}
	// Non-blocking, so that a file swapped for a FIFO since refuseSpecial
	// looked cannot make the open wait for the FIFO's other end (a write
	// open then fails with ENXIO); without a controlling terminal, should
	// it be swapped for one.
	f, err := r.root.OpenFile(name, osOpenFlag(flag)|syscall.O_NONBLOCK|syscall.O_NOCTTY, perm)
	if err != nil {
		return nil, errno(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, errno(err)
	}
	if e := openable(fi.Mode(), flag); e != 0 {
		f.Close()
		return nil, e
	}
	if flag&experimentalsys.O_NONBLOCK == 0 && fi.Mode().IsRegular() {
		// As the guest asked: a blocking descriptor.
		if e := setBlocking(f); e != 0 {
			f.Close()
			return nil, e
		}
	}
	st := sys.NewStat_t(fi)
	return &rootFile{fs: r, file: f, flag: flag, rewind: true, st: &st}, 0
}

// refuseSpecial refuses to open what name names if it is neither a regular
// file nor a directory, before it is opened at all: opening a FIFO lets
// through a writer that waits on the host side, and opening a device can
// act on it. A name that cannot be stat'ed (missing, outside the mount) is
// left for the open to answer, as is O_CREAT|O_EXCL, which opens nothing
// that exists.
func (r *rootFS) refuseSpecial(name string, flag experimentalsys.Oflag) experimentalsys.Errno {
	if flag&(experimentalsys.O_CREAT|experimentalsys.O_EXCL) == experimentalsys.O_CREAT|experimentalsys.O_EXCL {
		return 0
	}
	var fi fs.FileInfo
	var err error
	if flag&experimentalsys.O_NOFOLLOW != 0 {
		fi, err = r.root.Lstat(name)
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return 0 // the open fails with ELOOP
		}
	} else {
		fi, err = r.root.Stat(name)
	}
	if err != nil {
		return 0
	}
	return openable(fi.Mode(), flag)
}

// openable says whether a file of mode may be opened with flag: a regular
// file or a directory may (O_DIRECTORY wants a directory: ENOTDIR, as
// the kernel says); anything else is refused with EACCES. EACCES, not
// ENXIO: the refusal is the sandbox's, whatever the file's state — ENXIO is
// the kernel's answer to a non-blocking write open of a FIFO nobody reads,
// which a guest could take for a state to wait out, while EACCES is what
// Linux answers for a device node on a filesystem mounted nodev, the same
// refusal by kind.
func openable(mode fs.FileMode, flag experimentalsys.Oflag) experimentalsys.Errno {
	switch {
	case mode.IsDir():
		return 0
	case flag&experimentalsys.O_DIRECTORY != 0:
		return experimentalsys.ENOTDIR
	case mode.IsRegular():
		return 0
	}
	return experimentalsys.EACCES
}

// setBlocking clears O_NONBLOCK on f's descriptor.
func setBlocking(f *os.File) experimentalsys.Errno {
	rc, err := f.SyscallConn()
	if err != nil {
		return errno(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return errno(err)
	}
	return errno(serr)
}

// osOpenFlag is wazero's mapping of its open flags to the host's.
func osOpenFlag(oflag experimentalsys.Oflag) int {
	var flag int
	switch oflag & (experimentalsys.O_RDONLY | experimentalsys.O_RDWR | experimentalsys.O_WRONLY) {
	case experimentalsys.O_RDWR:
		flag = os.O_RDWR
	case experimentalsys.O_WRONLY:
		flag = os.O_WRONLY
	}
	for _, m := range [...]struct {
		from experimentalsys.Oflag
		to   int
	}{
		{experimentalsys.O_APPEND, os.O_APPEND},
		{experimentalsys.O_CREAT, os.O_CREATE},
		{experimentalsys.O_EXCL, os.O_EXCL},
		{experimentalsys.O_SYNC, os.O_SYNC},
		{experimentalsys.O_TRUNC, os.O_TRUNC},
		{experimentalsys.O_DIRECTORY, syscall.O_DIRECTORY},
		{experimentalsys.O_DSYNC, syscall.O_DSYNC},
		{experimentalsys.O_NOFOLLOW, syscall.O_NOFOLLOW},
		{experimentalsys.O_NONBLOCK, syscall.O_NONBLOCK},
	} {
		if oflag&m.from != 0 {
			flag |= m.to
		}
	}
	return flag
}

func (r *rootFS) Lstat(name string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := r.root.Lstat(rel(name))
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

func (r *rootFS) Stat(name string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := r.root.Stat(rel(name))
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

func (r *rootFS) Mkdir(name string, perm fs.FileMode) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	e := errno(r.root.Mkdir(rel(name), perm))
	if e == experimentalsys.ENOTDIR {
		e = experimentalsys.ENOENT
	}
	return e
}

func (r *rootFS) Chmod(name string, perm fs.FileMode) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	return errno(r.root.Chmod(rel(name), perm))
}

func (r *rootFS) Rename(from, to string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	from, to = rel(from), rel(to)
	if from == to {
		return 0
	}
	return errno(r.root.Rename(from, to))
}

// Rmdir removes a directory only: os.Root's Remove removes either kind,
// so the kind is checked first.
func (r *rootFS) Rmdir(name string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	fi, err := r.root.Lstat(rel(name))
	if err != nil {
		return errno(err)
	}
	if !fi.IsDir() {
		return experimentalsys.ENOTDIR
	}
	return errno(r.root.Remove(rel(name)))
}

// Unlink removes anything but a directory (a symlink itself, never its
// target).
func (r *rootFS) Unlink(name string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	fi, err := r.root.Lstat(rel(name))
	if err != nil {
		return errno(err)
	}
	if fi.IsDir() {
		return experimentalsys.EISDIR
	}
	return errno(r.root.Remove(rel(name)))
}

func (r *rootFS) Link(oldName, newName string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	return errno(r.root.Link(rel(oldName), rel(newName)))
}

// Symlink makes only links whose target stays inside the mount: an
// absolute target, or a relative one that climbs out of the mount from
// the link's directory, is refused with EPERM. (A link that escaped would
// still not be followed — os.Root refuses it — but it is not made at all.)
func (r *rootFS) Symlink(target, linkName string) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	linkName = rel(linkName)
	if target == "" || path.IsAbs(target) {
		return experimentalsys.EPERM
	}
	if resolved := path.Join(path.Dir(path.Clean(linkName)), target); resolved == ".." || strings.HasPrefix(resolved, "../") {
		return experimentalsys.EPERM
	}
	return errno(r.root.Symlink(target, linkName))
}

func (r *rootFS) Readlink(name string) (string, experimentalsys.Errno) {
	target, err := r.root.Readlink(rel(name))
	if err != nil {
		return "", errno(err)
	}
	return target, 0
}

func (r *rootFS) Utimens(name string, atim, mtim int64) experimentalsys.Errno {
	if r.readOnly {
		return experimentalsys.EROFS
	}
	return r.chtimes(rel(name), atim, mtim)
}

// chtimes sets the times of name, keeping a time given as UTIME_OMIT.
func (r *rootFS) chtimes(name string, atim, mtim int64) experimentalsys.Errno {
	if atim == experimentalsys.UTIME_OMIT || mtim == experimentalsys.UTIME_OMIT {
		fi, err := r.root.Stat(name)
		if err != nil {
			return errno(err)
		}
		st := sys.NewStat_t(fi)
		if atim == experimentalsys.UTIME_OMIT {
			atim = st.Atim
		}
		if mtim == experimentalsys.UTIME_OMIT {
			mtim = st.Mtim
		}
	}
	return errno(r.root.Chtimes(name, time.Unix(0, atim), time.Unix(0, mtim)))
}

// rootFile is a file or directory opened in a rootFS. It implements
// wazero's File with the *os.File's own descriptor: nothing is reopened by
// path, so nothing can be swapped under it.
type rootFile struct {
	fs     *rootFS
	file   *os.File
	flag   experimentalsys.Oflag
	closed bool
	// rewind makes the next Readdir start from the first entry: after the
	// open, and after a Seek to 0 (how a guest rewinds a directory).
	rewind bool
	st     *sys.Stat_t
}

var _ experimentalsys.File = (*rootFile)(nil)

func (f *rootFile) stat() (*sys.Stat_t, experimentalsys.Errno) {
	if f.closed {
		return nil, experimentalsys.EBADF
	}
	if f.st == nil {
		st, e := f.Stat()
		if e != 0 {
			return nil, e
		}
		f.st = &st
	}
	return f.st, 0
}

func (f *rootFile) Dev() (uint64, experimentalsys.Errno) {
	st, e := f.stat()
	if e != 0 {
		return 0, e
	}
	return st.Dev, 0
}

func (f *rootFile) Ino() (sys.Inode, experimentalsys.Errno) {
	st, e := f.stat()
	if e != 0 {
		return 0, e
	}
	return st.Ino, 0
}

func (f *rootFile) IsDir() (bool, experimentalsys.Errno) {
	st, e := f.stat()
	if e != 0 {
		return false, e
	}
	return st.Mode.IsDir(), 0
}

func (f *rootFile) IsAppend() bool { return f.flag&experimentalsys.O_APPEND != 0 }

// SetAppend is refused: Go fixes a file's append mode when it is opened,
// and reopening by path is what rootFile never does. A guest opens with
// O_APPEND instead.
func (f *rootFile) SetAppend(enable bool) experimentalsys.Errno {
	if enable == f.IsAppend() {
		return 0
	}
	return experimentalsys.ENOSYS
}

func (f *rootFile) Stat() (sys.Stat_t, experimentalsys.Errno) {
	if f.closed {
		return sys.Stat_t{}, experimentalsys.EBADF
	}
	fi, err := f.file.Stat()
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

func (f *rootFile) Read(buf []byte) (int, experimentalsys.Errno) {
	if f.closed {
		return 0, experimentalsys.EBADF
	}
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := f.file.Read(buf)
	if err == io.EOF {
		err = nil
	}
	return n, errno(err)
}

func (f *rootFile) Pread(buf []byte, off int64) (int, experimentalsys.Errno) {
	if f.closed {
		return 0, experimentalsys.EBADF
	}
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := f.file.ReadAt(buf, off)
	if err == io.EOF {
		err = nil
	}
	return n, errno(err)
}

// fileOffset is int64. wazero's File.Seek returns an Errno where io.Seeker
// returns an error, which go vet's stdmethods check reports for a method
// named Seek whose first parameter is spelled int64; the alias is the
// same type, so rootFile still implements wazero's File.
type fileOffset = int64

func (f *rootFile) Seek(offset fileOffset, whence int) (int64, experimentalsys.Errno) {
	if f.closed {
		return 0, experimentalsys.EBADF
	}
	if isDir, _ := f.IsDir(); isDir {
		if offset == 0 && whence == io.SeekStart {
			f.rewind = true
			return 0, 0
		}
		return 0, experimentalsys.EISDIR
	}
	n, err := f.file.Seek(offset, whence)
	return n, errno(err)
}

func (f *rootFile) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	if f.closed {
		return nil, experimentalsys.EBADF
	}
	if isDir, e := f.IsDir(); e != 0 {
		return nil, e
	} else if !isDir {
		return nil, experimentalsys.EBADF
	}
	if f.rewind {
		f.rewind = false
		if _, err := f.file.Seek(0, io.SeekStart); err != nil {
			return nil, errno(err)
		}
	}
	// Entries are stat'ed relative to the directory's descriptor (os.File
	// does so for a file opened in an os.Root), never by a path.
	fis, err := f.file.Readdir(n)
	if err == io.EOF {
		err = nil
	}
	if err != nil {
		return nil, errno(err)
	}
	dirents := make([]experimentalsys.Dirent, 0, len(fis))
	for _, fi := range fis {
		dirents = append(dirents, experimentalsys.Dirent{Name: fi.Name(), Ino: sys.NewStat_t(fi).Ino, Type: fi.Mode().Type()})
	}
	return dirents, 0
}

func (f *rootFile) writable() experimentalsys.Errno {
	if f.closed {
		return experimentalsys.EBADF
	}
	if isDir, _ := f.IsDir(); isDir {
		return experimentalsys.EISDIR
	}
	if f.fs.readOnly {
		return experimentalsys.EROFS
	}
	return 0
}

func (f *rootFile) Write(buf []byte) (int, experimentalsys.Errno) {
	if e := f.writable(); e != 0 {
		return 0, e
	}
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := f.file.Write(buf)
	return n, errno(err)
}

func (f *rootFile) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	if e := f.writable(); e != 0 {
		return 0, e
	}
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := f.file.WriteAt(buf, off)
	return n, errno(err)
}

func (f *rootFile) Truncate(size int64) experimentalsys.Errno {
	if e := f.writable(); e != 0 {
		return e
	}
	if size < 0 {
		return experimentalsys.EINVAL
	}
	return errno(f.file.Truncate(size))
}

func (f *rootFile) Sync() experimentalsys.Errno {
	if f.closed {
		return experimentalsys.EBADF
	}
	return errno(f.file.Sync())
}

func (f *rootFile) Datasync() experimentalsys.Errno { return f.Sync() }

// Utimens sets the times through the descriptor (/proc/self/fd is not
// used: its link would be resolved outside the root).
func (f *rootFile) Utimens(atim, mtim int64) experimentalsys.Errno {
	if f.closed {
		return experimentalsys.EBADF
	}
	if f.fs.readOnly {
		return experimentalsys.EROFS
	}
	return futimens(f.file, atim, mtim)
}

func (f *rootFile) Close() experimentalsys.Errno {
	if f.closed {
		return 0
	}
	f.closed = true
	return errno(f.file.Close())
}
