//go:build !linux

package wasm

import (
	"os"
	"syscall"
)

func childAttr() *syscall.SysProcAttr { return nil }

// watchMemory does not watch outside Linux: the child's garbage collector
// aims at the bound instead (ServeCompile).
func watchMemory(*os.Process, int64) func() bool { return func() bool { return false } }
