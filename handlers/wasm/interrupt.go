package wasm

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/snodo/snodo/abi"
)

// Stopping a guest at its deadline.
//
// wazero can stop a running guest only from inside the compiled code: with
// close-on-context-done, every loop header calls out to Go to check whether
// the module was closed, and every call starts a goroutine that watches the
// context. On Go guests (whose compiled functions are each one loop) that
// made calls about three times slower, and the goroutine woke a second
// thread per call. Snodo instruments the module instead. It adds a mutable
// i32 global, the fuel, exported as fuelExport, and a function import,
// yieldImport of the snodo host module, of type () -> (); at the start of
// every function and of every loop it inserts
//
//	global.get $fuel
//	i32.const 1
//	i32.sub
//	global.set $fuel
//	global.get $fuel
//	i32.const 0
//	i32.le_s
//	if
//	  call $yield
//	end
//
// which the compiler keeps inline: a load, a store and a branch not taken.
// Once every fuelRefill checks, and at the first check of a new instance
// (the fuel starts at 0), the guest calls yield, a Go function (instance.go):
// if the deadline or the caller's cancellation has fired, it stops the
// guest; otherwise it refills the fuel. The deadline timer and the caller's
// context set the fuel to 0, so the guest calls yield at its next check.
//
// The check has to end in a call to Go, not in a trap decided by the Wasm
// code alone: compiled Wasm code is not a point where the Go runtime can
// preempt a goroutine, so a garbage collection that stops the world would
// wait for a guest that spins in a loop, while the timer that would stop the
// guest waits for the collection. Yield is such a point: a spinning guest
// holds off a collection for at most fuelRefill checks (well under a
// millisecond).
//
// The guest's own decrement races with the host setting the fuel to 0 (a
// read-modify-write in Wasm against a store in Go): the host's store may be
// lost, which delays the stop by at most one refill's worth of checks, as
// yield then sees the cancellation anyway.
//
// The new import comes after the module's function imports, so every
// function the module defines moves up one index: calls and ref.func in the
// code, function exports, element segments and global initializers are
// renumbered. The "name" section, whose indices would be wrong, is dropped,
// and so are DWARF sections, whose code offsets would no longer match. No
// guest code runs without the checks: the start functions (_initialize) are
// called after instantiation, and a module with a start section is not
// instrumented.
//
// Instrumenting reads the module's whole code section, so it accepts only
// what it decodes completely: the WebAssembly 2.0 instruction set that
// wazero compiles by default (api.CoreFeaturesV2). Anything else (another
// version, an opcode or an immediate it does not know, blocks that do not
// balance, a module that already imports yieldImport or exports
// fuelExport) is refused, and the module is run under wazero's own
// mechanism instead.

const (
	// fuelExport is the name under which an instrumented module exports its
	// fuel. Not a valid name for any ABI export.
	fuelExport = "snodo:fuel"
	// yieldImport is the function of the snodo host module that the checks
	// call. Not a valid name for any ABI import: only an instrumented module
	// may import it (checkCompiled).
	yieldImport = "snodo:yield"
	// fuelRefill is the number of checks between two calls to yield.
	fuelRefill = 1 << 16
)

// Section IDs.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
)

// sectionRank is the order of the non-custom sections in a module.
var sectionRank = [...]int{
	secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5,
	secGlobal: 6, secExport: 7, secStart: 8, secElement: 9, secDataCount: 10,
	secCode: 11, secData: 12,
}

// errInstrument is the error of a module instrument does not take.
var errInstrument = errors.New("not instrumented")

func instrumentErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errInstrument, fmt.Sprintf(format, args...))
}

// instrumenter holds what the rewriting of one module needs.
type instrumenter struct {
	s             *shape
	importedFuncs uint32 // the yield import's index: defined functions move up one
	check         []byte
	locals        uint32 // of the function being rewritten, parameters included
}

