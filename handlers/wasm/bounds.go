package wasm

import (
	"errors"
	"fmt"
)

// Bounding what a module can name.
//
// Everything a module declares costs the host memory or time before any of
// its code runs: wazero decodes every local of every function into a slice,
// its compiler allocates per local and per instruction, a table is a slice
// of 8-byte references that neither the memory limit nor the host's budget
// would otherwise see, and each call's stack frame holds the function's
// locals. So before anything else reads a module — the validator, the
// instrumenter, the compiler — scanModule reads its section headers and
// counts, and checkBounds refuses a module that names more than its Limits
// allow, with the count, the limit and the configuration key that raises
// it. The tables a module declares are then bounded in the binary itself
// (boundTables), so that wazero enforces what the host counted.

// Limits bound what a module can name, checked from its sections before it
// is compiled. The zero value of a field means its default (DefaultLimits).
type Limits struct {
	// Functions bounds the functions a module imports and defines
	// (config key limits.functions).
	Functions int64
	// Locals bounds the parameters and locals of one function
	// (limits.locals): a call's stack frame holds them all.
	Locals int64
	// TotalLocals bounds the locals of all the functions together
	// (limits.total_locals): the compiler decodes every one.
	TotalLocals int64
	// TableElements bounds the elements of all the module's tables
	// together, at their maximum size (limits.table_elements). A table
	// element takes 8 bytes, counted in the module's MemoryLimit.
	TableElements int64
	// Globals bounds the globals a module imports and defines
	// (limits.globals).
	Globals int64
	// DataSegments and ElementSegments bound the segments of the data and
	// element sections (limits.data_segments, limits.element_segments).
	DataSegments    int64
	ElementSegments int64
	// CodeBytes bounds the size of the code section, the functions' bodies
	// together (limits.code_bytes): compiling takes time and memory in
	// proportion to it.
	CodeBytes int64
}

// DefaultLimits are the defaults of Limits: several times what the largest
// handlers built by the supported toolchains name (a Go handler: about
// 3,000 functions, 80 locals in its largest function, 2.5 MiB of code).
var DefaultLimits = Limits{
	Functions:       100_000,
	Locals:          50_000,
	TotalLocals:     4_000_000,
	TableElements:   1 << 20,
	Globals:         100_000,
	DataSegments:    100_000,
	ElementSegments: 100_000,
	CodeBytes:       32 << 20,
}

// withDefaults returns l with each zero or negative field set to its
// default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	for _, f := range []struct{ v, def *int64 }{
		{&l.Functions, &d.Functions}, {&l.Locals, &d.Locals}, {&l.TotalLocals, &d.TotalLocals},
		{&l.TableElements, &d.TableElements}, {&l.Globals, &d.Globals},
		{&l.DataSegments, &d.DataSegments}, {&l.ElementSegments, &d.ElementSegments},
		{&l.CodeBytes, &d.CodeBytes},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	return l
}

// maxTables bounds the tables of a module: each costs the host a table
// instance whatever its size.
const maxTables = 100

// tableElementBytes is what wazero keeps per table element: a reference,
// one machine word.
const tableElementBytes = 8

// table is a table the module defines.
type table struct {
	min    uint32
	max    uint32 // meaningful when hasMax
	hasMax bool
}

// shape is what scanModule reads of a module: its sections and counts.
type shape struct {
	sections []section

	types       []funcType
	funcTypes   []uint32 // type index of each function, imported first
	importFuncs uint32
	importGlobs uint32
	globals     uint32 // imported and defined
	tables      []table
	tableBounds []uint32 // set by boundTables
	memories    uint32
	elements    uint32
	data        uint32
	dataCount   bool
	hasStart    bool
	codeBytes   int64
	// locals of each defined function, its parameters included.
	locals      []uint32
	totalLocals int64
}

// funcType is a function type's arity.
type funcType struct{ params, results uint32 }

type section struct {
	id      byte
	content []byte
}

