package wasm

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
)

// Small limits, so that modules at each of them are quick to build and to
// compile.
var fuzzLimits = Limits{
	Functions:       64,
	Locals:          300,
	TotalLocals:     2000,
	TableElements:   4096,
	Globals:         64,
	DataSegments:    32,
	ElementSegments: 32,
	CodeBytes:       16 << 10,
}

// The bounds the generator aims at, in the order of its kind byte.
var boundKinds = []struct {
	key   string
	limit int64
}{
	{"limits.functions", fuzzLimits.Functions},
	{"limits.locals", fuzzLimits.Locals},
	{"limits.total_locals", fuzzLimits.TotalLocals},
	{"limits.table_elements", fuzzLimits.TableElements},
	{"limits.globals", fuzzLimits.Globals},
	{"limits.data_segments", fuzzLimits.DataSegments},
	{"limits.element_segments", fuzzLimits.ElementSegments},
	{"limits.code_bytes", fuzzLimits.CodeBytes},
}

// nearBound describes a generated handler module: n of what kind names,
// near its limit; tableMax, when not zero, is the declared maximum of its
// one table; grow is the elements its call asks table.grow for, pages the
// pages it asks memory.grow for, and spin makes it loop for ever.
type nearBound struct {
	kind     int
	n        int64
	tableMax uint32
	grow     uint32
	pages    uint32
	spin     bool
}

// Type indices of the generated module.
const (
	tySetOutput = iota // (i32, i32) -> ()
	tyDescribe         // () -> i32
	tyAlloc            // (i32) -> i32
	tyHandle           // (i32, i32) -> i32
	tyFiller           // () -> ()
)