// fn is the new index of function idx. r fails on an index out of range.
func (in *instrumenter) fn(r *wreader, idx uint32) uint32 {
	if idx >= uint32(len(in.s.funcTypes)) {
		r.fail(fmt.Errorf("function index %d out of range (%d functions)", idx, len(in.s.funcTypes)))
		return 0
	}
	if idx < in.importedFuncs {
		return idx
	}
	return idx + 1
}

// index reads an index and fails r if it is not under n, naming what.
func (r *wreader) index(n uint32, what string) uint32 {
	i := r.u32()
	if r.err == nil && i >= n {
		r.fail(fmt.Errorf("%s index %d out of range (%d)", what, i, n))
	}
	return i
}

// instrument returns bin with the fuel, the yield import and the checks
// (see above), or an error wrapping errInstrument when it does not take bin.
// s is bin's shape (scanModule): every index instrument meets is checked
// against its counts, so that no index a validator would refuse — such as
// one naming the fuel global, which does not exist before — can come to
// name something the instrumentation added. Its tables are written with
// the bounds of s.tableBounds. bin must have passed validation: instrument
// is a second line of defence, not a validator.
func instrument(bin []byte, s *shape) ([]byte, error) {
	var sections []section
	for _, sec := range s.sections {
		if sec.id == secCustom {
			nr := &wreader{b: sec.content}
			name := nr.name()
			if nr.err == nil && (name == "name" || strings.HasPrefix(name, ".debug_")) {
				continue // function indices or code offsets that would be wrong
			}
		}
		if sec.id == secStart {
			return nil, instrumentErr("the module has a start function, which runs during instantiation")
		}
		sections = append(sections, sec)
	}
	var have [secDataCount + 1]bool
	for _, sec := range sections {
		have[sec.id] = true
	}
	in := instrumenter{s: s, importedFuncs: s.importFuncs}
	for _, sec := range sections {
		if sec.id == secImport {
			if err := in.readImports(sec.content); err != nil {
				return nil, err
			}
		}
	}
	types := uint32(len(s.types))
	gidx := s.globals
	if gidx == math.MaxUint32 || types == math.MaxUint32 {
		return nil, instrumentErr("too many globals or types")
	}
	// The check (see above).
	check := appendU32([]byte{0x23}, gidx)       // global.get $fuel
	check = append(check, 0x41, 0x01, 0x6b)      // i32.const 1, i32.sub
	check = appendU32(append(check, 0x24), gidx) // global.set $fuel
	check = appendU32(append(check, 0x23), gidx) // global.get $fuel
	check = append(check, 0x41, 0x00, 0x4c)      // i32.const 0, i32.le_s
	check = append(check, 0x04, 0x40, 0x10)      // if, call $yield
	check = appendU32(check, in.importedFuncs)
	check = append(check, 0x0b) // end
	in.check = check

	out := make([]byte, 0, len(bin)+len(bin)/8+64)
	out = append(out, bin[:8]...)
	putSection := func(id byte, content []byte) {
		out = append(out, id)
		out = appendU32(out, uint32(len(content)))
		out = append(out, content...)
	}
	// The sections the instrumented module needs, made when the module
	// lacks them: each goes before the first section that must follow it.
	added := map[byte][]byte{
		secType:   {0x01, 0x60, 0x00, 0x00},
		secImport: in.yieldImportEntry(appendU32(nil, 1), types),
		secGlobal: appendFuelGlobal(appendU32(nil, 1)),
		secExport: appendFuelExport(appendU32(nil, 1), gidx),
	}
	putMissing := func(beforeRank int) {
		for _, id := range []byte{secType, secImport, secGlobal, secExport} {
			if !have[id] && sectionRank[id] < beforeRank {
				putSection(id, added[id])
				have[id] = true
			}
		}
	}
	for _, sec := range sections {
		if sec.id == secCustom {
			putSection(sec.id, sec.content)
			continue
		}
		putMissing(sectionRank[sec.id])
		c, err := in.rewrite(sec.id, sec.content, types, gidx)
		if err != nil {
			return nil, err
		}
		putSection(sec.id, c)
	}
	putMissing(math.MaxInt)
	return out, nil
}