// moduleError is a module scanModule or checkBounds refuses.
type moduleError struct{ msg string }

func (e *moduleError) Error() string { return e.msg }

func malformed(format string, args ...any) error {
	return &moduleError{"malformed module: " + fmt.Sprintf(format, args...)}
}

// scanModule reads bin's sections and counts. It reads every section's
// vector headers and the local declarations of every function body, and
// nothing inside the bodies; it allocates in proportion to the counts it
// has checked against lim (the caller's bounds), never to a count it has
// only read.
func scanModule(bin []byte, lim Limits) (*shape, error) {
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" {
		return nil, malformed("not a WebAssembly binary (no \\0asm magic)")
	}
	if string(bin[4:8]) != "\x01\x00\x00\x00" {
		return nil, malformed("WebAssembly binary version %x, want 1", bin[4:8])
	}
	s := &shape{}
	r := &wreader{b: bin, off: 8}
	lastRank := 0
	for r.off < len(r.b) {
		id := r.byte()
		n := r.u32()
		content := r.bytes(int64(n))
		if r.err != nil {
			return nil, malformed("section header at byte %d: %v", r.off, r.err)
		}
		if id != secCustom {
			if int(id) >= len(sectionRank) || sectionRank[id] == 0 {
				return nil, malformed("unknown section id %d", id)
			}
			if sectionRank[id] <= lastRank {
				return nil, malformed("section %d out of order or repeated", id)
			}
			lastRank = sectionRank[id]
		}
		s.sections = append(s.sections, section{id, content})
		if err := s.scanSection(id, content, lim); err != nil {
			return nil, err
		}
	}
	if defined := uint32(len(s.funcTypes)) - s.importFuncs; defined != uint32(len(s.locals)) {
		return nil, malformed("%d functions declared, %d bodies", defined, len(s.locals))
	}
	return s, nil
}

// count reads a vector's length and checks it against limit, naming what
// it counts and the configuration key.
func count(r *wreader, what string, have uint32, limit int64, key string) (uint32, error) {
	n := r.u32()
	if r.err != nil {
		return 0, malformed("%s: %v", what, r.err)
	}
	if int64(have)+int64(n) > limit {
		return 0, overLimit(what, int64(have)+int64(n), limit, key)
	}
	return n, nil
}

func overLimit(what string, n, limit int64, key string) error {
	return &moduleError{fmt.Sprintf("the module has %d %s, over the limit of %d (%s)", n, what, limit, key)}
}

func (s *shape) scanSection(id byte, content []byte, lim Limits) error {
	r := &wreader{b: content}
	var err error
	switch id {
	case secCustom:
		r.name()
		r.off = len(r.b)
	case secType:
		err = s.scanTypes(r, lim)
	case secImport:
		err = s.scanImports(r, lim)
	case secFunction:
		var n uint32
		if n, err = count(r, "functions", uint32(len(s.funcTypes)), lim.Functions, "limits.functions"); err != nil {
			return err
		}
		for i := uint32(0); i < n && r.err == nil; i++ {
			s.funcTypes = append(s.funcTypes, s.typeIndex(r))
		}
	case secTable:
		var n uint32
		if n, err = count(r, "tables", uint32(len(s.tables)), maxTables, "a fixed limit"); err != nil {
			return err
		}
		for i := uint32(0); i < n && r.err == nil; i++ {
			r.byte() // reference type
			s.tables = append(s.tables, r.tableLimits())
		}
	case secMemory:
		n := r.u32()
		if s.memories+n > 1 && r.err == nil {
			return malformed("%d memories; WebAssembly 2.0 allows one", s.memories+n)
		}
		s.memories += n
		for i := uint32(0); i < n && r.err == nil; i++ {
			r.limits()
		}
	case secGlobal:
		var n uint32
		if n, err = count(r, "globals", s.globals, lim.Globals, "limits.globals"); err != nil {
			return err
		}
		s.globals += n
		r.off = len(r.b) // global entries are read by the validator
	case secStart:
		s.hasStart = true
		r.off = len(r.b)
	case secElement:
		if s.elements, err = count(r, "element segments", 0, lim.ElementSegments, "limits.element_segments"); err != nil {
			return err
		}
		r.off = len(r.b)
	case secDataCount:
		if _, err = count(r, "data segments", 0, lim.DataSegments, "limits.data_segments"); err != nil {
			return err
		}
		s.dataCount = true
	case secCode:
		err = s.scanCode(r, lim)
	case secData:
		if s.data, err = count(r, "data segments", 0, lim.DataSegments, "limits.data_segments"); err != nil {
			return err
		}
		r.off = len(r.b)
	default:
		r.off = len(r.b)
	}
	if err != nil {
		return err
	}
	if r.err == nil && r.off != len(r.b) {
		r.err = errors.New("trailing bytes")
	}
	if r.err != nil {
		return malformed("section %d: %v", id, r.err)
	}
	return nil
}

