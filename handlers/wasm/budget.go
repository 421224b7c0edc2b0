package wasm

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// DefaultMaxTotalMemory is the default of HostConfig.MaxTotalMemory: the
// default instance limit times the default memory limit, 16 × 128 MiB.
const DefaultMaxTotalMemory = 2 << 30

// memBudget bounds the Wasm linear memory of all the instances of all the
// modules of a Host. Each instance reserves its module's memory limit —
// the most its memory can ever grow to, memory.grow included, since
// wazero caps each instance at that many pages — when it is created, and
// gives it back when it is closed. So the sum of the instances' memories
// never exceeds the budget, whatever they do.
type memBudget struct {
	max int64

	mu       sync.Mutex
	reserved int64
	// changed is closed, and replaced, when memory is given back or an
	// instance goes idle: what a waiting reservation waits for.
	changed chan struct{}
}

func (b *memBudget) init(max int64) {
	b.max = max
	b.changed = make(chan struct{})
}

// tryReserve takes n bytes if they are free, and returns the channel that
// says when to try again if not.
func (b *memBudget) tryReserve(n int64) (bool, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.reserved+n <= b.max {
		b.reserved += n
		return true, nil
	}
	return false, b.changed
}

func (b *memBudget) release(n int64) {
	b.mu.Lock()
	b.reserved -= n
	b.mu.Unlock()
	b.notify()
}

// notify wakes the reservations waiting.
func (b *memBudget) notify() {
	b.mu.Lock()
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

func (b *memBudget) used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reserved
}

// reserve takes n bytes of the host's budget for a new instance of m.
// When the budget is spent it closes idle instances, of any module, to
// free some; failing that it waits — for a busy instance to be closed or
// to go idle — until ctx ends or m's call timeout passes, and then fails
// with an error that says so. idle, when not nil, is asked after each
// wake-up whether m's own pool now has an idle instance; if so reserve
// returns false and no error, and the caller takes that one instead.
func (h *Host) reserve(ctx context.Context, m *Module, idle func() bool) (bool, error) {
	n := m.memoryLimit
	if n > h.budget.max {
		return false, fmt.Errorf("memory limit of %s is over the host's total Wasm memory budget of %s (MaxTotalMemory)",
			sizeString(n), sizeString(h.budget.max))
	}
	var timeout <-chan time.Time
	for {
		ok, changed := h.budget.tryReserve(n)
		if ok {
			return true, nil
		}
		if h.evictIdle() {
			continue
		}
		if timeout == nil {
			t := time.NewTimer(m.timeout)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-changed:
			if idle != nil && idle() {
				return false, nil
			}
		case <-ctx.Done():
			return false, h.budgetError(n, "before the caller's context ended")
		case <-m.closing.Done():
			return false, errClosed
		case <-timeout:
			return false, h.budgetError(n, fmt.Sprintf("within %s", m.timeout))
		}
	}
}

func (h *Host) budgetError(n int64, when string) error {
	return fmt.Errorf("memory budget spent: the host's total Wasm memory budget (MaxTotalMemory) of %s is reserved by busy instances (%s), and none freed %s for a new instance of %s",
		sizeString(h.budget.max), sizeString(h.budget.used()), sizeString(n), when)
}

// evictIdle closes one idle instance, of any module, and reports whether
// it found one.
func (h *Host) evictIdle() bool {
	h.mu.Lock()
	mods := append([]*Module(nil), h.modules...)
	h.mu.Unlock()
	for _, m := range mods {
		if inst := m.pool.takeIdle(); inst != nil {
			inst.close(context.Background())
			return true
		}
	}
	return false
}

// MemoryReserved returns the Wasm linear memory reserved by the host's
// instances alive now, and the host's budget (HostConfig.MaxTotalMemory).
func (h *Host) MemoryReserved() (reserved, budget int64) {
	return h.budget.used(), h.budget.max
}
