package wasm

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// childAttr makes a compile child die with the thread that started it, so
// that no child outlives a host killed while compiling.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// watchMemory kills p once its peak resident memory passes max, checking
// every 5 ms. The function it returns stops the watch, after p was waited
// for, and reports whether it killed p. The watch reads p's status through
// its /proc directory opened at the start, which names p alone: once p is
// reaped the reads fail, whatever process reuses its PID.
func watchMemory(p *os.Process, max int64) func() bool {
	root, err := os.OpenRoot(fmt.Sprintf("/proc/%d", p.Pid))
	if err != nil {
		return func() bool { return false }
	}
	done := make(chan struct{})
	var killed atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		defer root.Close()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			status, err := root.ReadFile("status")
			if err != nil {
				return
			}
			if peak, ok := statusKiB(status, "VmHWM:"); ok && peak*1024 > max {
				killed.Store(true)
				p.Kill()
				return
			}
		}
	})
	return func() bool {
		close(done)
		wg.Wait()
		return killed.Load()
	}
}

// statusKiB reads the value in kB of field in a /proc/PID/status file.
func statusKiB(status []byte, field string) (int64, bool) {
	i := bytes.Index(status, []byte("\n"+field))
	if i < 0 {
		return 0, false
	}
	rest := status[i+1+len(field):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	rest = bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))
	v, err := strconv.ParseInt(string(rest), 10, 64)
	return v, err == nil
}
