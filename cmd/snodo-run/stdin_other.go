//go:build !linux

package main

import "os"

// pollableStdin returns f: only Linux's /proc reopens a pipe as a new
// open file description (see stdin_linux.go).
func pollableStdin(f *os.File) (*os.File, func()) { return f, func() {} }
