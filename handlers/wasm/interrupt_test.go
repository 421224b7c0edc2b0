package wasm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/snodo/snodo/jsonrpc"
)

// The deadline through instrumentation (interrupt.go).

// watModule compiles WAT source with wat2wasm (Debian package wabt, which
// .ci/deps.d/30-wasm-toolchain.sh installs), given flags.
func watModule(t testing.TB, src string, flags ...string) []byte {
	t.Helper()
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Fatal("wat2wasm is missing: install wabt (apt-get install wabt)")
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "m.wat"), filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(in, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(tool, append(flags, in, "-o", out)...).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v\n%s\n%s", err, b, src)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// spinner is a Snodo handler whose snodo_handle runs body; extra is more
// module fields.
func spinner(t testing.TB, body, extra string) []byte {
	return watModule(t, `(module
  (import "snodo" "set_output" (func $set_output (param i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 16) "{\"abi\":1,\"methods\":[\"elicitation/create\"]}")
  (func (export "snodo_describe") (result i32)
    (call $set_output (i32.const 16) (i32.const 42))
    (i32.const 0))
  (func (export "snodo_alloc") (param $n i32) (result i32)
    (i32.const 1024))
  (func (export "snodo_handle") (param $ptr i32) (param $len i32) (result i32)
    `+body+`
    (i32.const 0))
  `+extra+`
)`)
}

// Every way to keep running is stopped at the deadline by the checks, and
// the module is instrumented (not left to wazero's mechanism).
func TestInstrumentedGuestIsStoppedWhereverItLoops(t *testing.T) {
	cases := map[string]struct{ body, extra string }{
		"loop": {body: `(loop $l (br $l))`},
		"loop in a called function inside blocks": {
			body: `(block (if (i32.const 1) (then (call $spin)) (else (nop))))`,
			extra: `(func $spin (block $out (loop $l
			    (br_table $l $l $out (i32.const 0)))))`,
		},
		"loop with a parameter": {
			body: `(drop (i32.const 0) (loop $l (param i32) (result i32) (i32.add (i32.const 1)) (br $l)))`,
		},
		"loop after every kind of immediate": {
			body: `
			  (drop (i64.const -9223372036854775808))
			  (drop (f32.const 1.5))
			  (drop (f64.const -2.25))
			  (drop (i32.trunc_sat_f64_s (f64.const 1e300)))
			  (memory.fill (i32.const 1024) (i32.const 7) (i32.const 16))
			  (memory.copy (i32.const 2048) (i32.const 1024) (i32.const 16))
			  (drop (memory.size))
			  (drop (i32.load8_u offset=3 align=1 (i32.const 1024)))
			  (i64.store offset=8 (i32.const 1024) (i64.const 1))
			  (v128.store (i32.const 4096) (i8x16.shuffle 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
			    (v128.const i32x4 1 2 3 4) (v128.load offset=16 (i32.const 1024))))
			  (drop (i32x4.extract_lane 2 (v128.load32_zero (i32.const 1024))))
			  (v128.store64_lane 1 (i32.const 1024) (v128.const i64x2 5 6))
			  (drop (select (result i32) (i32.const 1) (i32.const 2) (i32.const 0)))
			  (drop (ref.is_null (ref.func $f)))
			  (drop (table.size $t))
			  (drop (call_indirect $t (type $v) (i32.const 0)))
			  (loop $l (br_if $l (i32.const 1)))`,
			extra: `(type $v (func (result i32)))
			  (table $t 1 funcref) (elem (table $t) (i32.const 0) func $f)
			  (func $f (result i32) (i32.const 3))`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHost(t)
			cfg := ModuleConfig{Name: "spin", Wasm: spinner(t, tc.body, tc.extra), Timeout: 100 * time.Millisecond}
			m := load(t, h, cfg)
			if !m.interruptible {
				t.Fatal("the module was not instrumented")
			}
			for i := range 2 {
				_, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("x"))
				wantHandlerError(t, err, jsonrpc.CodeInternalError, `wasm module "spin"`, "deadline of 100ms exceeded")
				if st := m.Stats(); st.Discarded != int64(i+1) {
					t.Fatalf("after call %d: %+v, want the instance discarded", i+1, st)
				}
			}
		})
	}
}

// A caller's cancellation stops an instrumented guest too.
func TestInstrumentedGuestIsStoppedByTheCaller(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "spin", Wasm: spinner(t, `(loop $l (br $l))`, ""), Timeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := m.HandleRequest(ctx, "elicitation/create", elicit("x"))
	wantHandlerError(t, err, jsonrpc.CodeInternalError, `wasm module "spin"`, "the caller's deadline passed during the call")
}

