//go:build unix

package http_test

import (
	"syscall"
	"time"
)

// processCPU is this process's CPU time, user and system: in these
// benchmarks the client's and the in-process server's together.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
