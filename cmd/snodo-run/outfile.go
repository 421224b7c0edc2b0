package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// resultFile is where --output-file sends what a command prints: a
// temporary file beside FILE, renamed over FILE when the command has
// printed something, so that FILE is never seen half-written and is left
// as it was when the command printed nothing.
type resultFile struct {
	path   string // FILE as given
	target string // FILE with its symlinks resolved: what is replaced
	tmp    *os.File
	n      int64 // bytes written
	werr   error // the first write error: FILE is then left as it was
}

func (f *resultFile) Write(p []byte) (int, error) {
	n, err := f.tmp.Write(p)
	f.n += int64(n)
	if err != nil && f.werr == nil {
		f.werr = err
	}
	return n, err
}

// openResultFile makes a.stdout the temporary file of --output-file, when
// given: FILE must not be a directory or anything but a regular file, and
// its directory must be writable.
func (a *app) openResultFile(cmd *cobra.Command) error {
	flag := cmd.Flags().Lookup("output-file")
	if flag == nil || flag.Value.String() == "" || a.result != nil {
		return nil
	}
	path := flag.Value.String()
	target := finalPath(path)
	fi, err := os.Stat(target)
	switch {
	case err == nil && fi.IsDir():
		return usageErr("--output-file %s is a directory", path)
	case err == nil && !fi.Mode().IsRegular():
		return usageErr("--output-file %s is not a regular file", path)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return usageErr("--output-file %s: %v", path, errors.Unwrap(err))
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*.tmp")
	if err != nil {
		return usageErr("--output-file %s cannot be written: %v", path, errors.Unwrap(err))
	}
	a.result = &resultFile{path: path, target: target, tmp: tmp}
	a.stdout = a.result
	return nil
}

// closeResultFile ends --output-file after the command: FILE is replaced
// when something was printed (a tool result with isError too), and the
// temporary file removed otherwise. It returns the command's error, or
// the file's when the command succeeded.
func (a *app) closeResultFile(cmdErr error) error {
	f := a.result
	if f == nil {
		return cmdErr
	}
	a.result = nil
	err := f.commit()
	if err != nil {
		_ = os.Remove(f.tmp.Name())
		if cmdErr == nil {
			return &cliError{code: exitUsage, kind: "usage", err: fmt.Errorf("--output-file %s: %v", f.path, err)}
		}
	}
	return cmdErr
}

// finalPath is path with its symlinks resolved, the last one even when
// what it points to does not exist yet: a link is written through, never
// replaced.
func finalPath(path string) string {
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		return resolved
	}
	for range 40 {
		link, err := os.Readlink(path)
		if err != nil {
			break
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		path = link
	}
	return path
}

func (f *resultFile) commit() error {
	if err := f.tmp.Close(); err != nil {
		return err
	}
	if f.werr != nil {
		return f.werr
	}
	if f.n == 0 {
		return os.Remove(f.tmp.Name())
	}
	// The mode of the file replaced, or what a shell redirection gives.
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(f.target); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := os.Chmod(f.tmp.Name(), mode); err != nil {
		return err
	}
	return os.Rename(f.tmp.Name(), f.target)
}
