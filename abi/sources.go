//go:build !wasip1

package abi

import "embed"

// GuestSources holds the sources of the guest SDKs: the Go guest (this
// package's and abi/guest's .go files, tests included, to be left out by
// the reader) and the Rust crate (guest-rust). `snodo-run handlers new`
// writes them into a new project, so that it builds without the network.
// Guest modules (wasip1) do not carry it.
//
//go:embed *.go guest/*.go guest-rust/Cargo.toml guest-rust/src/*.rs
var GuestSources embed.FS
