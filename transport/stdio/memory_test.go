package stdio_test

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/snodo/snodo/transport"
)

// An idle connection's goroutines keep small stacks: the writer's batch
// buffer is on the heap, made when first needed, not in its frame (where
// 64 KiB grew the stack of every connection to 128 KiB).
func TestIdleConnectionStacksSmall(t *testing.T) {
	const n = 16
	stack := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.StackInuse
	}
	before := stack()
	for range n {
		c := connect(t, config("script"))
		call(t, c, "echo", json.RawMessage(`{"x":1}`), transport.RequestOptions{})
	}
	after := stack()
	per := (int64(after) - int64(before)) / n
	t.Logf("stack per idle connection: %d bytes", per)
	if per > 64<<10 {
		t.Errorf("an idle connection holds %d bytes of goroutine stacks, want at most 64 KiB", per)
	}
}
