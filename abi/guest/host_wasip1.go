//go:build wasip1

package guest

import (
	"runtime"
	"strings"
	"unsafe" // also for go:linkname

	"github.com/snodo/snodo/abi"
)

//go:wasmimport snodo set_output
func setOutput(ptr, n uint32)

//go:wasmimport snodo log
func hostLogRaw(level int32, ptr, n uint32)

//go:wasmimport snodo config
func hostConfigRaw(ptr, capacity uint32) uint32

func addr(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

func output(b []byte) {
	setOutput(addr(b), uint32(len(b)))
}

func hostLog(level abi.Level, msg string) {
	b := []byte(trimmed(msg, abi.MaxLogBytes))
	hostLogRaw(int32(level), addr(b), uint32(len(b)))
}

// trimmed is at most n bytes of s, cut on a UTF-8 boundary.
func trimmed(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

func hostConfig() []byte {
	n := hostConfigRaw(0, 0)
	b := make([]byte, n)
	if n > 0 {
		hostConfigRaw(addr(b), n)
	}
	return b
}

// input is the buffer snodo_alloc hands out; the host fills it before each
// call. One call at a time per instance, so one buffer suffices.
var input = make([]byte, 0, 4096)

//go:wasmexport snodo_alloc
func snodoAlloc(size uint32) uint32 {
	if cap(input) < int(size) || cap(input) == 0 {
		input = make([]byte, 0, max(int(size), 1))
	}
	input = input[:size]
	return addr(input[:cap(input)])
}

//go:wasmexport snodo_describe
func snodoDescribe() uint32 {
	output(manifest())
	return uint32(abi.StatusOK)
}

// outBuf is where calls write their output, kept from call to call: the
// host copies the output when set_output is called.
var outBuf = make([]byte, 0, 1024)

func run(export string, n uint32) uint32 {
	st, out := dispatch(export, input[:n], outBuf)
	if out != nil {
		output(out)
		if cap(out) <= 64<<10 {
			outBuf = out[:0]
		}
	}
	collect()
	return uint32(st)
}

// runtimeWriteBarrier is the Go runtime's write-barrier flag, which is set
// while a garbage collection is marking. (The runtime keeps this variable
// reachable by linkname for existing users; see go.dev/issue/67401.)
//
//go:linkname runtimeWriteBarrier runtime.writeBarrier
var runtimeWriteBarrier struct {
	enabled bool
	pad     [3]byte
	alignme uint64
}

// collect lets the runtime's own goroutines run when a collection is in
// progress. In a Wasm module the runtime has one thread, and once an
// exported function returns the host gets control back: nothing else is
// scheduled unless the call yields. The collector's background worker is
// one of those goroutines, and without it a cycle may never finish, after
// which nothing is freed: an instance that allocated 256 KiB per call
// reached a 32 MiB limit after about 1,800 calls, and one answering small
// elicitations started growing after about 176,000. Yielding only while
// marking keeps
// the scheduler's cost (about 2 µs under wazero) off the other calls.
func collect() {
	if runtimeWriteBarrier.enabled {
		runtime.Gosched()
	}
}

//go:wasmexport snodo_handle
func snodoHandle(_, n uint32) uint32 { return run(abi.ExportHandle, n) }

//go:wasmexport snodo_progress
func snodoProgress(_, n uint32) uint32 { return run(abi.ExportProgress, n) }

//go:wasmexport snodo_event
func snodoEvent(_, n uint32) uint32 { return run(abi.ExportEvent, n) }

//go:wasmexport snodo_intercept_request
func snodoInterceptRequest(_, n uint32) uint32 { return run(abi.ExportInterceptRequest, n) }

//go:wasmexport snodo_intercept_result
func snodoInterceptResult(_, n uint32) uint32 { return run(abi.ExportInterceptResult, n) }
