package wasm

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
)

func budgetHost(t *testing.T, max int64) *Host {
	t.Helper()
	h, err := NewHost(HostConfig{CacheDir: filepath.Join(goGuestDir, "cache"), Logger: slog.New(slog.DiscardHandler), MaxTotalMemory: max})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

// wantWithinBudget checks the host's reserved memory against its budget.
func wantWithinBudget(t *testing.T, h *Host) {
	t.Helper()
	if used, max := h.MemoryReserved(); used > max || used < 0 {
		t.Fatalf("reserved %d bytes of a budget of %d", used, max)
	}
}

// HostConfig.MaxTotalMemory: with a budget of two instances, two busy
// instances spend it; a third call can make no instance, waits, and fails
// -32603 naming the budget when its context ends. Nothing is created past
// the budget, and the budget is whole again once the instances are gone.
func TestTotalMemoryBudgetBoundsInstancesAcrossModules(t *testing.T) {
	const limit = 4 << 20
	h := budgetHost(t, 2*limit)
	loop := load(t, h, ModuleConfig{Name: "loop", Wasm: wasmFile(t, "wat/hostile/loop.wasm"), MemoryLimit: limit, MaxInstances: 8, Timeout: 10 * time.Second})
	if used, _ := h.MemoryReserved(); used != limit {
		t.Fatalf("after Load: %d bytes reserved, want the first instance's %d", used, limit)
	}

	// Two calls that never end on their own hold both instances' memory.
	busy, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop.HandleRequest(busy, "elicitation/create", elicit("x"))
		}()
	}
	for loop.Stats().Alive-loop.Stats().Idle < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	wantWithinBudget(t, h)

	// A third call of the same module, and a call of another module: no
	// room, no idle instance to close.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := loop.HandleRequest(ctx, "elicitation/create", elicit("x"))
	wantHandlerError(t, err, jsonrpc.CodeInternalError, `wasm module "loop"`, "memory budget spent", "MaxTotalMemory", "8 MiB")
	ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if _, err := h.Load(ctx2, ModuleConfig{Name: "accept", Wasm: wasmFile(t, "wat/accept/accept.wasm"), MemoryLimit: limit}); err == nil {
		t.Fatal("a module loaded with the memory budget spent")
	}
	if st := loop.Stats(); st.Peak != 2 {
		t.Fatalf("stats %+v, want two instances at most", st)
	}
	wantWithinBudget(t, h)

	stop()
	wg.Wait()
	if used, _ := h.MemoryReserved(); used != 0 {
		t.Fatalf("%d bytes still reserved after the instances were closed", used)
	}
	// Now the other module loads, and the first serves again.
	accept := load(t, h, ModuleConfig{Name: "accept", Wasm: wasmFile(t, "wat/accept/accept.wasm"), MemoryLimit: limit})
	if _, err := accept.HandleRequest(context.Background(), "elicitation/create", elicit("x")); err != nil {
		t.Fatal(err)
	}
	wantWithinBudget(t, h)
}

// An idle instance of one module is closed to make room for an instance
// of another; a call waiting for memory takes an instance of its own
// module as soon as one goes idle. Nothing deadlocks.
func TestTotalMemoryBudgetRecyclesIdleInstances(t *testing.T) {
	const limit = 4 << 20
	h := budgetHost(t, limit)
	a := load(t, h, ModuleConfig{Name: "a", Wasm: wasmFile(t, "wat/accept/accept.wasm"), MemoryLimit: limit})
	b := load(t, h, ModuleConfig{Name: "b", Wasm: wasmFile(t, "wat/accept/accept.wasm"), MemoryLimit: limit})
	if st := a.Stats(); st.Evicted != 1 || st.Alive != 0 {
		t.Fatalf("a: %+v, want its idle instance closed for b's", st)
	}
	for i := range 3 {
		for _, m := range []*Module{a, b} {
			if _, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("x")); err != nil {
				t.Fatalf("round %d, %s: %v", i, m.Name(), err)
			}
			wantWithinBudget(t, h)
		}
	}
	// Eight concurrent calls of one module share the one instance the
	// budget allows, one after the other.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := a.HandleRequest(context.Background(), "elicitation/create", elicit("x"))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if st := a.Stats(); st.Peak != 1 {
		t.Fatalf("a: %+v, want one instance at most", st)
	}
	wantWithinBudget(t, h)
}

// A module whose memory limit alone is over the budget does not load.
func TestTotalMemoryBudgetRefusesAModuleOverIt(t *testing.T) {
	h := budgetHost(t, 4<<20)
	_, err := h.Load(context.Background(), ModuleConfig{Name: "accept", Wasm: wasmFile(t, "wat/accept/accept.wasm"), MemoryLimit: 8 << 20})
	wantLoadError(t, err, "memory limit of 8 MiB is over the host's total Wasm memory budget of 4 MiB (MaxTotalMemory)")
}
