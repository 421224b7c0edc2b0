//go:build !unix

package oauth

const (
	// nofollow is not available on this platform.
	nofollow = 0
	// checkModes is off: on this platform file modes do not describe who
	// can read a file (access is governed by ACLs, which FileStore leaves
	// as the user's profile directory sets them).
	checkModes = false
)
