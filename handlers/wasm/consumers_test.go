package wasm

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/snodo/snodo/jsonrpc"
)

func progressParams(progress, total float64, message string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"progressToken": "t1", "progress": progress, "total": total, "message": message})
	return b
}

// Issue item 4: "a module receives every progress notification of a
// request made with progress; answering "cancel", or failing, cancels the
// request on the server". ABI.md §3.2.
func TestProgressConsumerStopCancelsTheRequest(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest")})
	onProgress := m.ProgressFunc(context.Background())
	if err := onProgress(progressParams(1, 10, "")); err != nil {
		t.Fatalf("progress 1/10: %v, want the request to go on", err)
	}
	err := onProgress(progressParams(5, 10, ""))
	wantHandlerError(t, err, jsonrpc.CodeInternalError, `wasm module "goguest" cancelled the request`)
}

// ABI.md §3.2: "ERROR, or a crash, also cancels it — the rule for a
// progress function that raises."
func TestProgressConsumerErrorOrCrashCancelsTheRequest(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest")})
	onProgress := m.ProgressFunc(context.Background())
	wantHandlerError(t, onProgress(progressParams(1, 10, "error")), -32050, "progress refused")
	wantHandlerError(t, onProgress(progressParams(1, 10, "panic")), jsonrpc.CodeInternalError, `wasm module "goguest"`, "panic: progress boom")
	if err := onProgress(progressParams(1, 10, "")); err != nil {
		t.Fatalf("after a crash the consumer must go on with a fresh instance: %v", err)
	}
}

// Issue item 5: "a module receives each event of a subscription and can
// end it." The WAT example ends it after the configured number of events.
func TestSubscriptionConsumerEndsTheSubscription(t *testing.T) {
	var buf syncBuffer
	h, err := NewHost(HostConfig{NoDiskCache: true, Logger: newJSONLogger(&buf)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	m := load(t, h, ModuleConfig{Name: "stop-after", Wasm: wasmFile(t, "wat/stop-after/stop-after.wasm"), Config: json.RawMessage(`3`)})
	for i := 1; i <= 3; i++ {
		stop, err := m.ConsumeEvent(context.Background(), "notifications/resources/updated", json.RawMessage(fmt.Sprintf(`{"uri":"file:///%d"}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		if stop != (i == 3) {
			t.Fatalf("event %d: stop %v", i, stop)
		}
	}
	if want := `{\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"file:///2\"}}`; !contains(buf.Bytes(), want) {
		t.Fatalf("the consumer did not log the event: %s", buf.Bytes())
	}
}

// ABI.md §3.3: "STOP ends it cleanly; ERROR, or a crash, ends it with that
// error."
func TestSubscriptionConsumerErrorEndsWithError(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest")})
	if stop, err := m.ConsumeEvent(context.Background(), "notifications/message", json.RawMessage(`{}`)); stop || err != nil {
		t.Fatalf("ordinary event: %v %v", stop, err)
	}
	if stop, err := m.ConsumeEvent(context.Background(), "stop", nil); !stop || err != nil {
		t.Fatalf("stop event: %v %v", stop, err)
	}
	stop, err := m.ConsumeEvent(context.Background(), "error", nil)
	if !stop {
		t.Fatal("an ERROR answer must end the subscription")
	}
	wantHandlerError(t, err, jsonrpc.CodeInternalError, "event refused")
}

func TestModuleWithoutEventsRefusesEvents(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "accept", Wasm: wasmFile(t, "wat/accept/accept.wasm")})
	stop, err := m.ConsumeEvent(context.Background(), "x", nil)
	if !stop {
		t.Fatal("want stop")
	}
	wantHandlerError(t, err, jsonrpc.CodeMethodNotFound, "does not consume subscription events")
}
