package wasm

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
)

// hostileCall loads a hostile WAT module and makes one elicitation call,
// which must fail -32603 naming the module and the cause; the instance must
// be thrown away and the module must still serve the next call the same way.
func hostileCall(t *testing.T, cfg ModuleConfig, parts ...string) *jsonrpc.Error {
	t.Helper()
	h := newHost(t)
	m := load(t, h, cfg)
	var e *jsonrpc.Error
	for i := range 2 {
		_, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("x"))
		e = wantHandlerError(t, err, jsonrpc.CodeInternalError, append([]string{`wasm module "` + cfg.Name + `"`}, parts...)...)
		if st := m.Stats(); st.Discarded != int64(i+1) || st.Alive != 0 {
			t.Fatalf("after failed call %d: %+v, want the instance discarded", i+1, st)
		}
	}
	var data struct{ Module, Cause string }
	if err := json.Unmarshal(e.Data, &data); err != nil || data.Module != cfg.Name || data.Cause == "" {
		t.Fatalf("error data %s does not name the module and the cause", e.Data)
	}
	return e
}

func hostile(t *testing.T, name string) ModuleConfig {
	return ModuleConfig{Name: name, Wasm: wasmFile(t, "wat/hostile/"+name+".wasm")}
}

// ABI.md §6: "A failure of a call becomes a JSON-RPC error -32603 whose
// message names the module and the cause" — a trap.
func TestTrapIsInternalErrorNamingModuleAndCause(t *testing.T) {
	hostileCall(t, hostile(t, "trap"), "trap: wasm error: unreachable")
}

// ABI.md §6: "A guest that overruns it is stopped where it is."
func TestInfiniteLoopIsStoppedAtTheDeadline(t *testing.T) {
	cfg := hostile(t, "loop")
	cfg.Timeout = 200 * time.Millisecond
	hostileCall(t, cfg, "deadline of 200ms exceeded")
}

// ABI.md §5: a memory limit, default 128 MiB — out of memory.
func TestMemoryHogIsStoppedAtTheMemoryLimit(t *testing.T) {
	cfg := hostile(t, "memhog")
	cfg.MemoryLimit = 4 << 20
	hostileCall(t, cfg, "out of memory (memory at its limit of 4 MiB)")
}

// ABI.md §4: "Out-of-bounds memory ... fails the call."
func TestOutputPointerOutOfBoundsIsInvalidOutput(t *testing.T) {
	hostileCall(t, hostile(t, "out-of-bounds"), "set_output(4294967040, 4096) is outside the guest's memory")
}

// ABI.md §4: "more than the module's output limit (default 8 MiB) fails the call."
func TestHundredMiBOutputExceedsTheOutputLimit(t *testing.T) {
	hostileCall(t, hostile(t, "big-output"), "output of 100 MiB exceeds the limit of 8 MiB")
}

// ABI.md §6: proc_exit is a failure of the call.
func TestProcExitIsInternalError(t *testing.T) {
	hostileCall(t, hostile(t, "proc-exit"), "proc_exit(3)")
}

// ABI.md §3: "a missing or non-JSON output where one is required ... is
// invalid output".
func TestNonJSONOutputIsInvalidOutput(t *testing.T) {
	hostileCall(t, hostile(t, "bad-output"), "invalid output: result is not a JSON object")
}

// ABI.md §3: "Any other status ... is invalid output".
func TestUnknownStatusIsInvalidOutput(t *testing.T) {
	hostileCall(t, hostile(t, "bad-status"), "invalid output: snodo_handle returned status invalid status 7")
}

// ABI.md §6: a panic of a Go guest is -32603 naming its message.
func TestGoPanicIsInternalErrorWithPanicMessage(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest")})
	_, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("panic:at the disco"))
	e := wantHandlerError(t, err, jsonrpc.CodeInternalError, `wasm module "goguest"`, "panic: boom: at the disco")
	var data struct{ Stderr string }
	json.Unmarshal(e.Data, &data)
	if data.Stderr == "" {
		t.Fatalf("error data %s has no stderr", e.Data)
	}
	// The next call gets a fresh instance and succeeds.
	if _, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("hello")); err != nil {
		t.Fatal(err)
	}
	if st := m.Stats(); st.Discarded != 1 || st.Created != 2 {
		t.Fatalf("stats %+v, want one discarded and two created", st)
	}
}

func TestGoLoopIsStoppedAtTheDeadline(t *testing.T) {
	h := newHost(t)
	// The deadline also bounds instantiating the Go runtime (a few ms, but
	// far more under the race detector on a loaded machine): 2s leaves room
	// for that while the guest's loop never ends on its own.
	m := load(t, h, ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest"), Timeout: 2 * time.Second})
	_, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("loop"))
	wantHandlerError(t, err, jsonrpc.CodeInternalError, `wasm module "goguest"`, "deadline of 2s exceeded")
}

func TestGoOutOfMemoryIsInternalError(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest"), MemoryLimit: 32 << 20})
	_, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("oom"))
	wantHandlerError(t, err, jsonrpc.CodeInternalError, `wasm module "goguest"`, "out of memory")
}

func TestGoOsExitIsInternalError(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest")})
	_, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("exit"))
	wantHandlerError(t, err, jsonrpc.CodeInternalError, `wasm module "goguest"`, "proc_exit(4)")
}

// The caller's context ends the call too.
func TestCallerCancellationStopsTheCall(t *testing.T) {
	h := newHost(t)
	m := load(t, h, hostile(t, "loop"))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := m.HandleRequest(ctx, "elicitation/create", elicit("x"))
	wantHandlerError(t, err, jsonrpc.CodeInternalError, `wasm module "loop"`, "cancelled")
}

// ABI.md §6: the module's answer with ERROR is "answered to the server
// with its code, message and data".
func TestGuestErrorObjectIsAnsweredAsGiven(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest")})
	_, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("error:nope"))
	wantHandlerError(t, err, -32042, "refused: nope")
	_, err = m.HandleRequest(context.Background(), "elicitation/create", elicit("fail"))
	wantHandlerError(t, err, jsonrpc.CodeInternalError, "plain failure")
	if st := m.Stats(); st.Discarded != 0 {
		t.Fatalf("an ERROR answer discarded an instance: %+v", st)
	}
}

func TestMethodNotInManifestIsMethodNotFound(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "accept", Wasm: wasmFile(t, "wat/accept/accept.wasm")})
	_, err := m.HandleRequest(context.Background(), "sampling/createMessage", json.RawMessage(`{}`))
	wantHandlerError(t, err, jsonrpc.CodeMethodNotFound, `wasm module "accept" does not answer sampling/createMessage`)
}

// ABI.md §6: each call runs under a deadline "never longer than the
// caller's context".
func TestCallerDeadlineStopsTheCallFirst(t *testing.T) {
	h := newHost(t)
	m := load(t, h, hostile(t, "loop"))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := m.HandleRequest(ctx, "elicitation/create", elicit("x"))
	wantHandlerError(t, err, jsonrpc.CodeInternalError, `wasm module "loop"`, "the caller's deadline passed during the call")
	if st := m.Stats(); st.Discarded != 1 {
		t.Fatalf("stats %+v, want the stopped instance discarded", st)
	}
}

// AssemblyScript's abort (a failed assertion, an uncaught error) is a
// failure of the call; the host provides env.abort as wazero's
// imports/assemblyscript does.
func TestAssemblyScriptAbortIsInternalError(t *testing.T) {
	e := hostileCall(t, hostile(t, "abort"), "proc_exit(255)", "boom")
	t.Log(e.Message)
}
