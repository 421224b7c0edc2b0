package main

// The shell's history file: where it is, and kept private.

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// defaultHistoryFile is snodo/shell_history in $XDG_STATE_HOME, or else in
// the user cache directory; "" when neither is known.
func defaultHistoryFile() string {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		var err error
		if dir, err = os.UserCacheDir(); err != nil {
			return ""
		}
	}
	return filepath.Join(dir, "snodo", "shell_history")
}

// historyLimit is how many lines the history keeps.
const historyLimit = 1000

// prepareHistory readies the history file, which holds the tool arguments
// typed, for the line editor: its directory is made 0700 when it does not
// exist, the file is created 0600, and an existing file others can read
// is made private (its group and other bits cleared), with a notice on w. The file is cut to its last limit
// lines here, in place: the line editor would otherwise rewrite it
// through a new file that others can read.
func prepareHistory(path string, limit int, w io.Writer) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		if err := f.Chmod(perm &^ 0o077); err != nil {
			return fmt.Errorf("%s can be read by others (mode %04o) and could not be made private: %v", path, perm, err)
		}
		fmt.Fprintf(w, "snodo-run: the history file %s could be read by others (mode %04o); it is now %04o\n", path, perm, perm&^0o077)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	// The line editor counts the lines that end with a newline.
	excess := bytes.Count(b, []byte("\n")) - limit
	if excess <= 0 {
		return nil
	}
	start := 0
	for ; excess > 0; excess-- {
		start += bytes.IndexByte(b[start:], '\n') + 1
	}
	kept := b[start:]
	if _, err := f.WriteAt(kept, 0); err != nil {
		return err
	}
	return f.Truncate(int64(len(kept)))
}
