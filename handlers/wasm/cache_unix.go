//go:build unix

package wasm

import (
	"io/fs"
	"os"
	"syscall"
)

const (
	// oNoFollow makes opening a cache entry or the key file fail on a
	// symbolic link.
	oNoFollow = syscall.O_NOFOLLOW
	// checkOwners enables the owner and permission checks of the
	// compilation cache; Unix owners and modes mean what they say here.
	checkOwners = true
)

// fileOwner returns the uid that owns fi.
func fileOwner(fi fs.FileInfo) (uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// effectiveUID is the user the cache must belong to.
func effectiveUID() int { return os.Geteuid() }
