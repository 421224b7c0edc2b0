package wasm

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// childHost is a host that compiles in a child process (this test binary,
// whose TestMain calls ServeCompile) into a cache directory of its own.
func childHost(t *testing.T, cc ChildCompile) (*Host, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cache")
	if cc.Executable == "" {
		cc.Executable = os.Args[0]
	}
	h, err := NewHost(HostConfig{CacheDir: dir, Logger: slog.New(slog.DiscardHandler), CompileIn: &cc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h, dir
}

// countFiles counts the files under dir.
func countFiles(t *testing.T, dir string) int {
	n := 0
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// A module compiled in a child process loads and answers; its code is in
// the cache the child wrote.
func TestChildCompileLoadsTheModule(t *testing.T) {
	h, dir := childHost(t, ChildCompile{})
	m := load(t, h, ModuleConfig{Name: "accept", Wasm: wasmFile(t, "wat/accept/accept.wasm")})
	if _, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("x")); err != nil {
		t.Fatal(err)
	}
	if n := countFiles(t, dir); n == 0 {
		t.Fatal("the compile child wrote nothing to the cache")
	}
}

// A compilation that takes more memory than its bound is killed, and the
// module does not load.
func TestChildCompileOverItsMemoryIsKilled(t *testing.T) {
	// No process compiles anything in 1 MiB: the child is killed at the
	// first look at its memory.
	h, _ := childHost(t, ChildCompile{MaxMemory: 1 << 20})
	// Trusted: not validated first, so the bound is met compiling.
	_, err := h.Load(context.Background(), ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest"), Trusted: true})
	if err == nil || !strings.Contains(err.Error(), "compiling took more than 1 MiB of memory (the compile child's bound)") {
		t.Fatalf("Load: %v, want the compile child's memory bound", err)
	}
}

// A compilation that takes longer than its bound is killed, and the module
// does not load.
func TestChildCompileOverItsTimeIsKilled(t *testing.T) {
	// The Go guest takes over a second to compile.
	h, _ := childHost(t, ChildCompile{Timeout: 20 * time.Millisecond})
	_, err := h.Load(context.Background(), ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest"), Trusted: true})
	if err == nil || !strings.Contains(err.Error(), "compiling took longer than 20ms (the compile child's bound)") {
		t.Fatalf("Load: %v, want the compile child's time bound", err)
	}
}

// What the child's compiler refuses is the Load error.
func TestChildCompileErrorIsTheLoadError(t *testing.T) {
	h, _ := childHost(t, ChildCompile{})
	// A trusted module is not validated before compiling: the child's
	// compiler is the first to read this one.
	bin := watUnchecked(t, handlerWAT(`(drop (global.get 7)) `+decline, ""))
	_, err := h.Load(context.Background(), ModuleConfig{Name: "bad", Wasm: bin, Trusted: true})
	if err == nil || !strings.Contains(err.Error(), "compile child:") || !strings.Contains(err.Error(), "global") {
		t.Fatalf("Load: %v, want the child's compile error", err)
	}
}

// With a compile child, an untrusted module is validated in it too: an
// invalid module is refused with the validator's reason, and a validation
// past the child's memory bound is killed.
func TestChildValidatesBeforeInstrumenting(t *testing.T) {
	h, _ := childHost(t, ChildCompile{})
	bad := watUnchecked(t, handlerWAT(`(loop $l (global.set 0 (i32.const 1000000)) (br $l)) `+decline, ""))
	_, err := h.Load(context.Background(), ModuleConfig{Name: "forge", Wasm: bad})
	if err == nil || !strings.Contains(err.Error(), `wasm module "forge": invalid module:`) || !strings.Contains(err.Error(), "global") {
		t.Fatalf("Load: %v, want the child's validator to refuse the module", err)
	}
	h, _ = childHost(t, ChildCompile{MaxMemory: 1 << 20})
	_, err = h.Load(context.Background(), ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest")})
	if err == nil || !strings.Contains(err.Error(), `wasm module "goguest": validating took more than 1 MiB of memory (the compile child's bound)`) {
		t.Fatalf("Load: %v, want the validation killed at the child's bound", err)
	}
}