// readImports reads the import section: it refuses a module that imports
// yieldImport itself.
func (in *instrumenter) readImports(content []byte) error {
	r := &wreader{b: content}
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		mod, name := r.name(), r.name()
		if mod == abi.HostModule && name == yieldImport {
			return instrumentErr("the module imports %s.%s itself", mod, name)
		}
		switch kind := r.byte(); kind {
		case 0x00: // func
			r.u32()
		case 0x02: // memory
			r.limits()
		case 0x03: // global
			r.byte()
			r.byte()
		default:
			return instrumentErr("import of kind %#x", kind)
		}
	}
	if r.err == nil && r.off != len(r.b) {
		r.err = errors.New("trailing bytes")
	}
	if r.err != nil {
		return instrumentErr("import section: %v", r.err)
	}
	return nil
}

func (in *instrumenter) yieldImportEntry(b []byte, typeIdx uint32) []byte {
	b = appendName(b, abi.HostModule)
	b = appendName(b, yieldImport)
	return appendU32(append(b, 0x00), typeIdx)
}

// appendFuelGlobal appends the fuel: a mutable i32 starting at 0, so that
// the first check calls yield.
func appendFuelGlobal(b []byte) []byte {
	return append(b, 0x7f, 0x01, 0x41, 0x00, 0x0b)
}

func appendFuelExport(b []byte, gidx uint32) []byte {
	b = appendName(b, fuelExport)
	return appendU32(append(b, 0x03), gidx)
}

// rewrite returns the content of a section of the instrumented module.
func (in *instrumenter) rewrite(id byte, content []byte, types, gidx uint32) ([]byte, error) {
	r := &wreader{b: content}
	var out []byte
	switch id {
	case secType:
		out = appendU32(nil, r.u32()+1)
		out = append(out, content[r.off:]...)
		out = append(out, 0x60, 0x00, 0x00) // () -> (), the type of yield
		r.off = len(r.b)
	case secImport:
		n := r.u32()
		if n == math.MaxUint32 {
			return nil, instrumentErr("too many imports")
		}
		out = appendU32(nil, n+1)
		out = append(out, content[r.off:]...)
		out = in.yieldImportEntry(out, types)
		r.off = len(r.b)
	case secGlobal:
		n := r.u32()
		out = appendU32(nil, n+1)
		for i := uint32(0); i < n && r.err == nil; i++ {
			start := r.off
			r.byte() // value type
			r.byte() // mutability
			out = append(out, content[start:r.off]...)
			out = in.constExpr(r, out)
		}
		out = appendFuelGlobal(out)
	case secExport:
		n := r.u32()
		if n == math.MaxUint32 {
			return nil, instrumentErr("too many exports")
		}
		out = appendU32(nil, n+1)
		for i := uint32(0); i < n && r.err == nil; i++ {
			name := r.name()
			if name == fuelExport {
				return nil, instrumentErr("the module exports %q itself", fuelExport)
			}
			kind := r.byte()
			var idx uint32
			switch kind {
			case 0x00:
				idx = in.fn(r, r.u32())
			case 0x01:
				idx = r.index(uint32(len(in.s.tables)), "table")
			case 0x02:
				idx = r.index(in.s.memories, "memory")
			case 0x03:
				idx = r.index(in.s.globals, "global")
			default:
				r.fail(fmt.Errorf("export of kind %#x", kind))
			}
			out = appendName(out, name)
			out = appendU32(append(out, kind), idx)
		}
		out = appendFuelExport(out, gidx)
	case secTable:
		out = tableSection(in.s)
		r.off = len(r.b)
	case secElement:
		out = in.elements(r)
	case secData:
		in.data(r)
		out = content
	case secCode:
		return in.code(content)
	default:
		return content, nil
	}
	if r.err == nil && r.off != len(r.b) {
		r.err = errors.New("trailing bytes")
	}
	if r.err != nil {
		return nil, instrumentErr("section %d: %v", id, r.err)
	}
	return out, nil
}

