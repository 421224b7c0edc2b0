package wasm

import (
	"context"
	"encoding/json"
	"testing"
)

func TestWATAcceptAnswersElicitation(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "accept", Wasm: wasmFile(t, "wat/accept/accept.wasm"), Config: json.RawMessage(`{"confirm":true}`)})
	res, err := m.HandleRequest(context.Background(), "elicitation/create", json.RawMessage(`{"message":"ok?","requestedSchema":{"type":"object"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(res), `{"action":"accept","content":{"confirm":true}}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
