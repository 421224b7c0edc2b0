package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// gcSettings returns the collector's percent and soft memory limit.
func gcSettings() (percent int, limit int64) {
	percent = debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

func TestMemoryDefaults(t *testing.T) {
	percent, limit := gcSettings()
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	memoryDefaults()
	if p, l := gcSettings(); p != defaultGOGC || l != defaultMemoryLimit {
		t.Errorf("without GOGC and GOMEMLIMIT: GOGC %d, limit %d; want %d, %d", p, l, defaultGOGC, defaultMemoryLimit)
	}

	// Set in the environment, they are Go's to apply: left as they are.
	t.Setenv("GOGC", "200")
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetGCPercent(200)
	debug.SetMemoryLimit(1 << 30)
	memoryDefaults()
	if p, l := gcSettings(); p != 200 || l != 1<<30 {
		t.Errorf("with GOGC=200 GOMEMLIMIT=1GiB: GOGC %d, limit %d", p, l)
	}
}
