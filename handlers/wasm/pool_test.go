package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
)

// Issue: "10,000 elicitations through a Go-compiled module under the
// default limit of 16: at most 16 instances alive, every request answered
// exactly once, a trap in the middle of it answered -32603 while the rest
// go on."
func TestTenThousandElicitationsUnderTheDefaultLimit(t *testing.T) {
	const n, workers, trapAt = 10000, 64, 5000
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest")})

	answers := make([]atomic.Int32, n)
	var next atomic.Int64
	var wrong atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				msg := fmt.Sprintf("request %d", i)
				if i == trapAt {
					msg = "panic:in the middle"
				}
				res, err := m.HandleRequest(context.Background(), "elicitation/create", elicit(msg))
				answers[i].Add(1)
				if i == trapAt {
					var e *jsonrpc.Error
					if err == nil || !errorsAs(err, &e) || e.Code != jsonrpc.CodeInternalError || !bytes.Contains([]byte(e.Message), []byte("panic: boom: in the middle")) {
						t.Errorf("request %d (the trap): got %s, %v; want -32603 naming the panic", i, res, err)
					}
					continue
				}
				want := fmt.Sprintf(`{"action":"accept","content":{"echo":"request %d"}}`, i)
				if err != nil || string(res) != want {
					wrong.Add(1)
					t.Errorf("request %d: got %s, %v", i, res, err)
				}
			}
		})
	}
	wg.Wait()
	for i := range answers {
		if c := answers[i].Load(); c != 1 {
			t.Fatalf("request %d answered %d times", i, c)
		}
	}
	st := m.Stats()
	if st.Peak > 16 {
		t.Fatalf("%d instances alive at once, limit 16", st.Peak)
	}
	if st.Discarded != 1 {
		t.Fatalf("stats %+v: want exactly the trapped instance discarded", st)
	}
	t.Logf("pool: %+v", st)
}

// ABI.md §6: "a call waits for a free instance" — never more instances
// than the limit.
func TestCallsWaitForAFreeInstanceAtTheLimit(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "loop", Wasm: wasmFile(t, "wat/hostile/loop.wasm"), MaxInstances: 2, Timeout: 200 * time.Millisecond})
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			_, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("x"))
			wantHandlerError(t, err, jsonrpc.CodeInternalError, "deadline of 200ms exceeded")
		})
	}
	wg.Wait()
	if st := m.Stats(); st.Peak > 2 || st.Discarded != 6 {
		t.Fatalf("stats %+v: want at most 2 alive and 6 discarded", st)
	}
}

// A call waiting for an instance gives up when its context ends.
func TestWaitingForAnInstanceEndsWithTheContext(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "loop", Wasm: wasmFile(t, "wat/hostile/loop.wasm"), MaxInstances: 1, Timeout: time.Second})
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.HandleRequest(context.Background(), "elicitation/create", elicit("x"))
	}()
	for m.Stats().Idle != 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := m.HandleRequest(ctx, "elicitation/create", elicit("x"))
	wantHandlerError(t, err, jsonrpc.CodeInternalError, "no instance", "deadline exceeded")
	<-done
}

// Note in doc.go: "The Host keeps one runtime per distinct (memory limit,
// trusted) pair ... so each module gets exactly its own limit."
func TestMemoryLimitIsPerModule(t *testing.T) {
	h := newHost(t)
	small := load(t, h, ModuleConfig{Name: "small", Wasm: wasmFile(t, "wat/hostile/memhog.wasm"), MemoryLimit: 2 << 20})
	large := load(t, h, ModuleConfig{Name: "large", Wasm: wasmFile(t, "wat/hostile/memhog.wasm"), MemoryLimit: 6 << 20})
	_, err := small.HandleRequest(context.Background(), "elicitation/create", elicit("x"))
	wantHandlerError(t, err, jsonrpc.CodeInternalError, `"small"`, "limit of 2 MiB")
	_, err = large.HandleRequest(context.Background(), "elicitation/create", elicit("x"))
	wantHandlerError(t, err, jsonrpc.CodeInternalError, `"large"`, "limit of 6 MiB")
	if n := len(h.runtimes); n != 2 {
		t.Fatalf("%d runtimes, want one per memory limit", n)
	}
}

