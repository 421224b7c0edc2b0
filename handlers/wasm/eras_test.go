package wasm_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	snodo "github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/handlers/wasm"
	"github.com/snodo/snodo/transport/stdio"
)

// Issue, done when: "a handler written once answers the same elicitation
// from a legacy and from a modern server in tests." The Go elicit-policy
// example, built from source, answers the official Go SDK server's "ask"
// tool: an elicitation/create request in the legacy era, an
// input_required round in 2026-07-28. So does the Rust one
// (examples/handlers/rust/elicit-policy).
func TestSameWasmHandlerAnswersLegacyAndModernServers(t *testing.T) {
	for lang, wasmPath := range map[string]string{
		"go":   filepath.Join(os.Getenv("SNODO_WASM_TEST_GUESTS"), "elicit-policy.wasm"),
		"rust": "../../examples/handlers/rust/elicit-policy/elicit-policy.wasm",
	} {
		t.Run(lang, func(t *testing.T) { answersLegacyAndModernServers(t, wasmPath) })
	}
}

func answersLegacyAndModernServers(t *testing.T, wasmPath string) {
	ctx := context.Background()
	host, err := wasm.NewHost(wasm.HostConfig{NoDiskCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close(ctx)
	module, err := host.Load(ctx, wasm.ModuleConfig{Path: wasmPath, Config: json.RawMessage(`{"values":{"name":"Ada"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"gosdk-legacy", "gosdk-modern"} {
		t.Run(role, func(t *testing.T) {
			conn, err := stdio.Connect(ctx, stdio.Config{Command: self, Env: []stdio.EnvVar{stdio.Set("SNODO_WASM_TEST_SERVER", role)}})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				conn.Close()
				wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				conn.Wait(wctx)
			}()
			c, err := snodo.Connect(ctx, conn, &snodo.Options{
				Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: module},
			})
			if err != nil {
				t.Fatal(err)
			}
			wantEra := snodo.EraModern
			if role == "gosdk-legacy" {
				wantEra = snodo.EraLegacy
			}
			if c.Server().Era != wantEra {
				t.Fatalf("era %v, want %v", c.Server().Era, wantEra)
			}
			cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			res, err := c.CallTool(cctx, "ask", nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Content) != 1 || res.Content[0].Text != "hello Ada (accept)" {
				t.Fatalf("ask: %+v", res.Content)
			}
		})
	}
}
