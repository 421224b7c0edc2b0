package wasm

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

func elicit(message string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"message": message, "requestedSchema": map[string]any{"type": "object"}})
	return b
}

func TestGoGuestAnswersElicitation(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest")})
	res, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(res), `{"action":"accept","content":{"echo":"hello"}}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// TestGoGuestCollectsGarbageAcrossCalls: a Go guest's collector finishes
// its cycles although nothing runs in the module between calls. Each call
// allocates 256 KiB and drops it (500 MiB over the test) under a 32 MiB
// memory limit; one instance answers them all. Before the guest SDK let the
// runtime's goroutines run while a collection was marking, a cycle started
// and never finished, nothing was freed from then on, and the instance ran
// out of memory after about 1,800 calls of this size.
func TestGoGuestCollectsGarbageAcrossCalls(t *testing.T) {
	m := load(t, newHost(t), ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest"), MemoryLimit: 32 << 20})
	ctx := context.Background()
	const n = 2000
	for i := range n {
		if _, err := m.HandleRequest(ctx, "elicitation/create", elicit("garbage:262144")); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	res, err := m.HandleRequest(ctx, "elicitation/create", elicit("calls"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(res), fmt.Sprintf(`{"action":"accept","content":{"calls":%d}}`, n+1); got != want {
		t.Fatalf("got %s, want %s: the calls were not all answered by one instance", got, want)
	}
}
