//go:build !linux

package runtime

import (
	"errors"
	"syscall"
	"time"
)

// newServerAttr returns the server's process attributes: the leader of its
// own process group. There is no parent-death signal outside Linux.
func newServerAttr() *syscall.SysProcAttr { return newGroupAttr() }

// onServerThread runs fn; outside Linux, the thread does not matter.
func onServerThread(fn func()) (release func()) {
	fn()
	return func() {}
}

func enableSubreaper() error {
	return errors.New("Config.Subreaper needs Linux (prctl PR_SET_CHILD_SUBREAPER)")
}

// tree finds no descendants outside Linux: the process group is all there is.
type tree struct{}

func newTree(int, string) *tree     { return &tree{} }
func (*tree) setRoot(int)           {}
func (*tree) alive() bool           { return false }
func (*tree) signal(syscall.Signal) {}
func (*tree) kill()                 {}
func (*tree) reap(time.Duration)    {}