// _initialize runs after instantiation, under the deadline and the checks.
func TestInstrumentedInitializeIsStoppedAtTheDeadline(t *testing.T) {
	h := newHost(t)
	bin := spinner(t, "", `(func (export "_initialize") (loop $l (br $l)))`)
	_, err := h.Load(context.Background(), ModuleConfig{Name: "spin-init", Wasm: bin, Timeout: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "instantiate: deadline of 100ms exceeded") {
		t.Fatalf("Load: %v, want the deadline during _initialize", err)
	}

	// And an _initialize that returns still runs, once, before any call.
	bin = spinner(t, `(if (i32.ne (global.get $inited) (i32.const 1)) (then unreachable))`,
		`(global $inited (mut i32) (i32.const 0))
		 (func (export "_initialize") (global.set $inited (i32.add (global.get $inited) (i32.const 1))))`)
	m := load(t, h, ModuleConfig{Name: "init-once", Wasm: bin})
	if !m.interruptible {
		t.Fatal("not instrumented")
	}
	if _, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("x")); err == nil ||
		!strings.Contains(err.Error(), "invalid output") {
		// The handler sets no output: "invalid output" means it ran to
		// its end, past the check that _initialize ran exactly once.
		t.Fatalf("call: %v, want invalid output (the handler ran after _initialize)", err)
	}
}

// What instrument does not take runs under wazero's close-on-context-done,
// and is stopped at the deadline all the same.
func TestUninstrumentableModuleFallsBackToWazero(t *testing.T) {
	cases := map[string]string{
		"start section":                 `(func $s) (start $s)`,
		"own export of the fuel's name": `(global (export "snodo:fuel") i32 (i32.const 0))`,
	}
	for name, extra := range cases {
		t.Run(name, func(t *testing.T) {
			bin := spinner(t, `(loop $l (br $l))`, extra)
			if _, err := instrumentBytes(bin); err == nil {
				t.Fatal("instrumented")
			}
			h := newHost(t)
			m := load(t, h, ModuleConfig{Name: "spin", Wasm: bin, Timeout: 100 * time.Millisecond})
			if m.interruptible {
				t.Fatal("interruptible")
			}
			_, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("x"))
			wantHandlerError(t, err, jsonrpc.CodeInternalError, "deadline of 100ms exceeded")
		})
	}
	// A trusted module is not instrumented at all.
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "t", Wasm: wasmFile(t, "wat/accept/accept.wasm"), Trusted: true})
	if m.interruptible {
		t.Fatal("a trusted module was instrumented")
	}
}

// A module may not import the yield function itself: it is not
// instrumented, and then refused as importing what the ABI does not define.
func TestOwnImportOfYieldIsRefused(t *testing.T) {
	bin := watModule(t, `(module
  (import "snodo" "snodo:yield" (func $yield))
  (import "snodo" "set_output" (func $set_output (param i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 16) "{\"abi\":1,\"methods\":[\"elicitation/create\"]}")
  (func (export "snodo_describe") (result i32)
    (call $yield)
    (call $set_output (i32.const 16) (i32.const 42))
    (i32.const 0))
  (func (export "snodo_alloc") (param $n i32) (result i32) (i32.const 1024))
  (func (export "snodo_handle") (param i32 i32) (result i32) (i32.const 0)))`)
	if _, err := instrumentBytes(bin); err == nil {
		t.Fatal("instrumented")
	}
	h := newHost(t)
	_, err := h.Load(context.Background(), ModuleConfig{Name: "yield", Wasm: bin})
	if err == nil || !strings.Contains(err.Error(), "imports snodo.snodo:yield, which ABI version") {
		t.Fatalf("Load: %v, want the import refused", err)
	}
	// Nor may a trusted module, which is not instrumented.
	_, err = h.Load(context.Background(), ModuleConfig{Name: "yield", Wasm: bin, Trusted: true})
	if err == nil || !strings.Contains(err.Error(), "imports snodo.snodo:yield, which ABI version") {
		t.Fatalf("Load, trusted: %v, want the import refused", err)
	}
}

