//go:build unix

package oauth

import "syscall"

// nofollow makes opening a stored grant fail on a symbolic link.
const nofollow = syscall.O_NOFOLLOW