func (s *shape) scanTypes(r *wreader, lim Limits) error {
	// A type takes at least three bytes, so the section's size bounds the
	// count before anything is allocated for it.
	n := r.u32()
	if r.err != nil || int64(n) > int64(len(r.b))/3 {
		return malformed("type section: %d types in %d bytes", n, len(r.b))
	}
	s.types = make([]funcType, 0, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		if form := r.byte(); form != 0x60 && r.err == nil {
			return malformed("type %d: form %#x, want a function type (0x60)", i, form)
		}
		var ft funcType
		ft.params = r.u32()
		r.bytes(int64(ft.params))
		ft.results = r.u32()
		r.bytes(int64(ft.results))
		if ft.params > uint32(lim.Locals) && r.err == nil {
			return overLimit(fmt.Sprintf("parameters in type %d", i), int64(ft.params), lim.Locals, "limits.locals")
		}
		s.types = append(s.types, ft)
	}
	return nil
}

// typeIndex reads a type index and checks it is in range.
func (s *shape) typeIndex(r *wreader) uint32 {
	t := r.u32()
	if r.err == nil && t >= uint32(len(s.types)) {
		r.fail(fmt.Errorf("type index %d out of range (%d types)", t, len(s.types)))
	}
	return t
}

func (s *shape) scanImports(r *wreader, lim Limits) error {
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		mod, name := r.name(), r.name()
		switch kind := r.byte(); kind {
		case 0x00: // func
			if int64(len(s.funcTypes))+1 > lim.Functions {
				return overLimit("functions", int64(len(s.funcTypes))+1, lim.Functions, "limits.functions")
			}
			s.funcTypes = append(s.funcTypes, s.typeIndex(r))
			s.importFuncs++
		case 0x01: // table
			return &moduleError{fmt.Sprintf("imports table %s.%s; the host provides no tables", mod, name)}
		case 0x02: // memory
			r.limits()
			s.memories++
		case 0x03: // global
			r.byte()
			r.byte()
			if int64(s.globals)+1 > lim.Globals {
				return overLimit("globals", int64(s.globals)+1, lim.Globals, "limits.globals")
			}
			s.globals++
			s.importGlobs++
		default:
			if r.err == nil {
				return malformed("import %s.%s of kind %#x", mod, name, kind)
			}
		}
	}
	return nil
}

