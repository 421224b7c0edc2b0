package wasm

import (
	"context"
	"strings"
	"testing"
)

func loadErr(t *testing.T, cfg ModuleConfig) string {
	t.Helper()
	h := newHost(t)
	m, err := h.Load(context.Background(), cfg)
	if err == nil {
		m.Close(context.Background())
		t.Fatalf("Load(%s) succeeded, want an error", cfg.Name)
	}
	return err.Error()
}

func wantAll(t *testing.T, msg string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("message %q does not contain %q", msg, p)
		}
	}
}

// ABI.md §1: "The host checks all of this when it loads a module, before
// it serves anything, and a refusal says exactly what is missing or wrong."
func TestLoadRefusesMissingExportsSayingWhichAndWhy(t *testing.T) {
	msg := loadErr(t, ModuleConfig{Name: "missing-exports", Wasm: wasmFile(t, "wat/hostile/missing-exports.wasm")})
	wantAll(t, msg, `wasm module "missing-exports"`, "does not follow the Snodo ABI",
		`missing export "snodo_describe" () -> i32`,
		`missing export "snodo_alloc" (i32) -> i32`,
		`export "snodo_handle" has type (i32) -> i32, want (i32, i32) -> i32`)
}

// ABI.md §1: "A module that exports _start without _initialize is a
// command: the host refuses it."
func TestLoadRefusesWASICommand(t *testing.T) {
	msg := loadErr(t, ModuleConfig{Name: "command", Wasm: wasmFile(t, "wat/hostile/command.wasm")})
	wantAll(t, msg, "WASI command", "-buildmode=c-shared", "-mexec-model=reactor")
}

// ABI.md §4: "Nothing else is imported from the host."
func TestLoadRefusesUnknownAndMistypedImports(t *testing.T) {
	msg := loadErr(t, ModuleConfig{Name: "bad-imports", Wasm: wasmFile(t, "wat/hostile/bad-imports.wasm")})
	wantAll(t, msg, `imports network.connect from module "network", which the host does not provide`,
		"imports snodo.set_output with type (i32) -> (), want (i32, i32) -> ()")
}

// ABI.md §2: "any other name is refused at load time."
func TestLoadRefusesUnknownMethodInManifest(t *testing.T) {
	msg := loadErr(t, ModuleConfig{Name: "bad-manifest", Wasm: wasmFile(t, "wat/hostile/bad-manifest.wasm")})
	wantAll(t, msg, `manifest lists unknown method "tools/call"`)
}

// ABI.md §1: snodo_progress is required "if the manifest says "progress": true".
func TestLoadRefusesManifestWithoutItsExport(t *testing.T) {
	msg := loadErr(t, ModuleConfig{Name: "mwe", Wasm: wasmFile(t, "wat/hostile/manifest-without-export.wasm")})
	wantAll(t, msg, `manifest says "progress": true but the module does not export "snodo_progress"`)
}

// ABI.md §5: "the host refuses to load a module that does not match."
func TestSHA256PinRefusesMismatch(t *testing.T) {
	wasm := wasmFile(t, "wat/accept/accept.wasm")
	msg := loadErr(t, ModuleConfig{Name: "accept", Wasm: wasm, SHA256: strings.Repeat("0", 64)})
	wantAll(t, msg, `wasm module "accept": sha256 mismatch: pinned 000`, "refusing to load")
}

func TestSHA256PinLoadsMatch(t *testing.T) {
	wasm := wasmFile(t, "wat/accept/accept.wasm")
	h := newHost(t)
	load(t, h, ModuleConfig{Name: "accept", Wasm: wasm, SHA256: strings.ToUpper(sha256Hex(wasm))})
}

func TestLoadRefusesInvalidConfigJSON(t *testing.T) {
	msg := loadErr(t, ModuleConfig{Name: "accept", Wasm: wasmFile(t, "wat/accept/accept.wasm"), Config: []byte("{nope")})
	wantAll(t, msg, "Config is not valid JSON")
}