// Every way a module refers to its functions still reaches the same
// function once the yield import has moved them up one index.
func TestInstrumentRenumbersFunctionReferences(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "renumbered", Wasm: renumberingModule(t)})
	if !m.interruptible {
		t.Fatal("not instrumented")
	}
	if _, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("x")); err == nil ||
		!strings.Contains(err.Error(), "invalid output") {
		// "invalid output": the handler ran to its end (it sets no
		// output), past every check of a reference.
		t.Fatalf("call: %v, want invalid output (the handler ran to its end)", err)
	}
}

// gcChildEnv makes the test binary run TestSpinningGuestDoesNotHoldOffGC's
// body, which its parent watches from outside: a process stuck in a
// garbage collection that waits for a spinning guest cannot time itself
// out.
const gcChildEnv = "SNODO_WASM_TEST_GC_CHILD"

// A guest spinning in loops without calls does not hold off the Go
// runtime's garbage collection, which stops the world (compiled Wasm code
// cannot be preempted, the calls to yield can), and is still stopped at its
// deadline while collections run back to back.
func TestSpinningGuestDoesNotHoldOffGC(t *testing.T) {
	if os.Getenv(gcChildEnv) == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSpinningGuestDoesNotHoldOffGC$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), gcChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("the process hung (killed after 2 minutes):\n%s", out)
		}
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		t.Logf("%s", out)
		return
	}
	guests := map[string]struct{ body, extra string }{
		"loop with a parameter":     {body: `(drop (i32.const 0) (loop $l (param i32) (result i32) (i32.add (i32.const 1)) (br $l)))`},
		"loop in a called function": {body: `(call $spin)`, extra: `(func $spin (loop $l (br $l)))`},
	}
	for name, g := range guests {
		t.Run(name, func(t *testing.T) {
			h := newHost(t)
			m := load(t, h, ModuleConfig{Name: "spin", Wasm: spinner(t, g.body, g.extra), Timeout: 200 * time.Millisecond})
			if !m.interruptible {
				t.Fatal("not instrumented")
			}
			stop := make(chan struct{})
			var collections atomic.Int64
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					runtime.GC()
					collections.Add(1)
				}
			}()
			defer wg.Wait()
			defer close(stop)
			for range 3 {
				start := time.Now()
				before := collections.Load()
				done := make(chan error, 1)
				go func() {
					_, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("x"))
					done <- err
				}()
				select {
				case err := <-done:
					wantHandlerError(t, err, jsonrpc.CodeInternalError, "deadline of 200ms exceeded")
				case <-time.After(20 * time.Second):
					t.Fatal("the call was not stopped within 20 s of its deadline of 200ms")
				}
				elapsed := time.Since(start)
				n := collections.Load() - before
				t.Logf("stopped after %v, %d collections meanwhile", elapsed.Round(time.Millisecond), n)
				if elapsed > 5*time.Second {
					t.Errorf("stopped after %v, want about 200ms", elapsed)
				}
				if n < 2 {
					t.Errorf("%d garbage collections completed while the guest spun, want several", n)
				}
			}
		})
	}
}

// instrumentable are the modules of the repository: every example and test
// guest must be instrumented.
func instrumentable(t *testing.T) map[string][]byte {
	mods := map[string][]byte{}
	for _, pattern := range []string{"wat/*/*.wasm", "wat/hostile/*.wasm", "c/*/*.wasm", "assemblyscript/*/*.wasm"} {
		paths, _ := filepath.Glob(filepath.Join(examples, pattern))
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			mods[strings.TrimPrefix(p, examples+"/")] = b
		}
	}
	if len(mods) < 10 {
		t.Fatalf("found %d example modules: run scripts/build-examples.sh (make examples) first", len(mods))
	}
	for name := range goGuests {
		mods["go/"+name] = goGuest(t, name)
	}
	return mods
}