// scanCode reads the code section's bodies' sizes and local declarations.
func (s *shape) scanCode(r *wreader, lim Limits) error {
	if int64(len(r.b)) > lim.CodeBytes {
		return &moduleError{fmt.Sprintf("the module's code is %d bytes, over the limit of %d (limits.code_bytes)", len(r.b), lim.CodeBytes)}
	}
	s.codeBytes = int64(len(r.b))
	n := r.u32()
	if r.err != nil {
		return malformed("code section: %v", r.err)
	}
	if int64(n) != int64(len(s.funcTypes))-int64(s.importFuncs) {
		return malformed("%d function bodies for %d functions", n, len(s.funcTypes)-int(s.importFuncs))
	}
	s.locals = make([]uint32, 0, n)
	for i := uint32(0); i < n; i++ {
		size := r.u32()
		b := r.bytes(int64(size))
		if r.err != nil {
			return malformed("code section: function body %d: %v", i, r.err)
		}
		locals := int64(s.types[s.funcTypes[s.importFuncs+i]].params)
		br := &wreader{b: b}
		groups := br.u32()
		for g := uint32(0); g < groups && br.err == nil; g++ {
			locals += int64(br.u32())
			br.byte()
			if locals > lim.Locals {
				return overLimit(fmt.Sprintf("parameters and locals in function %d", s.importFuncs+i), locals, lim.Locals, "limits.locals")
			}
		}
		if br.err != nil {
			return malformed("function %d: locals: %v", s.importFuncs+i, br.err)
		}
		s.totalLocals += locals
		if s.totalLocals > lim.TotalLocals {
			return overLimit("locals in all functions", s.totalLocals, lim.TotalLocals, "limits.total_locals")
		}
		s.locals = append(s.locals, uint32(locals))
	}
	return nil
}

// tableLimits reads a table's limits.
func (r *wreader) tableLimits() table {
	switch flag := r.byte(); flag {
	case 0x00:
		return table{min: r.u32()}
	case 0x01:
		t := table{min: r.u32(), hasMax: true}
		t.max = r.u32()
		return t
	default:
		r.fail(fmt.Errorf("limits flag %#x", flag))
		return table{}
	}
}

// boundTables sets s.tableBounds: the elements each table can hold at
// most — its declared maximum, or its initial size when it declares none
// (such a table cannot grow), never more than limit — and returns their
// sum, which must fit limit.
func (s *shape) boundTables(limit int64) (int64, error) {
	s.tableBounds = make([]uint32, len(s.tables))
	var total int64
	for i, t := range s.tables {
		if t.hasMax && t.max < t.min {
			return 0, malformed("table %d: maximum %d under its minimum %d", i, t.max, t.min)
		}
		b := int64(t.min)
		if t.hasMax {
			b = max(int64(t.min), min(int64(t.max), limit))
		}
		s.tableBounds[i] = uint32(b)
		total += b
	}
	if total > limit {
		return 0, &moduleError{fmt.Sprintf("the module's tables hold %d elements, over the limit of %d (limits.table_elements)", total, limit)}
	}
	return total, nil
}

// tablesBounded reports whether every table of s already declares its
// bound as its maximum.
func (s *shape) tablesBounded() bool {
	for i, t := range s.tables {
		if !t.hasMax || t.max != s.tableBounds[i] {
			return false
		}
	}
	return true
}

// tableSection is the content of s's table section with each table's
// maximum set to its bound, so that table.grow can never pass what the
// host counted.
func tableSection(s *shape) []byte {
	c := appendU32(nil, uint32(len(s.tables)))
	for _, sec := range s.sections {
		if sec.id != secTable {
			continue
		}
		r := &wreader{b: sec.content}
		n := r.u32()
		for i := uint32(0); i < n; i++ {
			c = append(c, r.byte()) // reference type
			t := r.tableLimits()
			c = appendU32(appendU32(append(c, 0x01), t.min), s.tableBounds[i])
		}
	}
	return c
}

// withBoundedTables returns bin (of shape s) with its table section
// written by tableSection; bin itself when that changes nothing.
func withBoundedTables(bin []byte, s *shape) []byte {
	if s.tablesBounded() {
		return bin
	}
	out := make([]byte, 0, len(bin)+8*len(s.tables))
	out = append(out, bin[:8]...)
	for _, sec := range s.sections {
		content := sec.content
		if sec.id == secTable {
			content = tableSection(s)
		}
		out = append(out, sec.id)
		out = appendU32(out, uint32(len(content)))
		out = append(out, content...)
	}
	return out
}
