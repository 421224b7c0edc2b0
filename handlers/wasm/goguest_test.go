package wasm

import (
	"context"
	"encoding/json"
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
