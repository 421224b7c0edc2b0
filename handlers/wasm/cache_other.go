//go:build !unix

package wasm

import "io/fs"

const (
	// oNoFollow is not available on this platform.
	oNoFollow = 0
	// checkOwners is off: on this platform file modes do not say who can
	// change a file (access is governed by ACLs); the MAC of each entry
	// is what protects the compilation cache.
	checkOwners = false
)

func fileOwner(fs.FileInfo) (uid int, ok bool) { return 0, false }

func effectiveUID() int { return -1 }
