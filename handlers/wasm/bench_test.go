package wasm

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/snodo/snodo/abi/guest"
)

// The elicitation every benchmark answers.
var benchParams = json.RawMessage(`{"message":"bench","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`)

// nativeEcho is the Go guest's "echo" answer as a native Go handler: the
// same types and the same encoding/json work, without Wasm.
func nativeEcho(_ context.Context, _ string, params json.RawMessage) (json.RawMessage, error) {
	var req guest.ElicitRequest
	if err := json.Unmarshal(params, &req); err != nil {
		return nil, err
	}
	return json.Marshal(guest.ElicitResult{Action: guest.Accept, Content: guest.Fields{guest.String("echo", req.Message)}})
}

func benchHost(b *testing.B) *Host {
	h, err := NewHost(HostConfig{CacheDir: filepath.Join(goGuestDir, "cache"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close(context.Background()) })
	return h
}

func benchCalls(b *testing.B, handle func(context.Context, string, json.RawMessage) (json.RawMessage, error), params json.RawMessage) {
	benchCallsCtx(b, context.Background(), handle, params)
}

func benchCallsCtx(b *testing.B, ctx context.Context, handle func(context.Context, string, json.RawMessage) (json.RawMessage, error), params json.RawMessage) {
	if _, err := handle(ctx, "elicitation/create", params); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := handle(ctx, "elicitation/create", params); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkElicitation: one elicitation answered by a native Go handler,
// by the Go guest and the Rust echo example (examples/handlers/rust/echo)
// doing the same work in Wasm, and by the WAT accept module
// (whose own work is nil, so its time is the host's per-call overhead),
// with the deadline mechanism (close-on-context-done + a per-call
// deadline) and without it (Trusted).
func BenchmarkElicitation(b *testing.B) {
	b.Run("native-go", func(b *testing.B) { benchCalls(b, nativeEcho, benchParams) })
	for _, mod := range []struct{ name, file string }{{"wasm-go", ""}, {"wasm-rust", "rust/echo/echo.wasm"}, {"wasm-wat", "wat/accept/accept.wasm"}} {
		for _, trusted := range []bool{false, true} {
			mode := "deadline"
			if trusted {
				mode = "trusted"
			}
			b.Run(mod.name+"/"+mode, func(b *testing.B) {
				wasm := goGuestOrFile(b, mod.file)
				m := load(b, benchHost(b), ModuleConfig{Name: mod.name, Wasm: wasm, Trusted: trusted})
				benchCalls(b, m.HandleRequest, benchParams)
			})
		}
		// A caller whose context can be cancelled, as the client's server
		// requests are: the host also watches that context during the call.
		b.Run(mod.name+"/deadline+cancellable-ctx", func(b *testing.B) {
			m := load(b, benchHost(b), ModuleConfig{Name: mod.name, Wasm: goGuestOrFile(b, mod.file)})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			benchCallsCtx(b, ctx, m.HandleRequest, benchParams)
		})
	}
}

// BenchmarkElicitationAfterSleep: one elicitation after the thread slept
// 50 µs, as a call in a round trip comes after the thread blocked on the
// pipe; a core that ran something else meanwhile no longer holds the
// guest's code and data in its caches. It reports the median and p90 of
// the calls alone (ns/op counts the sleep).
func BenchmarkElicitationAfterSleep(b *testing.B) {
	run := func(b *testing.B, handle func(context.Context, string, json.RawMessage) (json.RawMessage, error)) {
		ctx := context.Background()
		if _, err := handle(ctx, "elicitation/create", benchParams); err != nil {
			b.Fatal(err)
		}
		var took []time.Duration
		for b.Loop() {
			time.Sleep(50 * time.Microsecond)
			start := time.Now()
			if _, err := handle(ctx, "elicitation/create", benchParams); err != nil {
				b.Fatal(err)
			}
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "median-ns/call")
		b.ReportMetric(float64(took[len(took)*9/10].Nanoseconds()), "p90-ns/call")
	}
	b.Run("native-go", func(b *testing.B) { run(b, nativeEcho) })
	for _, mod := range []struct{ name, file string }{{"wasm-go", ""}, {"wasm-rust", "rust/echo/echo.wasm"}, {"wasm-wat", "wat/accept/accept.wasm"}} {
		b.Run(mod.name, func(b *testing.B) {
			m := load(b, benchHost(b), ModuleConfig{Name: mod.name, Wasm: goGuestOrFile(b, mod.file)})
			run(b, m.HandleRequest)
		})
	}
}

// BenchmarkGuestWork: guest code dominated by a loop of 100,000 iterations,
// with and without close-on-context-done: the cost of the deadline
// mechanism on guest code, which Trusted avoids.
func BenchmarkGuestWork(b *testing.B) {
	params, _ := json.Marshal(map[string]any{"message": "work:100000", "requestedSchema": map[string]any{"type": "object"}})
	for _, trusted := range []bool{false, true} {
		mode := "deadline"
		if trusted {
			mode = "trusted"
		}
		b.Run(mode, func(b *testing.B) {
			m := load(b, benchHost(b), ModuleConfig{Name: "goguest", Wasm: goGuest(b, "goguest"), Trusted: trusted})
			benchCalls(b, m.HandleRequest, params)
		})
	}
}

// BenchmarkInstance: a call on a pooled instance against a call on a fresh
// instance (instantiate, _initialize, call, close), for the Go guest and
// the WAT accept module.
func BenchmarkInstance(b *testing.B) {
	for _, mod := range []struct{ name, file string }{{"go", ""}, {"wat", "wat/accept/accept.wasm"}} {
		b.Run(mod.name+"/pooled", func(b *testing.B) {
			m := load(b, benchHost(b), ModuleConfig{Name: mod.name, Wasm: goGuestOrFile(b, mod.file)})
			benchCalls(b, m.HandleRequest, benchParams)
		})
		b.Run(mod.name+"/fresh", func(b *testing.B) {
			m := load(b, benchHost(b), ModuleConfig{Name: mod.name, Wasm: goGuestOrFile(b, mod.file)})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				inst, err := m.newInstance(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if _, f, _ := inst.run(ctx, entryHandle, "elicitation/create", benchParams, nil); f != nil {
					b.Fatal(f)
				}
				inst.close(ctx)
			}
		})
	}
}

// BenchmarkStart: what a snodo-run start costs for the Go guest — a new
// Host, Load (compile, check, first instance, manifest) and the first
// call — with an empty compilation cache (cold) and a filled one (warm).
func BenchmarkStart(b *testing.B) {
	wasm := goGuest(b, "goguest")
	start := func(b *testing.B, dir string) {
		ctx := context.Background()
		h, err := NewHost(HostConfig{CacheDir: dir, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		m, err := h.Load(ctx, ModuleConfig{Name: "goguest", Wasm: wasm})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.HandleRequest(ctx, "elicitation/create", benchParams); err != nil {
			b.Fatal(err)
		}
		h.Close(ctx)
	}
	b.Run("cold", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			dir := filepath.Join(b.TempDir(), fmt.Sprint(i))
			start(b, dir)
			b.StopTimer()
			os.RemoveAll(dir)
			b.StartTimer()
		}
	})
	b.Run("warm", func(b *testing.B) {
		dir := b.TempDir()
		start(b, dir)
		for b.Loop() {
			start(b, dir)
		}
	})
}

func goGuestOrFile(b *testing.B, file string) []byte {
	if file == "" {
		return goGuest(b, "goguest")
	}
	return wasmFile(b, file)
}