// elements rewrites the element section: its function indices and the
// constant expressions of its segments (all eight encodings).
func (in *instrumenter) elements(r *wreader) []byte {
	n := r.u32()
	out := appendU32(nil, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		flags := r.u32()
		if flags > 7 {
			r.fail(fmt.Errorf("element segment flags %d", flags))
			break
		}
		out = appendU32(out, flags)
		if flags&1 == 0 { // active
			if flags&2 != 0 {
				out = appendU32(out, r.index(uint32(len(in.s.tables)), "table"))
			}
			out = in.constExpr(r, out) // offset
		}
		if flags&3 != 0 {
			out = append(out, r.byte()) // element kind or reference type
		}
		count := r.u32()
		out = appendU32(out, count)
		for j := uint32(0); j < count && r.err == nil; j++ {
			if flags&4 == 0 {
				out = appendU32(out, in.fn(r, r.u32()))
			} else {
				out = in.constExpr(r, out)
			}
		}
	}
	return out
}

// constExpr appends the constant expression at r to out, with its ref.func
// renumbered.
func (in *instrumenter) constExpr(r *wreader, out []byte) []byte {
	start := r.off
	for r.err == nil {
		switch op := r.byte(); op {
		case 0x0b: // end
			return append(out, r.b[start:r.off]...)
		case 0x41: // i32.const
			r.sleb(5)
		case 0x42: // i64.const
			r.sleb(10)
		case 0x43: // f32.const
			r.bytes(4)
		case 0x44: // f64.const
			r.bytes(8)
		case 0x23: // global.get
			r.index(in.s.globals, "global")
		case 0xd0: // ref.null
			r.byte()
		case 0xd2: // ref.func
			out = append(out, r.b[start:r.off]...)
			out = appendU32(out, in.fn(r, r.u32()))
			start = r.off
		case 0xfd: // v128.const
			if sub := r.u32(); sub != 12 && r.err == nil {
				r.fail(fmt.Errorf("opcode 0xfd %d in a constant expression", sub))
			}
			r.bytes(16)
		default:
			if r.err == nil {
				r.fail(fmt.Errorf("opcode %#x in a constant expression", op))
			}
		}
	}
	return out
}

// data checks the data section's memory and global indices.
func (in *instrumenter) data(r *wreader) {
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		switch flags := r.u32(); flags {
		case 0:
			in.constExpr(r, nil)
		case 1:
		case 2:
			r.index(in.s.memories, "memory")
			in.constExpr(r, nil)
		default:
			r.fail(fmt.Errorf("data segment flags %d", flags))
		}
		r.bytes(int64(r.u32()))
	}
}