// wasm-objdump (wabt), a decoder independent of instrument's, finds one
// check at the start of every function body and after every loop of the
// original, and nothing else changed: the instructions, the function
// exports and the element segments are the original's once the checks are
// removed and the function indices moved back down past the yield import.
func TestInstrumentPutsACheckAtEveryFunctionAndLoop(t *testing.T) {
	tool, err := exec.LookPath("wasm-objdump")
	if err != nil {
		t.Fatal("wasm-objdump is missing: install wabt (apt-get install wabt)")
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	mods := instrumentable(t)
	mods["renumbering test"] = renumberingModule(t)
	for name, bin := range mods {
		out, err := instrumentBytes(bin)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if strings.HasPrefix(name, "go/") && testing.Short() {
			continue
		}
		before := objdump(t, tool, bin)
		after := objdump(t, tool, out)
		beforeInstr := instr(before)
		loops := strings.Count("\n"+beforeInstr, "\nloop")
		funcs := countFuncBodies(before)
		imported := countImportedFuncs(before)
		if !strings.Contains(after, fmt.Sprintf(" - func[%d] sig=", imported)+"") ||
			!regexp.MustCompile(fmt.Sprintf(`(?m)^ - func\[%d\] sig=\d+ .*<- snodo\.snodo:yield$`, imported)).MatchString(after) {
			t.Errorf("%s: no import of snodo.%s as function %d", name, yieldImport, imported)
		}
		if countImportedFuncs(after) != imported+1 {
			t.Errorf("%s: %d function imports after, %d before", name, countImportedFuncs(after), imported)
		}
		// The checks use the new global, the one after every other, and
		// call the new import. Removing them and moving the function
		// indices back gives back the original instructions.
		fuel := fmt.Sprint(countGlobals(t, before))
		callYield := fmt.Sprintf("call %d", imported)
		check := []string{"global.get " + fuel, "i32.const 1", "i32.sub", "global.set " + fuel,
			"global.get " + fuel, "i32.const 0", "i32.le_s", "if", callYield, "end"}
		lines := strings.Split(instr(after), "\n")
		var kept []string
		n := 0
		for i := 0; i < len(lines); {
			if i+len(check) <= len(lines) && slices.Equal(lines[i:i+len(check)], check) {
				n++
				i += len(check)
				continue
			}
			if lines[i] == callYield {
				t.Errorf("%s: a call to the yield import outside the checks", name)
			}
			kept = append(kept, lines[i])
			i++
		}
		if n != loops+funcs {
			t.Errorf("%s: %d checks, want %d (%d functions + %d loops)", name, n, loops+funcs, funcs, loops)
		}
		if got, want := funcsDown(strings.Join(kept, "\n"), imported), beforeInstr; got != want {
			t.Errorf("%s: the instructions changed beyond the checks:\n%s", name, firstDiff(got, want))
		}
		if got, want := funcsDown(funcRefs(after), imported), funcRefs(before); got != want {
			t.Errorf("%s: function exports or element segments changed:\n%s", name, firstDiff(got, want))
		}
		if strings.HasPrefix(name, "go/") {
			continue // compiled instrumented by the tests that run it, a long compilation
		}
		if _, err := rt.CompileModule(ctx, out); err != nil {
			t.Errorf("%s: the instrumented module does not compile: %v", name, err)
		}
	}
}

func objdump(t *testing.T, tool string, bin []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.wasm")
	if err := os.WriteFile(p, bin, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "-d", "-x", p).CombinedOutput()
	if err != nil {
		t.Fatalf("wasm-objdump: %v\n%s", err, out)
	}
	return string(out)
}

// countGlobals reads the number of globals, imported and defined, from
// wasm-objdump -x output (the export lines say "->").
func countGlobals(t *testing.T, dump string) int {
	n := 0
	for _, line := range strings.Split(dump, "\n") {
		if strings.HasPrefix(line, " - global[") && !strings.Contains(line, "->") {
			n++
		}
	}
	return n
}

// countFuncBodies counts the functions of wasm-objdump -d output (lines
// such as "00007e func[1] <name>:").
func countFuncBodies(dump string) int {
	n := 0
	for _, line := range strings.Split(dump, "\n") {
		if off, rest, ok := strings.Cut(line, " func["); ok && off != "" && strings.Trim(off, "0123456789abcdef") == "" && strings.HasSuffix(rest, ":") {
			n++
		}
	}
	return n
}

// countImportedFuncs reads the number of function imports from
// wasm-objdump -x output (import lines say "<-").
func countImportedFuncs(dump string) int {
	n := 0
	for _, line := range strings.Split(dump, "\n") {
		if strings.HasPrefix(line, " - func[") && strings.Contains(line, " <- ") {
			n++
		}
	}
	return n
}

// annotation is wasm-objdump's name of a function (from the name section
// or an export), which instrument drops with the name section.
var annotation = regexp.MustCompile(` <[^>\n]*>`)

// localDecl is a declaration of locals in wasm-objdump's disassembly,
// whose first index it gets wrong when a module has more than one function
// import: only the count is compared.
var localDecl = regexp.MustCompile(`^local\[(\d+)(?:\.\.(\d+))?\]`)

// instr is the disassembly without offsets, bytes and names: the
// instruction names and immediates, in order.
func instr(dump string) string {
	var b strings.Builder
	for _, line := range strings.Split(dump, "\n") {
		if _, after, ok := strings.Cut(line, "| "); ok && strings.Contains(line, ": ") {
			after = strings.TrimSpace(after)
			if strings.Contains(after, " <") {
				after = annotation.ReplaceAllString(after, "")
			}
			if !strings.HasPrefix(after, "local[") {
			} else if m := localDecl.FindStringSubmatch(after); m != nil {
				lo, _ := strconv.Atoi(m[1])
				hi := lo
				if m[2] != "" {
					hi, _ = strconv.Atoi(m[2])
				}
				after = fmt.Sprintf("%d locals%s", hi-lo+1, after[len(m[0]):])
			}
			b.WriteString(after)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// funcRefs are the function exports and the element segments' functions of
// wasm-objdump -x output, without names.
func funcRefs(dump string) string {
	var b strings.Builder
	for _, line := range strings.Split(dump, "\n") {
		if (strings.HasPrefix(line, " - func[") && strings.Contains(line, " -> ")) ||
			strings.HasPrefix(line, "  - elem[") || strings.HasPrefix(line, " - segment[") {
			b.WriteString(annotation.ReplaceAllString(line, ""))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

var funcIndex = regexp.MustCompile(`(call |ref\.func |func\[)(\d+)`)

// funcsDown moves the function indices above imported down one: the
// indices of the original module.
func funcsDown(s string, imported int) string {
	return funcIndex.ReplaceAllStringFunc(s, func(m string) string {
		sub := funcIndex.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[2])
		if n > imported {
			n--
		}
		return sub[1] + strconv.Itoa(n)
	})
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d: got %q, want %q", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("got %d lines, want %d", len(g), len(w))
}

// renumberingModule refers to its functions in every way instrument
// renumbers: calls, ref.func in code and in a global's initializer,
// exports, and element segments of all eight encodings, some of them
// passive and copied in by table.init. Its snodo_handle traps unless every
// reference reaches the function it named, and otherwise returns without
// an output.
func renumberingModule(t testing.TB) []byte {
	return watModule(t, `(module
  (import "snodo" "set_output" (func $set_output (param i32 i32)))
  (import "snodo" "log" (func $log (param i32 i32 i32)))
  (type $v (func (result i32)))
  (memory (export "memory") 2)
  (data (i32.const 16) "{\"abi\":1,\"methods\":[\"elicitation/create\"]}")
  (table $t 16 funcref)
  (table $u 16 funcref)
  (global $g funcref (ref.func $f7))
  (global $n funcref (ref.null func))
  (elem (i32.const 0) $f1 $f2)                                       ;; 0: active, table 0, func indices
  (elem $p1 func $f3)                                                ;; 1: passive, func indices
  (elem (table $u) (i32.const 0) func $f4)                           ;; 2: active, table 1, func indices
  (elem declare func $f7)                                            ;; 3: declarative, func indices
  (elem (i32.const 2) funcref (ref.func $f5) (ref.null func))           ;; 4: active, table 0, expressions
  (elem $p5 funcref (ref.func $f6) (ref.null func))                              ;; 5: passive, expressions
  (elem (table $u) (i32.const 1) funcref (ref.func $f8) (ref.null func))             ;; 6: active, table 1, expressions
  (elem declare funcref (ref.null func) (ref.func $f1))                              ;; 7: declarative, expressions
  (func $f1 (result i32) (i32.const 1))
  (func $f2 (result i32) (i32.const 2))
  (func $f3 (result i32) (i32.const 3))
  (func $f4 (result i32) (i32.const 4))
  (func $f5 (result i32) (i32.const 5))
  (func $f6 (result i32) (i32.const 6))
  (func $f7 (result i32) (i32.const 7))
  (func $f8 (result i32) (i32.const 8))
  (func $want (param $got i32) (param $want i32)
    (if (i32.ne (local.get $got) (local.get $want)) (then unreachable)))
  (func (export "snodo_describe") (result i32)
    (call $set_output (i32.const 16) (i32.const 42))
    (i32.const 0))
  (func (export "snodo_alloc") (param $n i32) (result i32)
    (i32.const 1024))
  (func (export "f8") (result i32) (i32.const 8))
  (func (export "snodo_handle") (param $ptr i32) (param $len i32) (result i32)
    (table.init $t $p1 (i32.const 4) (i32.const 0) (i32.const 1))
    (table.init $t $p5 (i32.const 5) (i32.const 0) (i32.const 1))
    (table.set $t (i32.const 6) (global.get $g))
    (table.set $t (i32.const 7) (ref.func $f7))
    (call $want (call_indirect $t (type $v) (i32.const 0)) (i32.const 1))
    (call $want (call_indirect $t (type $v) (i32.const 1)) (i32.const 2))
    (call $want (call_indirect $t (type $v) (i32.const 2)) (i32.const 5))
    (call $want (ref.is_null (table.get $t (i32.const 3))) (i32.const 1))
    (call $want (call_indirect $t (type $v) (i32.const 4)) (i32.const 3))
    (call $want (call_indirect $t (type $v) (i32.const 5)) (i32.const 6))
    (call $want (call_indirect $t (type $v) (i32.const 6)) (i32.const 7))
    (call $want (call_indirect $t (type $v) (i32.const 7)) (i32.const 7))
    (call $want (call_indirect $u (type $v) (i32.const 0)) (i32.const 4))
    (call $want (call_indirect $u (type $v) (i32.const 1)) (i32.const 8))
    (call $want (call $f2) (i32.const 2))
    (call $want (ref.is_null (global.get $n)) (i32.const 1))
    (i32.const 0))
)`)
}

// instrument decodes hostile bytes: it never panics, and what it returns
// for a module wazero compiles, wazero compiles too.
func FuzzInstrument(f *testing.F) {
	for _, pattern := range []string{"wat/*/*.wasm", "wat/hostile/*.wasm", "c/*/*.wasm"} {
		paths, _ := filepath.Glob(filepath.Join(examples, pattern))
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	f.Add(renumberingModule(f))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x0a\x05\x01\x03\x00\x03\x40"))
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	f.Fuzz(func(t *testing.T, bin []byte) {
		out, err := instrumentBytes(bin)
		if err != nil {
			return
		}
		if !bytes.HasPrefix(out, []byte("\x00asm")) {
			t.Fatal("output is not a module")
		}
		_, origErr := rt.CompileModule(ctx, bin)
		_, outErr := rt.CompileModule(ctx, out)
		switch {
		case origErr == nil && outErr != nil:
			t.Fatalf("the original compiles, the instrumented module does not: %v", outErr)
		case origErr != nil && outErr == nil:
			// Load validates first; this checks the instrumenter's own
			// range checks, its second line of defence.
			t.Fatalf("instrumenting made an invalid module valid (%v)", origErr)
		}
	})
}

// instrumentBytes scans bin under the default limits and instruments it,
// as Load does after validating it.
func instrumentBytes(bin []byte) ([]byte, error) {
	sh, err := scanModule(bin, DefaultLimits)
	if err != nil {
		return nil, err
	}
	if _, err := sh.boundTables(DefaultLimits.TableElements); err != nil {
		return nil, err
	}
	return instrument(bin, sh)
}

// goroutinesCreated is the number of goroutines the process has created.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// A call of an instrumented module starts no goroutine, where wazero's
// close-on-context-done starts one per guest call.
func TestInstrumentedCallStartsNoGoroutine(t *testing.T) {
	if goroutinesCreated() == 0 {
		t.Skip("no /sched/goroutines-created metric")
	}
	const calls = 1000
	h := newHost(t)
	decline := `(call $set_output (i32.const 128) (i32.const 20))`
	answer := `(data (i32.const 128) "{\"action\":\"decline\"}")`
	for _, tc := range []struct {
		name          string
		wasm          []byte
		interruptible bool
	}{
		{"instrumented", spinner(t, decline, answer), true},
		// A start section: not instrumented.
		{"close-on-context-done", spinner(t, decline, answer+`(func $s) (start $s)`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := load(t, h, ModuleConfig{Name: "accept", Wasm: tc.wasm})
			if m.interruptible != tc.interruptible {
				t.Fatalf("interruptible = %v", m.interruptible)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			call := func() {
				if _, err := m.HandleRequest(ctx, "elicitation/create", elicit("x")); err != nil {
					t.Fatal(err)
				}
			}
			call()
			before := goroutinesCreated()
			for range calls {
				call()
			}
			n := goroutinesCreated() - before
			t.Logf("%d goroutines created during %d calls", n, calls)
			if tc.interruptible && n > calls/10 {
				t.Errorf("%d goroutines created during %d calls, want next to none", n, calls)
			}
			if !tc.interruptible && n < calls {
				t.Errorf("%d goroutines created during %d calls under close-on-context-done, want one a call at least: does the metric count them?", n, calls)
			}
		})
	}
}
