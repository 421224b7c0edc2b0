//go:build unix

package oauth

import "syscall"

const (
	// nofollow makes opening a stored grant fail on a symbolic link.
	nofollow = syscall.O_NOFOLLOW
	// checkModes enables the group/other permission checks of FileStore;
	// Unix modes mean what they say here.
	checkModes = true
)
