package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/snodo/snodo/internal/gateway/lbtest"
)

// The replicas are put behind the shipped haproxy config by lbtest, the
// package the gateway's own load-balancer tests use, so the benchmark
// measures what operators deploy. lbtest reports through a testing.TB;
// runTB is the part of one that lbtest calls, for a command.
type runTB struct {
	testing.TB // nil: a method lbtest does not call panics
	cleanups   []func()
	failed     bool
}

type tbFatal struct{ msg string }

func (t *runTB) Helper()                           {}
func (t *runTB) Failed() bool                      { return t.failed }
func (t *runTB) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }
func (t *runTB) Logf(format string, args ...any)   { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (t *runTB) Log(args ...any)                   { fmt.Fprintln(os.Stderr, args...) }
func (t *runTB) Fatal(args ...any)                 { t.failed = true; panic(tbFatal{fmt.Sprint(args...)}) }
func (t *runTB) Fatalf(format string, args ...any) { t.Fatal(fmt.Sprintf(format, args...)) }

func (t *runTB) TempDir() string {
	dir, err := os.MkdirTemp("", "gwbench-haproxy-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (t *runTB) stop() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	t.cleanups = nil
}

// startHAProxy starts haproxy with the shipped config in front of the
// gateways, once each has passed a health check; stop stops it.
func startHAProxy(backends ...*gateway) (url string, stop func(), err error) {
	t := &runTB{}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(tbFatal)
			if !ok {
				panic(r)
			}
			t.stop()
			err = fmt.Errorf("haproxy: %s", f.msg)
		}
	}()
	addrs := make([]string, len(backends))
	for i, g := range backends {
		addrs[i] = g.Addr
	}
	h := lbtest.Start(t, addrs)
	return h.URL + "/mcp", t.stop, nil
}
