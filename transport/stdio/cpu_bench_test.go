package stdio_test

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// cpuMeter measures the CPU time (user + system) of this process and of
// the server process over a benchmark, reported per operation: unlike wall
// time, it hardly moves when other work shares the machine.
type cpuMeter struct {
	serverPid      int
	self0, server0 time.Duration
	serverValid    bool
}

func startCPU(b *testing.B, serverPid int) *cpuMeter {
	m := &cpuMeter{serverPid: serverPid}
	m.self0 = selfCPU()
	m.server0, m.serverValid = procCPU(serverPid)
	return m
}

func (m *cpuMeter) report(b *testing.B) {
	self := selfCPU() - m.self0
	b.ReportMetric(float64(self.Nanoseconds())/float64(b.N), "client-cpu-ns/op")
	if server, ok := procCPU(m.serverPid); ok && m.serverValid {
		b.ReportMetric(float64((server-m.server0).Nanoseconds())/float64(b.N), "server-cpu-ns/op")
	}
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU reads utime + stime of a running process from /proc (in clock
// ticks of 10 ms).
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// Fields after the command name, which ends with the last ')'.
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+2:])
	if len(f) < 13 {
		return 0, false
	}
	utime, _ := strconv.ParseInt(string(f[11]), 10, 64)
	stime, _ := strconv.ParseInt(string(f[12]), 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}