func vec(items ...[]byte) []byte {
	b := appendU32(nil, uint32(len(items)))
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

func sect(b []byte, id byte, content []byte) []byte {
	b = append(b, id)
	b = appendU32(b, uint32(len(content)))
	return append(b, content...)
}

func i32Const(v int32) []byte {
	b := []byte{0x41}
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// module builds the handler module nb describes. Its handle function
// checks, from inside the guest, that the table and the memory stayed
// within linearPages and tableBound (trapping otherwise), and answers
// decline.
func (nb nearBound) module(linearPages uint32, tableBound uint32) []byte {
	count := func(k int, base int64) int64 {
		if nb.kind == k {
			return nb.n
		}
		return base
	}
	fillers := count(0, 4) - 4 // 1 import and 3 ABI functions
	locals := count(1, 8)
	// The ABI functions have 9 parameters and locals between them.
	totalLocals := count(2, 9) - 9
	if nb.kind == 2 {
		fillers = 10
	}
	globals := count(4, 1)
	dataSegs := count(5, 2)
	elemSegs := count(6, 1)
	codeBytes := count(7, 0)

	types := vec(
		[]byte{0x60, 2, 0x7f, 0x7f, 0},
		[]byte{0x60, 0, 1, 0x7f},
		[]byte{0x60, 1, 0x7f, 1, 0x7f},
		[]byte{0x60, 2, 0x7f, 0x7f, 1, 0x7f},
		[]byte{0x60, 0, 0},
	)
	imp := appendName(nil, "snodo")
	imp = appendName(imp, "set_output")
	imp = append(imp, 0x00, tySetOutput)
	funcs := [][]byte{{tyDescribe}, {tyAlloc}, {tyHandle}}
	for range max(fillers, 0) {
		funcs = append(funcs, []byte{tyFiller})
	}
	elems := int64(16)
	if nb.kind == 3 {
		elems = nb.n
	}
	tbl := appendU32([]byte{0x70, 0x00}, uint32(elems))
	if nb.tableMax != 0 {
		tbl = appendU32(appendU32([]byte{0x70, 0x01}, uint32(elems)), max(nb.tableMax, uint32(elems)))
	}
	var globs [][]byte
	for range globals {
		globs = append(globs, append([]byte{0x7f, 0x01}, append(i32Const(0), 0x0b)...))
	}
	exp := func(name string, kind byte, idx uint32) []byte {
		return appendU32(append(appendName(nil, name), kind), idx)
	}
	exports := vec(exp("memory", 2, 0), exp("snodo_describe", 0, 1), exp("snodo_alloc", 0, 2), exp("snodo_handle", 0, 3))
	var elemList [][]byte
	for range elemSegs {
		elemList = append(elemList, []byte{0x01, 0x00, 0x00}) // passive, funcref, no items
	}

	manifest := `{"abi":1,"methods":["elicitation/create"]}`
	answer := `{"action":"decline"}`
	describe := append([]byte{0}, i32Const(16)...)
	describe = append(describe, i32Const(int32(len(manifest)))...)
	describe = append(describe, 0x10, 0)
	describe = append(describe, i32Const(0)...)
	describe = append(describe, 0x0b)
	alloc := append(append([]byte{0}, i32Const(1024)...), 0x0b)

	// handle: its locals, then the checks.
	handle := appendU32([]byte{1}, uint32(locals-2))
	handle = append(handle, 0x7f)
	if nb.spin {
		handle = append(handle, 0x03, 0x40, 0x0c, 0x00, 0x0b) // loop br 0 end
	}
	// table.grow 0 (ref.null func) grow; drop
	handle = append(handle, 0xd0, 0x70)
	handle = append(handle, i32Const(int32(nb.grow))...)
	handle = append(handle, 0xfc, 15, 0, 0x1a)
	// if table.size 0 > tableBound: unreachable
	handle = append(handle, 0xfc, 16, 0)
	handle = append(handle, i32Const(int32(tableBound))...)
	handle = append(handle, 0x4b, 0x04, 0x40, 0x00, 0x0b) // i32.gt_u if unreachable end
	// memory.grow pages; drop; if memory.size > linearPages: unreachable
	handle = append(handle, i32Const(int32(nb.pages))...)
	handle = append(handle, 0x40, 0x00, 0x1a, 0x3f, 0x00)
	handle = append(handle, i32Const(int32(linearPages))...)
	handle = append(handle, 0x4b, 0x04, 0x40, 0x00, 0x0b)
	handle = append(handle, i32Const(128)...)
	handle = append(handle, i32Const(int32(len(answer)))...)
	handle = append(handle, 0x10, 0)
	handle = append(handle, i32Const(0)...)
	handle = append(handle, 0x0b)

	bodies := [][]byte{describe, alloc, handle}
	perFiller := int64(0)
	if fillers > 0 && totalLocals > 0 {
		perFiller = totalLocals / fillers
	}
	used := int64(len(describe) + len(alloc) + len(handle))
	for i := range max(fillers, 0) {
		body := []byte{0}
		if perFiller > 0 {
			n := perFiller
			if i == fillers-1 {
				n = totalLocals - perFiller*(fillers-1)
			}
			body = appendU32([]byte{1}, uint32(n))
			body = append(body, 0x7f)
		}
		body = append(body, 0x0b)
		used += int64(len(body)) + 2
		bodies = append(bodies, body)
	}
	if codeBytes > 0 {
		// One more function, padded with nops to make the code section
		// codeBytes long.
		funcs = append(funcs, []byte{tyFiller})
		rest := codeBytes - used - 8
		pad := make([]byte, 0, rest)
		pad = append(pad, 0)
		for int64(len(pad)) < rest-1 {
			pad = append(pad, 0x01)
		}
		pad = append(pad, 0x0b)
		bodies = append(bodies, pad)
	}
	var code [][]byte
	for _, b := range bodies {
		code = append(code, append(appendU32(nil, uint32(len(b))), b...))
	}
	codeSection := vec(code...)
	for codeBytes > 0 && int64(len(codeSection)) != codeBytes {
		// Make the section exactly codeBytes: adjust the padding (twice
		// when a length's encoding changes width).
		last := code[len(code)-1]
		r := &wreader{b: last}
		n := int64(r.u32()) + codeBytes - int64(len(codeSection))
		pad := make([]byte, 0, n)
		pad = append(pad, 0)
		for int64(len(pad)) < n-1 {
			pad = append(pad, 0x01)
		}
		pad = append(pad, 0x0b)
		code[len(code)-1] = append(appendU32(nil, uint32(len(pad))), pad...)
		codeSection = vec(code...)
	}

	data := [][]byte{
		append(append(append([]byte{0}, i32Const(16)...), 0x0b), append(appendU32(nil, uint32(len(manifest))), manifest...)...),
		append(append(append([]byte{0}, i32Const(128)...), 0x0b), append(appendU32(nil, uint32(len(answer))), answer...)...),
	}
	for range dataSegs - 2 {
		data = append(data, []byte{0x01, 0x00}) // passive, empty
	}

	b := []byte("\x00asm\x01\x00\x00\x00")
	b = sect(b, secType, types)
	b = sect(b, secImport, vec(imp))
	b = sect(b, secFunction, vec(funcs...))
	b = sect(b, secTable, vec(tbl))
	b = sect(b, secMemory, vec([]byte{0x00, 0x01}))
	if len(globs) > 0 {
		b = sect(b, secGlobal, vec(globs...))
	}
	b = sect(b, secExport, exports)
	if len(elemList) > 0 {
		b = sect(b, secElement, vec(elemList...))
	}
	b = sect(b, secCode, codeSection)
	b = sect(b, secData, vec(data...))
	return b
}

// FuzzModulesNearTheBounds generates handler modules at, under and over
// each of the limits a module can name, with tables that grow and memory
// that grows, spinning or not. A module over a limit is refused, naming
// the limit's key; one within the limits loads, and every call of it ends
// — answered, or stopped at its deadline — with its table and its memory
// within what the module's memory limit allows, as the guest itself checks.
func FuzzModulesNearTheBounds(f *testing.F) {
	for kind := range boundKinds {
		for _, delta := range []int8{-1, 0, 1} {
			f.Add(uint8(kind), delta, uint32(0), uint32(1<<20), uint32(3), false)
		}
	}
	f.Add(uint8(3), int8(0), uint32(1<<28), uint32(1<<28), uint32(100), false)
	f.Add(uint8(3), int8(-100), uint32(0), uint32(1<<28), uint32(1<<16), false)
	f.Add(uint8(1), int8(0), uint32(0), uint32(0), uint32(0), true)
	f.Add(uint8(3), int8(0), uint32(4096), uint32(4096), uint32(8), true)

	h, err := NewHost(HostConfig{NoDiskCache: true})
	if err != nil {
		f.Fatal(err)
	}
	defer h.Close(context.Background())
	const memoryLimit = 1 << 20
	const timeout = 50 * time.Millisecond
	f.Fuzz(func(t *testing.T, kind uint8, delta int8, tableMax, grow, pages uint32, spin bool) {
		k := int(kind) % len(boundKinds)
		bound := boundKinds[k]
		n := bound.limit + int64(delta)
		if n < 8 || (k == 7 && n < 1024) {
			return
		}
		nb := nearBound{kind: k, n: n, tableMax: tableMax, grow: grow % (1 << 30), pages: pages, spin: spin}
		// What the module may have at most: the table at its bound, the
		// memory at what the table leaves of the limit.
		elems := int64(16)
		if k == 3 {
			elems = n
		}
		tableBound := elems
		if tableMax != 0 {
			tableBound = max(elems, min(int64(max(tableMax, uint32(elems))), fuzzLimits.TableElements))
		}
		tablePages := (tableBound*tableElementBytes + pageSize - 1) / pageSize
		linearPages := memoryLimit/pageSize - tablePages
		bin := nb.module(uint32(linearPages), uint32(tableBound))

		m, err := h.Load(context.Background(), ModuleConfig{Name: "near", Wasm: bin, Limits: fuzzLimits, MemoryLimit: memoryLimit, Timeout: timeout, MaxInstances: 1})
		if n > bound.limit {
			if err == nil || !strings.Contains(err.Error(), "("+bound.key+")") {
				t.Fatalf("%s = %d over %d: Load: %v, want a refusal naming %s", bound.key, n, bound.limit, err, bound.key)
			}
			t.Logf("%s = %d: refused", bound.key, n)
			return
		}
		if err != nil {
			t.Fatalf("%s = %d within %d: Load: %v", bound.key, n, bound.limit, err)
		}
		defer m.Close(context.Background())
		if m.tableBytes != tableBound*tableElementBytes || m.linearLimit != linearPages*pageSize {
			t.Fatalf("tables %d bytes, linear %d; want %d and %d", m.tableBytes, m.linearLimit, tableBound*tableElementBytes, linearPages*pageSize)
		}
		if reserved, _ := h.MemoryReserved(); reserved > memoryLimit {
			t.Fatalf("reserved %d for one instance, over its limit %d", reserved, memoryLimit)
		}
		// The grace bounds a wait, so that a call that is never stopped
		// fails the test instead of hanging it; a stopped call ends within
		// a few milliseconds of its deadline.
		const grace = 10 * time.Second
		done := make(chan error, 1)
		go func() {
			_, err := m.HandleRequest(context.Background(), "elicitation/create", elicit("x"))
			done <- err
		}()
		select {
		case err = <-done:
		case <-time.After(timeout + grace):
			t.Fatalf("%+v: the call did not end within its deadline of %v and %v of grace", nb, timeout, grace)
		}
		t.Logf("%s = %d, table %d, memory %d pages: %v", bound.key, n, tableBound, linearPages, err)
		if spin {
			wantHandlerError(t, err, jsonrpc.CodeInternalError, fmt.Sprintf("deadline of %v exceeded", timeout))
			return
		}
		if err != nil {
			if strings.Contains(err.Error(), "unreachable") {
				t.Fatalf("%+v: the guest saw its table or memory past its bound: %v", nb, err)
			}
			t.Fatalf("%+v: %v", nb, err)
		}
	})
}