// code returns the code section with the check at the start of every
// function body and after every loop's block type, and calls renumbered.
func (in *instrumenter) code(content []byte) ([]byte, error) {
	r := &wreader{b: content}
	n := r.u32()
	if r.err != nil {
		return nil, instrumentErr("code section: %v", r.err)
	}
	if n != uint32(len(in.s.locals)) {
		return nil, instrumentErr("code section: %d bodies, %d functions", n, len(in.s.locals))
	}
	out := appendU32(make([]byte, 0, len(content)+len(content)/4), n)
	var body []byte
	for i := uint32(0); i < n; i++ {
		size := r.u32()
		b := r.bytes(int64(size))
		if r.err != nil {
			return nil, instrumentErr("code section: function %d: %v", i, r.err)
		}
		in.locals = in.s.locals[i]
		var err error
		body, err = in.body(body[:0], b)
		if err != nil {
			return nil, instrumentErr("function %d: %v", in.importedFuncs+i, err)
		}
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	if r.off != len(r.b) {
		return nil, instrumentErr("code section: trailing bytes")
	}
	return out, nil
}

// body appends the instrumented function body b to out. Every index it
// meets is checked against the module's counts and every branch depth
// against the blocks open.
func (in *instrumenter) body(out, b []byte) ([]byte, error) {
	check := in.check
	s := in.s
	tables, globals, types := uint32(len(s.tables)), s.globals, uint32(len(s.types))
	r := &wreader{b: b}
	groups := r.u32()
	for i := uint32(0); i < groups && r.err == nil; i++ {
		r.u32()
		r.byte()
	}
	if r.err != nil {
		return nil, fmt.Errorf("locals: %v", r.err)
	}
	out = append(out, b[:r.off]...)
	out = append(out, check...)
	last := r.off
	depth := uint32(1)
	label := func() { r.index(depth, "branch depth") }
	memory := func() {
		if s.memories == 0 && r.err == nil {
			r.fail(errors.New("memory instruction without a memory"))
		}
	}
	for depth > 0 {
		if r.off >= len(r.b) {
			return nil, errors.New("body ends inside a block")
		}
		op := r.byte()
		switch {
		case op == 0x02 || op == 0x04: // block, if
			r.blockType(types)
			depth++
		case op == 0x03: // loop
			r.blockType(types)
			depth++
			if r.err == nil {
				out = append(out, b[last:r.off]...)
				out = append(out, check...)
				last = r.off
			}
		case op == 0x0b: // end
			depth--
		case op == 0x00, op == 0x01, op == 0x05, op == 0x0f, // unreachable, nop, else, return
			op == 0x1a, op == 0x1b, op == 0xd1, // drop, select, ref.is_null
			op >= 0x45 && op <= 0xc4: // numeric, sign extension
		case op == 0x0c, op == 0x0d: // br, br_if
			label()
		case op == 0x0e: // br_table
			targets := r.u32()
			if int64(targets) > int64(len(r.b)-r.off) {
				return nil, errors.New("br_table longer than the body")
			}
			for j := uint32(0); j <= targets && r.err == nil; j++ {
				label()
			}
		case op == 0x10, op == 0xd2: // call, ref.func
			out = append(out, b[last:r.off]...)
			out = appendU32(out, in.fn(r, r.u32()))
			last = r.off
		case op == 0x11: // call_indirect
			r.index(types, "type")
			r.index(tables, "table")
		case op == 0x1c: // select t*
			k := r.u32()
			r.bytes(int64(k))
		case op >= 0x20 && op <= 0x22: // local.get, local.set, local.tee
			r.index(in.locals, "local")
		case op == 0x23, op == 0x24: // global.get, global.set
			r.index(globals, "global")
		case op == 0x25, op == 0x26: // table.get, table.set
			r.index(tables, "table")
		case op >= 0x28 && op <= 0x3e: // loads, stores
			memory()
			r.memarg()
		case op == 0x3f, op == 0x40: // memory.size, memory.grow
			memory()
			r.zero()
		case op == 0x41:
			r.sleb(5)
		case op == 0x42:
			r.sleb(10)
		case op == 0x43:
			r.bytes(4)
		case op == 0x44:
			r.bytes(8)
		case op == 0xd0: // ref.null
			r.byte()
		case op == 0xfc:
			in.miscOp(r)
		case op == 0xfd:
			memory()
			r.simdOp()
		default:
			return nil, fmt.Errorf("opcode %#x at byte %d", op, r.off-1)
		}
		if r.err != nil {
			return nil, r.err
		}
	}
	if r.off != len(r.b) {
		return nil, errors.New("bytes after the body's end")
	}
	return append(out, b[last:]...), nil
}

// miscOp reads a 0xfc instruction: saturating truncations, bulk memory,
// table instructions; with their indices checked.
func (in *instrumenter) miscOp(r *wreader) {
	s := in.s
	tables := uint32(len(s.tables))
	memory := func() {
		if s.memories == 0 {
			r.fail(errors.New("memory instruction without a memory"))
		}
	}
	switch sub := r.u32(); {
	case r.err != nil:
	case sub <= 7:
	case sub == 8: // memory.init
		r.index(s.data, "data segment")
		memory()
		r.zero()
	case sub == 9: // data.drop
		r.index(s.data, "data segment")
	case sub == 10: // memory.copy
		memory()
		r.zero()
		r.zero()
	case sub == 11: // memory.fill
		memory()
		r.zero()
	case sub == 12: // table.init
		r.index(s.elements, "element segment")
		r.index(tables, "table")
	case sub == 13: // elem.drop
		r.index(s.elements, "element segment")
	case sub == 14: // table.copy
		r.index(tables, "table")
		r.index(tables, "table")
	case sub == 15, sub == 16, sub == 17: // table.grow, table.size, table.fill
		r.index(tables, "table")
	default:
		r.fail(fmt.Errorf("opcode 0xfc %d", sub))
	}
}

// wreader decodes a WebAssembly binary; the first error sticks.
type wreader struct {
	b   []byte
	off int
	err error
}

var errTruncated = errors.New("truncated")

func (r *wreader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.off = len(r.b)
}

func (r *wreader) byte() byte {
	if r.off >= len(r.b) {
		r.fail(errTruncated)
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *wreader) bytes(n int64) []byte {
	if n < 0 || n > int64(len(r.b)-r.off) {
		r.fail(errTruncated)
		return nil
	}
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return s
}

// u32 reads an unsigned LEB128 of at most 5 bytes that fits 32 bits.
func (r *wreader) u32() uint32 {
	var v uint32
	for i := 0; i < 5; i++ {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		if i == 4 && c > 0x0f {
			r.fail(errors.New("u32 out of range"))
			return 0
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v
		}
	}
	r.fail(errors.New("u32 too long"))
	return 0
}

// sleb skips a signed LEB128 of at most max bytes.
func (r *wreader) sleb(max int) {
	for i := 0; i < max; i++ {
		c := r.byte()
		if r.err != nil {
			return
		}
		if c&0x80 == 0 {
			return
		}
	}
	r.fail(errors.New("signed LEB128 too long"))
}

func (r *wreader) name() string {
	n := r.u32()
	return string(r.bytes(int64(n)))
}

func (r *wreader) limits() {
	switch flag := r.byte(); flag {
	case 0x00:
		r.u32()
	case 0x01:
		r.u32()
		r.u32()
	default:
		r.fail(fmt.Errorf("limits flag %#x", flag))
	}
}

// zero reads the reserved zero byte of memory instructions.
func (r *wreader) zero() {
	if c := r.byte(); c != 0 && r.err == nil {
		r.fail(fmt.Errorf("reserved byte %#x", c))
	}
}

// blockType reads the empty type, a value type, or a type index (a
// non-negative s33) under types.
func (r *wreader) blockType(types uint32) {
	if r.off >= len(r.b) {
		r.fail(errTruncated)
		return
	}
	switch r.b[r.off] {
	case 0x40, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		r.off++
		return
	}
	var v int64
	for i := 0; i < 5; i++ {
		c := r.byte()
		if r.err != nil {
			return
		}
		v |= int64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if c&0x40 != 0 { // negative: not a type index
				r.fail(fmt.Errorf("block type %#x", c))
			} else if v >= int64(types) {
				r.fail(fmt.Errorf("block type index %d out of range (%d)", v, types))
			}
			return
		}
	}
	r.fail(errors.New("block type too long"))
}

// memarg reads an alignment and an offset; an alignment that names a
// memory index (multi-memory) is refused.
func (r *wreader) memarg() {
	if align := r.u32(); align >= 64 && r.err == nil {
		r.fail(fmt.Errorf("memarg alignment %d", align))
	}
	r.u32()
}

// simdOp reads a 0xfd instruction (fixed-width SIMD).
func (r *wreader) simdOp() {
	switch sub := r.u32(); {
	case r.err != nil:
	case sub <= 11, sub == 92, sub == 93: // loads, store, load_zero
		r.memarg()
	case sub == 12, sub == 13: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 21 && sub <= 34: // extract_lane, replace_lane
		r.byte()
	case sub >= 84 && sub <= 91: // load_lane, store_lane
		r.memarg()
		r.byte()
	case sub <= 255:
		// Every other SIMD instruction has no immediate. (Opcodes the
		// proposal left unassigned fail wazero's validation.)
	default:
		r.fail(fmt.Errorf("opcode 0xfd %d", sub))
	}
}

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendName(b []byte, s string) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}