// ModuleConfig.Trusted: runs without close-on-context-done, same answers.
func TestTrustedModuleAnswersTheSame(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest"), Trusted: true})
	c, err := ask(t, m, "hello")
	if err != nil || c["echo"] != "hello" {
		t.Fatalf("trusted: %v %v", c, err)
	}
	_, err = ask(t, m, "panic:trusted")
	wantHandlerError(t, err, jsonrpc.CodeInternalError, "panic: boom: trusted")
}

// ABI.md §6: "Modules are compiled once and compiled code is cached on
// disk, so a second start of the same module skips compilation."
func TestCompilationCacheIsWrittenToDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	for range 2 {
		h, err := NewHost(HostConfig{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		m, err := h.Load(context.Background(), ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ask(t, m, "hello"); err != nil {
			t.Fatal(err)
		}
		h.Close(context.Background())
	}
	var files int
	filepath.Walk(dir, func(_ string, info os.FileInfo, _ error) error {
		if info != nil && !info.IsDir() {
			files++
		}
		return nil
	})
	if files == 0 {
		t.Fatalf("no compiled code cached in %s", dir)
	}
}

// ABI.md §4: log "logs a UTF-8 message ... Tagged with the module's name."
func TestLogReachesTheHostLoggerWithTheModuleName(t *testing.T) {
	var buf syncBuffer
	h, err := NewHost(HostConfig{CacheDir: filepath.Join(goGuestDir, "cache"), Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	m := load(t, h, ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest")})
	if _, err := ask(t, m, "log:hello host"); err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Level, Msg string
		Module     string `json:"wasm_module"`
	}
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("log %q: %v", buf.Bytes(), err)
	}
	if rec.Level != "INFO" || rec.Msg != "logged: hello host" || rec.Module != "goguest" {
		t.Fatalf("log record %+v", rec)
	}
}

func TestClosedModuleAnswersInternalError(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "accept", Wasm: wasmFile(t, "wat/accept/accept.wasm")})
	h.Close(context.Background())
	_, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("x"))
	wantHandlerError(t, err, jsonrpc.CodeInternalError, `wasm module "accept"`, "closed")
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// ABI.md §4: "At most 100 messages per call ...; the host drops the rest
// and says how many it dropped."
func TestLogFloodIsCutPerCall(t *testing.T) {
	var buf syncBuffer
	h, err := NewHost(HostConfig{CacheDir: filepath.Join(goGuestDir, "cache"), Logger: newJSONLogger(&buf)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	m := load(t, h, ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest")})
	if _, err := ask(t, m, "logflood"); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Count(buf.Bytes(), []byte("\n"))
	if lines != 101 || !contains(buf.Bytes(), "dropped 900 log messages over the limit of 100 per call") {
		t.Fatalf("%d log lines, want 100 and one saying 900 were dropped", lines)
	}
}

// ABI.md §6: "Instances are reused until one fails. A successful call ...
// returns the instance to the pool with its memory as the call left it.
// An instance whose call failed ... is closed and never used again; the
// next call gets a fresh instance (a fresh _initialize)."
func TestInstancesAreReusedUntilOneFails(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest"), MaxInstances: 1})
	calls := func() float64 {
		c, err := ask(t, m, "calls")
		if err != nil {
			t.Fatal(err)
		}
		return c["calls"].(float64)
	}
	if a, b := calls(), calls(); a != 1 || b != 2 {
		t.Fatalf("calls %v then %v: the instance was not reused", a, b)
	}
	if _, err := ask(t, m, "error:x"); err == nil {
		t.Fatal("want the guest's error")
	}
	if c := calls(); c != 4 {
		t.Fatalf("after an ERROR answer the count is %v, want 4 (same instance)", c)
	}
	if _, err := ask(t, m, "panic:x"); err == nil {
		t.Fatal("want the panic's error")
	}
	if c := calls(); c != 1 {
		t.Fatalf("after a panic the count is %v, want 1 (a fresh instance)", c)
	}
}
