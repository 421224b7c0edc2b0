package wasm

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
)

// watUnchecked assembles WAT without wat2wasm's validation, for modules
// that a validator must refuse.
func watUnchecked(t testing.TB, src string) []byte {
	t.Helper()
	return watModule(t, src, "--no-check")
}

// handlerWAT is a handler module answering elicitation/create with
// body, which ends by leaving a status on the stack; extra is added to
// the module.
func handlerWAT(body, extra string) string {
	return `(module
  (import "snodo" "set_output" (func $set_output (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"abi\":1,\"methods\":[\"elicitation/create\"]}")
  (data (i32.const 128) "{\"action\":\"decline\"}")
  (func (export "snodo_describe") (result i32)
    (call $set_output (i32.const 16) (i32.const 42))
    (i32.const 0))
  (func (export "snodo_alloc") (param $n i32) (result i32) (i32.const 1024))
  (func (export "snodo_handle") (param $ptr i32) (param $len i32) (result i32)
    ` + body + `)
  ` + extra + `)`
}

const decline = `(call $set_output (i32.const 128) (i32.const 20)) (i32.const 0)`

// A module that sets global 0 while it declares no global is invalid; once
// instrumented, global 0 would be its fuel, which it could refill for
// ever. It is refused, naming the reason, before it is instrumented.
func TestForgedFuelModuleIsRefusedBeforeInstrumentation(t *testing.T) {
	bin := watUnchecked(t, handlerWAT(`(loop $l (global.set 0 (i32.const 1000000)) (br $l)) `+decline, ""))
	h := newHost(t)
	_, err := h.Load(context.Background(), ModuleConfig{Name: "forge", Wasm: bin, Timeout: time.Second})
	if err == nil {
		t.Fatal("Load accepted a module that sets a global it does not declare")
	}
	for _, want := range []string{`wasm module "forge": invalid module:`, "global"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("Load: %v, want it to contain %q", err, want)
		}
	}
	// The instrumenter, given it all the same, refuses the index itself.
	if _, err := instrumentBytes(bin); err == nil || !strings.Contains(err.Error(), "global index 0 out of range (0)") {
		t.Fatalf("instrument: %v, want the global index refused", err)
	}
}

// Each index the instrumentation shifts or adds to is range-checked: a
// module naming what only the instrumented module has is refused.
func TestInstrumenterRangeChecksEveryIndex(t *testing.T) {
	cases := map[string]struct{ body, extra, want string }{
		"global.get of the fuel":            {`(drop (global.get 1)) ` + decline, `(global i32 (i32.const 0))`, "global index 1 out of range (1)"},
		"call past the last function":       {`(call 4) ` + decline, ``, "function index 4 out of range (4 functions)"},
		"call_indirect of the yield's type": {`(call_indirect (type 4) (i32.const 0)) ` + decline, `(table 1 funcref)`, "type index 4 out of range (4)"},
		"local past the last":               {`(drop (local.get 2)) ` + decline, ``, "local index 2 out of range (2)"},
		"branch past the function":          {`(br 1) ` + decline, ``, "branch depth index 1 out of range (1)"},
		"table that is not there":           {`(drop (table.size 0)) ` + decline, ``, "table index 0 out of range (0)"},
		"data segment that is not there":    {`(data.drop 2) ` + decline, ``, "data segment index 2 out of range (2)"},
		"element segment not there":         {`(elem.drop 0) ` + decline, ``, "element segment index 0 out of range (0)"},
		"export of the fuel":                {decline, `(export "g" (global 0))`, "global index 0 out of range (0)"},
	}
	// A block of type 1, in a module of one type (wat2wasm does not write
	// such a block type).
	bin := rawModule([]byte{0x00, 0x02, 0x01, 0x0b, 0x0b})
	if _, err := instrumentBytes(bin); err == nil || !strings.Contains(err.Error(), "block type index 1 out of range (1)") {
		t.Fatalf("instrument: %v, want the block type refused", err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			bin := watUnchecked(t, handlerWAT(tc.body, tc.extra))
			_, err := instrumentBytes(bin)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("instrument: %v, want %q", err, tc.want)
			}
		})
	}
}

