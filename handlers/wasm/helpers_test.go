package wasm

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// examples is where scripts/build-examples.sh builds (and where the small
// non-Go modules are committed beside their source).
const examples = "../../examples/handlers"

// wasmFile returns the bytes of an example module, failing with what to
// run when it is missing.
func wasmFile(t testing.TB, rel string) []byte {
	t.Helper()
	path := filepath.Join(examples, rel)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("example module %s is missing (%v): run scripts/build-examples.sh (make examples) first", path, err)
	}
	return b
}

// newHost returns a host with a compilation cache in a temporary directory.
func newHost(t testing.TB) *Host {
	t.Helper()
	h, err := NewHost(HostConfig{CacheDir: filepath.Join(t.TempDir(), "cache")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

func load(t testing.TB, h *Host, cfg ModuleConfig) *Module {
	t.Helper()
	m, err := h.Load(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Load(%s): %v", cfg.Name, err)
	}
	return m
}