// A table without a maximum cannot grow: one table.grow of 2^28 elements
// (2 GiB) fails, as WebAssembly lets it, instead of growing.
func TestTableGrowPastTheBoundFails(t *testing.T) {
	for _, tc := range []struct{ name, table string }{
		{"no maximum", `(table $t 0 funcref)`},
		{"maximum of 2^28", `(table $t 0 268435456 funcref)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := watModule(t, handlerWAT(`(if (i32.ne (table.grow $t (ref.null func) (i32.const 268435456)) (i32.const -1))
      (then unreachable)) `+decline, tc.table))
			h := newHost(t)
			for _, trusted := range []bool{false, true} {
				m := load(t, h, ModuleConfig{Name: "grow", Wasm: bin, MemoryLimit: 16 << 20, Trusted: trusted})
				if res, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("x")); err != nil || string(res) != `{"action":"decline"}` {
					t.Fatalf("trusted=%v: %s, %v; want table.grow to fail and the module to decline", trusted, res, err)
				}
			}
		})
	}
}

// Tables count in the module's memory limit: a module whose tables could
// hold more than its limit is refused, and what its tables take is taken
// from its linear memory's share.
func TestTablesCountInTheMemoryLimit(t *testing.T) {
	h := newHost(t)
	big := watModule(t, handlerWAT(decline, `(table 0 268435456 funcref)`))
	_, err := h.Load(context.Background(), ModuleConfig{Name: "big", Wasm: big, MemoryLimit: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "its tables take 8 MiB (1048576 elements) of its memory limit of 1 MiB") {
		t.Fatalf("Load: %v, want the tables refused against the memory limit", err)
	}
	// 512 KiB of table leaves 8 of the limit's 16 pages to memory.grow:
	// growing by 7 (to 8 pages) succeeds, by 1 more fails.
	grow := watModule(t, handlerWAT(`(if (i32.eq (memory.grow (i32.const 7)) (i32.const -1)) (then unreachable))
    (if (i32.ne (memory.grow (i32.const 1)) (i32.const -1)) (then unreachable)) `+decline,
		`(table 65536 65536 funcref)`))
	m := load(t, h, ModuleConfig{Name: "half", Wasm: grow, MemoryLimit: 1 << 20})
	if m.tableBytes != 512<<10 || m.linearLimit != 512<<10 {
		t.Fatalf("tables %d, linear %d; want 512 KiB each", m.tableBytes, m.linearLimit)
	}
	if res, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("x")); err != nil || string(res) != `{"action":"decline"}` {
		t.Fatalf("%s, %v; want memory.grow to stop at 8 pages", res, err)
	}
	// What fills the linear memory's share is out of memory, and the
	// error says the tables took the rest.
	hog := watModule(t, handlerWAT(`(if (i32.eq (memory.grow (i32.const 8)) (i32.const -1)) (then unreachable)) `+decline,
		`(table 65536 65536 funcref)`))
	m = load(t, h, ModuleConfig{Name: "hog", Wasm: hog, MemoryLimit: 1 << 20})
	_, err = m.HandleRequest(context.Background(), "elicitation/create", elicit("x"))
	wantHandlerError(t, err, jsonrpc.CodeInternalError, "out of memory (memory at its limit of 1 MiB, 512 KiB of it for tables)")
}

// Four declared tables of 10^8 elements are refused before anything is
// compiled, with no table.grow at all.
func TestHugeDeclaredTablesAreRefused(t *testing.T) {
	bin := watModule(t, handlerWAT(decline, strings.Repeat(`(table 100000000 funcref)`, 4)))
	_, err := newHost(t).Load(context.Background(), ModuleConfig{Name: "tables", Wasm: bin})
	if err == nil || !strings.Contains(err.Error(), "the module's tables hold 400000000 elements, over the limit of 1048576 (limits.table_elements)") {
		t.Fatalf("Load: %v", err)
	}
}

// moduleWithLocals is a small module with one function declaring n i64
// locals.
func moduleWithLocals(n uint32) []byte {
	return rawModule(append(appendU32([]byte{1}, n), 0x7e, 0x0b))
}

// rawModule is a module of one type, () -> (), one memory and one
// function, whose body (locals and code) is body.
func rawModule(body []byte) []byte {
	b := []byte("\x00asm\x01\x00\x00\x00")
	b = append(b, secType, 4, 1, 0x60, 0, 0)
	b = append(b, secFunction, 2, 1, 0)
	b = append(b, secMemory, 3, 1, 0, 1)
	code := append(appendU32([]byte{1}, uint32(len(body))), body...)
	b = append(b, secCode)
	b = appendU32(b, uint32(len(code)))
	return append(b, code...)
}

// 10^8 locals in one function would take gigabytes to compile and to run;
// the module is refused from its local declarations, in no time.
func TestHugeLocalCountsAreRefusedBeforeCompiling(t *testing.T) {
	h := newHost(t)
	for _, n := range []uint32{100_000_000, 200_000_000} {
		_, err := h.Load(context.Background(), ModuleConfig{Name: "locals", Wasm: moduleWithLocals(n)})
		want := fmt.Sprintf("the module has %d parameters and locals in function 0, over the limit of 50000 (limits.locals)", n)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Load: %v, want %q", err, want)
		}
	}
	var me *moduleError
	if _, err := scanModule(moduleWithLocals(50_000), DefaultLimits); err != nil {
		t.Fatalf("50,000 locals: %v", err)
	} else if _, err := scanModule(moduleWithLocals(50_001), DefaultLimits); !errors.As(err, &me) {
		t.Fatalf("50,001 locals: %v", err)
	}
}

// Unbounded recursion ends in wazero's stack overflow trap, reported as
// such even when the module's memory is near its limit.
func TestRecursionIsAStackOverflowNotOutOfMemory(t *testing.T) {
	bin := watModule(t, handlerWAT(`(call $rec (i32.const 0)) `+decline,
		`(func $rec (param i32) (call $rec (i32.add (local.get 0) (i32.const 1))))`))
	m := load(t, newHost(t), ModuleConfig{Name: "rec", Wasm: bin, MemoryLimit: 1 << 20})
	_, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("x"))
	e := wantHandlerError(t, err, jsonrpc.CodeInternalError, `wasm module "rec": trap: stack overflow`)
	if strings.Contains(e.Message, "out of memory") {
		t.Fatalf("%s: a stack overflow reported as out of memory", e.Message)
	}
}

// A module that passed validation is recorded in the disk cache under its
// MAC and not validated again; a record that fails its MAC vouches for
// nothing, so an invalid module is refused whatever record sits beside it.
func TestValidationRecordIsAuthenticated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	host := func() *Host {
		h, err := NewHost(HostConfig{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close(context.Background()) })
		return h
	}
	good := watModule(t, handlerWAT(decline, ""))
	h := host()
	load(t, h, ModuleConfig{Name: "good", Wasm: good})
	if !h.disk.validated(sha256.Sum256(good)) {
		t.Fatal("no validation record after a valid module loaded")
	}
	// An invalid module with a forged record beside it.
	bad := watUnchecked(t, handlerWAT(`(loop $l (global.set 0 (i32.const 1000000)) (br $l)) `+decline, ""))
	sum := sha256.Sum256(bad)
	if err := os.WriteFile(h.disk.validPath(sum), make([]byte, sha256.Size), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := host().Load(context.Background(), ModuleConfig{Name: "forge", Wasm: bad})
	if err == nil || !strings.Contains(err.Error(), "invalid module") {
		t.Fatalf("Load: %v, want the forged record ignored and the module refused", err)
	}
	if _, err := os.Stat(h.disk.validPath(sum)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the forged record is still there: %v", err)
	}
}
