package guest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The SDK's own JSON decoder for the ABI's inputs (the envelopes and the
// request types of types.go). It reads the bytes once, without
// reflection, and decodes what encoding/json decodes for the same types:
// the input must be valid JSON as a whole; keys match their field exactly
// or, failing that, case-insensitively; unknown keys are skipped; null
// leaves a string, number, bool or struct as it is and sets a pointer,
// slice or map to nil (a json.RawMessage keeps "null"); strings with
// invalid UTF-8 or unpaired surrogates get U+FFFD. A value of the wrong
// type is an error. Under Wasm, where every function entry and loop back
// edge of the guest is checked for the deadline, this costs a small
// fraction of encoding/json's reflection.

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// decoder reads one JSON text.
type decoder struct {
	data    []byte
	i       int
	depth   int
	scratch []byte // unescaped strings; valid until the next string
	// escaped says the last string read by str was unescaped into
	// scratch, not the input's own bytes.
	escaped bool
	// where names the value being decoded, for error messages.
	where string
	// arena is the call's memory for the first properties and strings of
	// the request (see callArena); nil outside a call.
	arena *callArena
}

// arenaInput is the largest input copied into the call's arena.
const arenaInput = 256

// callArena is memory for one call's request, in one allocation where
// there would be three: the copy of the input when it fits, the first
// properties of a form and the first array of strings (a form's required
// fields, typically). Under Wasm an allocation costs a Go guest a few
// microseconds once the round trip has left its caches cold. What a
// handler keeps of the request keeps the arena alive, a few hundred
// bytes.
type callArena struct {
	props     [1]Property
	strs      [2]string
	propsUsed bool
	strsUsed  bool
	input     [arenaInput]byte
}

// arenaProps returns the arena's properties, empty, once per call; nil
// when there are none.
func (d *decoder) arenaProps() Properties {
	if d.arena == nil || d.arena.propsUsed {
		return nil
	}
	d.arena.propsUsed = true
	return d.arena.props[:0:len(d.arena.props)]
}

// arenaStrings returns the arena's strings, empty, once per call; nil when
// there are none.
func (d *decoder) arenaStrings() []string {
	if d.arena == nil || d.arena.strsUsed {
		return nil
	}
	d.arena.strsUsed = true
	return d.arena.strs[:0:len(d.arena.strs)]
}

var errEnd = errors.New("unexpected end of JSON input")

// done is end after a value was read without error.
func (d *decoder) done(err error) error {
	if err != nil {
		return err
	}
	return d.end()
}

// end checks that nothing but white space follows the value read.
func (d *decoder) end() error {
	d.ws()
	if d.i < len(d.data) {
		return d.syntax("after top-level value")
	}
	return nil
}

func (d *decoder) syntax(what string) error {
	if d.i >= len(d.data) {
		return errEnd
	}
	return fmt.Errorf("invalid character %q %s (offset %d)", d.data[d.i], what, d.i)
}

// kind names the JSON value at the cursor, as encoding/json does.
func (d *decoder) kind() string {
	if d.i >= len(d.data) {
		return "nothing"
	}
	switch d.data[d.i] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

func (d *decoder) ws() {
	if d.i < len(d.data) && d.data[d.i] > ' ' {
		return // the common case, without entering the loop
	}
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) peek() byte {
	if d.i < len(d.data) {
		return d.data[d.i]
	}
	return 0
}

func (d *decoder) literal(lit string) error {
	if len(d.data)-d.i < len(lit) {
		d.i = len(d.data)
		return errEnd
	}
	for k := 0; k < len(lit); k++ {
		if d.data[d.i] != lit[k] {
			return d.syntax("in literal " + lit)
		}
		d.i++
	}
	return nil
}

// open starts reading an object into a struct: false, and no error, for
// null, which leaves the struct as it is; a type error for anything but
// an object (name is the struct's type).
func (d *decoder) open(name string) (bool, error) {
	switch d.peek() {
	case '{':
		return true, d.openObject()
	case 'n':
		return false, d.literal("null")
	}
	kind := d.kind()
	if err := d.skip(); err != nil {
		return false, err
	}
	return false, fmt.Errorf("cannot unmarshal %s into Go value of type %s", kind, name)
}

// openObject consumes the '{' at the cursor.
func (d *decoder) openObject() error {
	d.depth++
	if d.depth > maxDepth {
		return errors.New("exceeded max depth")
	}
	d.i++
	d.ws()
	return nil
}

// key reads the next key of the object being read, leaving the cursor on
// its value, which the caller must consume; more is false at the end of
// the object. first is true for the first call after openObject.
func (d *decoder) key(first bool) (key []byte, more bool, err error) {
	d.ws()
	switch c := d.peek(); {
	case c == '}':
		d.i++
		d.depth--
		return nil, false, nil
	case !first:
		if c != ',' {
			return nil, false, d.syntax("after object key:value pair")
		}
		d.i++
		d.ws()
	}
	if d.peek() != '"' {
		return nil, false, d.syntax("looking for beginning of object key string")
	}
	if key, err = d.str(); err != nil {
		return nil, false, err
	}
	d.ws()
	if d.peek() != ':' {
		return nil, false, d.syntax("after object key")
	}
	d.i++
	d.ws()
	return key, true, nil
}

// openArray consumes the '[' at the cursor.
func (d *decoder) openArray() error { return d.openObject() }

// next moves to the next element of the array being read; more is false
// at the end of the array.
func (d *decoder) next(first bool) (more bool, err error) {
	d.ws()
	switch c := d.peek(); {
	case c == ']':
		d.i++
		d.depth--
		return false, nil
	case !first:
		if c != ',' {
			return false, d.syntax("after array element")
		}
		d.i++
		d.ws()
	}
	return true, nil
}

// skip checks and skips one value.
func (d *decoder) skip() error {
	switch d.peek() {
	case '{':
		if err := d.openObject(); err != nil {
			return err
		}
		for first := true; ; first = false {
			_, more, err := d.key(first)
			if err != nil || !more {
				return err
			}
			if err := d.skip(); err != nil {
				return err
			}
		}
	case '[':
		if err := d.openArray(); err != nil {
			return err
		}
		for first := true; ; first = false {
			more, err := d.next(first)
			if err != nil || !more {
				return err
			}
			if err := d.skip(); err != nil {
				return err
			}
		}
	case '"':
		_, err := d.strRaw()
		return err
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	}
	_, err := d.number()
	return err
}

// number checks and returns a number literal.
func (d *decoder) number() ([]byte, error) {
	start := d.i
	data := d.data
	i := d.i
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		d.i = i
		return nil, errEnd
	case data[i] == '0':
		i++
	case data[i] >= '1' && data[i] <= '9':
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	default:
		d.i = i
		return nil, d.syntax("looking for beginning of value")
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			d.i = i
			return nil, d.syntax("after decimal point in numeric literal")
		}
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			d.i = i
			return nil, d.syntax("in exponent of numeric literal")
		}
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	d.i = i
	return data[start:i], nil
}

// strRaw checks and skips a string, returning its bytes between the
// quotes, escapes not interpreted.
func (d *decoder) strRaw() ([]byte, error) {
	data := d.data
	start := d.i + 1
	for i := start; i < len(data); i++ {
		i = plain(data, i)
		if i >= len(data) {
			break
		}
		switch c := data[i]; {
		case c == '"':
			d.i = i + 1
			return data[start:i], nil
		case c < 0x20:
			d.i = i
			return nil, d.syntax("in string literal")
		case c == '\\':
			i++
			if i >= len(data) {
				d.i = i
				return nil, errEnd
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(data)-i < 5 {
					d.i = len(data)
					return nil, errEnd
				}
				if _, ok := hex4(data[i+1:]); !ok {
					d.i = i + 1
					return nil, d.syntax("in \\u hexadecimal character escape")
				}
				i += 4
			default:
				d.i = i
				return nil, d.syntax("in string escape code")
			}
		}
	}
	d.i = len(data)
	return nil, errEnd
}

// Bytes of a word, for finding bytes eight at a time.
const (
	lsbs = 0x0101010101010101
	msbs = 0x8080808080808080
)

// plain returns the index of the first byte from i on that may end a run
// of plain string bytes: '"', '\\', a control character or a byte of a
// multi-byte UTF-8 sequence. It reads eight bytes at a time while eight
// remain, and on a little-endian machine (Wasm is one) returns the exact
// index of the first such byte in them (the lowest bit of the mask is
// exact: a borrow only carries towards higher addresses); otherwise, and
// in the last seven bytes, it returns an index at or before that byte. Under Wasm
// a loop iteration of Go code costs about ten cycles (a jump back to the
// function's dispatch loop, and a fuel check when the module is
// instrumented), so finding the byte without a loop matters more than it
// would natively.
// littleEndian says the machine stores the least significant byte of a
// word first.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

func plain(data []byte, i int) int {
	for i+8 <= len(data) {
		w := *(*uint64)(unsafe.Pointer(&data[i]))
		q := w ^ (lsbs * '"')
		b := w ^ (lsbs * '\\')
		if m := ((q-lsbs)&^q | (b-lsbs)&^b | (w - lsbs*0x20) | w) & msbs; m != 0 {
			if littleEndian {
				return i + bits.TrailingZeros64(m)/8
			}
			return i
		}
		i += 8
	}
	return i
}

// str reads a string and returns it unescaped: the input's own bytes when
// there is nothing to unescape, else d.scratch; valid until the next str.
func (d *decoder) str() ([]byte, error) {
	data := d.data
	start := d.i + 1
	i := plain(data, start)
	for i < len(data) {
		c := data[i]
		if c == '"' {
			d.i = i + 1
			d.escaped = false
			return data[start:i], nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		i++
	}
	buf := append(d.scratch[:0], data[start:i]...)
	for i < len(data) {
		c := data[i]
		switch {
		case c == '"':
			d.i = i + 1
			d.scratch = buf
			d.escaped = true
			return buf, nil
		case c < 0x20:
			d.i = i
			return nil, d.syntax("in string literal")
		case c == '\\':
			if i+1 >= len(data) {
				d.i = len(data)
				return nil, errEnd
			}
			switch e := data[i+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				if len(data)-i < 6 {
					d.i = len(data)
					return nil, errEnd
				}
				r, ok := hex4(data[i+2:])
				if !ok {
					d.i = i + 2
					return nil, d.syntax("in \\u hexadecimal character escape")
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if len(data)-i >= 6 && data[i] == '\\' && data[i+1] == 'u' {
						if r2, ok := hex4(data[i+2:]); ok {
							if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
								i += 6
								buf = utf8.AppendRune(buf, dec)
								continue
							}
						}
					}
					r = unicode.ReplacementChar
				}
				buf = utf8.AppendRune(buf, r)
				continue
			default:
				d.i = i + 1
				return nil, d.syntax("in string escape code")
			}
			i += 2
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				buf = utf8.AppendRune(buf, utf8.RuneError)
			} else {
				buf = append(buf, data[i:i+size]...)
			}
			i += size
		}
	}
	d.i = len(data)
	return nil, errEnd
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	return r, true
}

// match returns the index of the field name key stands for: the exact
// name, else a case-insensitive match (encoding/json's rule), else -1.
func match(key []byte, names []string) int {
	for i, n := range names {
		if string(key) == n {
			return i
		}
	}
	for i, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return i
		}
	}
	return -1
}

// Typed values. Each takes the cursor on the value and consumes it.

func (d *decoder) stringField(dst *string, field string) error {
	switch d.peek() {
	case '"':
		b, err := d.str()
		if err != nil {
			return err
		}
		*dst = d.string(b)
		return nil
	case 'n':
		return d.literal("null")
	}
	return d.mismatch("string", field)
}

// mismatch is a type error for the value at the cursor, after checking
// that it is valid JSON (encoding/json reports bad syntax first).
func (d *decoder) mismatch(want, field string) error {
	kind := d.kind()
	if err := d.skip(); err != nil {
		return err
	}
	return fmt.Errorf("cannot unmarshal %s into %s.%s of type %s", kind, d.where, field, want)
}

func (d *decoder) floatField(dst *float64, field string) error {
	switch c := d.peek(); {
	case c == 'n':
		return d.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		lit, err := d.number()
		if err != nil {
			return err
		}
		f, err := strconv.ParseFloat(string(lit), 64)
		if err != nil {
			return fmt.Errorf("cannot unmarshal number %s into %s.%s of type float64", lit, d.where, field)
		}
		*dst = f
		return nil
	}
	return d.mismatch("float64", field)
}

func (d *decoder) floatPtrField(dst **float64, field string) error {
	if d.peek() == 'n' {
		*dst = nil
		return d.literal("null")
	}
	if *dst == nil {
		var f float64
		if c := d.peek(); c != '-' && (c < '0' || c > '9') {
			return d.mismatch("float64", field)
		}
		if err := d.floatField(&f, field); err != nil {
			return err
		}
		*dst = &f
		return nil
	}
	return d.floatField(*dst, field)
}

func (d *decoder) intField(dst *int, field string) error {
	switch c := d.peek(); {
	case c == 'n':
		return d.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		lit, err := d.number()
		if err != nil {
			return err
		}
		n, err := strconv.ParseInt(string(lit), 10, strconv.IntSize)
		if err != nil {
			return fmt.Errorf("cannot unmarshal number %s into %s.%s of type int", lit, d.where, field)
		}
		*dst = int(n)
		return nil
	}
	return d.mismatch("int", field)
}

// rawField sets *dst to the value at the cursor, sharing the input's
// memory (capacity cut to the value, so an append copies).
func (d *decoder) rawField(dst *json.RawMessage) error {
	start := d.i
	if err := d.skip(); err != nil {
		return err
	}
	*dst = d.data[start:d.i:d.i]
	return nil
}

// string returns b, just read by str, as a string: one that shares the
// input's memory when b is the input's own bytes. The input must then
// never change while the string is in use: dispatch gives the decoder a
// copy of the call's input that nothing else writes.
func (d *decoder) string(b []byte) string {
	if d.escaped || len(b) == 0 {
		return string(b)
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// rawValue returns the value at the cursor without copying.
func (d *decoder) rawValue() ([]byte, error) {
	start := d.i
	if err := d.skip(); err != nil {
		return nil, err
	}
	return d.data[start:d.i], nil
}

// Arrays are decoded into slices as encoding/json decodes them: elements
// already in the slice's backing array are decoded into (not zeroed), the
// length is the array's, [] is an empty slice and null is nil. The loop:
//
//	if done, err := d.openSlice(dst, want, field); done || err != nil { return err }
//	s, n := *dst, 0
//	for first := true; ; first = false {
//		more, err := d.next(first) …
//		s = grow(s, n); decode into &s[n]; n++
//	}
//	*dst = sliced(s, n)

// openSlice handles null and non-arrays (done), or opens the array.
func openSlice[T any](d *decoder, dst *[]T, want, field string) (done bool, err error) {
	switch d.peek() {
	case 'n':
		*dst = nil
		return true, d.literal("null")
	case '[':
		return false, d.openArray()
	}
	return true, d.mismatch(want, field)
}

// grow makes s[n] an element, reusing the backing array.
func grow[T any](s []T, n int) []T {
	if n < len(s) {
		return s
	}
	if n < cap(s) {
		return s[:n+1]
	}
	var zero T
	return append(s, zero)
}

// sliced is the slice of n decoded elements.
func sliced[T any](s []T, n int) []T {
	if n == 0 {
		return make([]T, 0)
	}
	return s[:n]
}

func (d *decoder) stringsField(dst *[]string, field string) error {
	if done, err := openSlice(d, dst, "[]string", field); done || err != nil {
		return err
	}
	s, n := *dst, 0
	if s == nil {
		s = d.arenaStrings()
	}
	for first := true; ; first = false {
		more, err := d.next(first)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		s = grow(s, n)
		if err := d.stringField(&s[n], field); err != nil {
			return err
		}
		n++
	}
	*dst = sliced(s, n)[:n:n] // an append copies, and never writes into the arena
	return nil
}

func (d *decoder) textsField(dst *[]TextContent) error {
	if done, err := openSlice(d, dst, "[]guest.TextContent", "content"); done || err != nil {
		return err
	}
	s, n := *dst, 0
	for first := true; ; first = false {
		more, err := d.next(first)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		s = grow(s, n)
		if c := d.peek(); c != '{' && c != 'n' {
			return d.mismatch("guest.TextContent", "content")
		}
		if err := s[n].decodeJSON(d); err != nil {
			return err
		}
		n++
	}
	*dst = sliced(s, n)
	return nil
}

func (d *decoder) messagesField(dst *[]SamplingMessage) error {
	if done, err := openSlice(d, dst, "[]guest.SamplingMessage", "messages"); done || err != nil {
		return err
	}
	s, n := *dst, 0
	for first := true; ; first = false {
		more, err := d.next(first)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		s = grow(s, n)
		if c := d.peek(); c != '{' && c != 'n' {
			return d.mismatch("guest.SamplingMessage", "messages")
		}
		if err := s[n].decodeJSON(d); err != nil {
			return err
		}
		d.where = "SamplingRequest"
		n++
	}
	*dst = sliced(s, n)
	return nil
}

// The ABI's envelopes and the request types. Each decodeJSON reads a
// struct from the cursor, as json.Unmarshal into it would.

var requestFields = []string{"method", "params"}

// request reads snodo_handle's input and returns the method's handler with
// its request decoded (nil when no handler answers the method). When the
// method comes before the params, as the host writes them, the params are
// decoded in place as they are read; otherwise they are decoded once the
// envelope has been read. An error with a nil handler is the envelope's,
// with a handler the params'.
func (d *decoder) request() (h handler, method string, err error) {
	d.where = "abi.Request"
	d.ws()
	var (
		raw      []byte  // the last params value
		inPlace  handler // the handler the last params were decoded into
		paramErr error   // the error of that decoding
	)
	ok, err := d.open("abi.Request")
	for first := ok; ok && err == nil; first = false {
		var key []byte
		if key, ok, err = d.key(first); !ok || err != nil {
			break
		}
		switch match(key, requestFields) {
		case 0:
			err = d.stringField(&method, "method")
			inPlace, paramErr = nil, nil
		case 1:
			start, depth := d.i, d.depth
			inPlace, paramErr = handlerFor(method), nil
			if inPlace == nil {
				err = d.skip()
			} else {
				inPlace.reset()
				if paramErr = inPlace.decode(d); paramErr != nil {
					// Check the rest of the value: bad syntax anywhere
					// is the envelope's error, as in encoding/json.
					d.i, d.depth = start, depth
					err = d.skip()
				}
				d.where = "abi.Request"
			}
			raw = d.data[start:d.i:d.i]
		default:
			err = d.skip()
		}
	}
	if err == nil {
		err = d.end()
	}
	if err != nil {
		return nil, method, err
	}
	if inPlace != nil {
		// The method has not changed since the params were decoded.
		return inPlace, method, paramErr
	}
	if h = handlerFor(method); h == nil {
		return nil, method, nil
	}
	h.reset()
	if len(raw) > 0 {
		pd := &decoder{data: raw}
		pd.ws()
		if err := pd.done(h.decode(pd)); err != nil {
			return h, method, err
		}
	}
	return h, method, nil
}

// decodeProgressEnvelope reads snodo_progress's input; params is a slice
// of it.
func decodeProgressEnvelope(input []byte) (params []byte, err error) {
	d := decoder{data: input, where: "abi.Progress"}
	d.ws()
	ok, err := d.open("abi.Progress")
	for first := ok; ok && err == nil; first = false {
		var key []byte
		if key, ok, err = d.key(first); !ok || err != nil {
			break
		}
		if match(key, requestFields[1:]) == 0 {
			params, err = d.rawValue()
		} else {
			err = d.skip()
		}
	}
	if err == nil {
		err = d.end()
	}
	return params, err
}

// jsonDecoder is a type the SDK's decoder reads.
type jsonDecoder interface {
	decodeJSON(d *decoder) error
}

var elicitFields = []string{"mode", "message", "requestedSchema", "url", "elicitationId", "_meta"}

func (r *ElicitRequest) decodeJSON(d *decoder) error {
	d.where = "ElicitRequest"
	ok, err := d.open("guest.ElicitRequest")
	for first := ok; ok && err == nil; first = false {
		var key []byte
		if key, ok, err = d.key(first); !ok || err != nil {
			break
		}
		switch match(key, elicitFields) {
		case 0:
			err = d.stringField(&r.Mode, "mode")
		case 1:
			err = d.stringField(&r.Message, "message")
		case 2:
			if c := d.peek(); c != '{' && c != 'n' {
				err = d.mismatch("guest.Schema", "requestedSchema")
			} else {
				err = r.RequestedSchema.decodeJSON(d)
				d.where = "ElicitRequest"
			}
		case 3:
			err = d.stringField(&r.URL, "url")
		case 4:
			err = d.stringField(&r.ElicitationID, "elicitationId")
		case 5:
			err = d.rawField(&r.Meta)
		default:
			err = d.skip()
		}
	}
	return err
}

var schemaFields = []string{"type", "properties", "required"}

func (s *Schema) decodeJSON(d *decoder) error {
	d.where = "Schema"
	ok, err := d.open("guest.Schema")
	for first := ok; ok && err == nil; first = false {
		var key []byte
		if key, ok, err = d.key(first); !ok || err != nil {
			break
		}
		switch match(key, schemaFields) {
		case 0:
			err = d.stringField(&s.Type, "type")
		case 1:
			err = s.decodeProperties(d)
		case 2:
			err = d.stringsField(&s.Required, "required")
		default:
			err = d.skip()
		}
	}
	return err
}

func (s *Schema) decodeProperties(d *decoder) error {
	switch d.peek() {
	case 'n':
		s.Properties = nil
		return d.literal("null")
	case '{':
	default:
		return d.mismatch("guest.Properties", "properties")
	}
	return s.Properties.decodeJSON(d)
}

// indexAt is the number of properties or fields from which a repeated
// name is looked up in a map, not by a scan of those before it.
const indexAt = 16

// decodeJSON reads the object at the cursor into ps, in order, as
// encoding/json reads an object into a map: the properties already in ps
// stay, and a name given again keeps its place and takes the new schema.
func (ps *Properties) decodeJSON(d *decoder) error {
	if err := d.openObject(); err != nil {
		return err
	}
	s := *ps
	if s == nil {
		if s = d.arenaProps(); s == nil {
			s = Properties{}
		}
	}
	var index map[string]int
	for first := true; ; first = false {
		key, more, err := d.key(first)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		name := d.string(key)
		if c := d.peek(); c != '{' && c != 'n' {
			return d.mismatch("guest.PropertySchema", "properties")
		}
		var p PropertySchema
		if err := p.decodeJSON(d); err != nil {
			return err
		}
		d.where = "Schema"
		if index == nil && len(s) >= indexAt {
			index = make(map[string]int, 2*len(s))
			for i := range s {
				if _, ok := index[s[i].Name]; !ok {
					index[s[i].Name] = i
				}
			}
		}
		at := -1
		if index != nil {
			if i, ok := index[name]; ok {
				at = i
			}
		} else {
			for i := range s {
				if s[i].Name == name {
					at = i
					break
				}
			}
		}
		if at >= 0 {
			s[at].PropertySchema = p
			continue
		}
		s = append(s, Property{Name: name, PropertySchema: p})
		if index != nil {
			index[name] = len(s) - 1
		}
	}
	*ps = s[:len(s):len(s)] // an append copies, and never writes into the arena
	return nil
}

// UnmarshalJSON reads a JSON object into ps, in order (encoding/json calls
// it; the SDK decodes requests without it).
func (ps *Properties) UnmarshalJSON(b []byte) error {
	d := decoder{data: bytes.Clone(b), where: "Schema"}
	d.ws()
	if d.peek() == 'n' {
		return d.done(d.literal("null"))
	}
	if d.peek() != '{' {
		return d.done(d.mismatch("guest.Properties", "properties"))
	}
	return d.done(ps.decodeJSON(&d))
}

// UnmarshalJSON reads a JSON object into fs, in order: a string is a
// String field, an integer that fits an int64 an Integer, any other number
// a Number, true and false a Bool, an array of strings a Strings, and null
// the zero Value.
func (fs *Fields) UnmarshalJSON(b []byte) error {
	d := decoder{data: bytes.Clone(b), where: "Fields"}
	d.ws()
	switch d.peek() {
	case 'n':
		*fs = nil
		return d.done(d.literal("null"))
	case '{':
	default:
		return d.done(d.mismatch("guest.Fields", "content"))
	}
	if err := d.openObject(); err != nil {
		return err
	}
	s := Fields{}
	for first := true; ; first = false {
		key, more, err := d.key(first)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		f := Field{Name: d.string(key)}
		if err := f.Value.decodeJSON(&d); err != nil {
			return err
		}
		s = append(s, f)
	}
	if err := d.end(); err != nil {
		return err
	}
	*fs = s
	return nil
}

// UnmarshalJSON reads a form value (see Fields.UnmarshalJSON).
func (v *Value) UnmarshalJSON(b []byte) error {
	d := decoder{data: bytes.Clone(b), where: "Fields"}
	d.ws()
	return d.done(v.decodeJSON(&d))
}

func (v *Value) decodeJSON(d *decoder) error {
	switch c := d.peek(); {
	case c == '"':
		b, err := d.str()
		if err != nil {
			return err
		}
		*v = Value{kind: KindString, s: d.string(b)}
		return nil
	case c == 't' || c == 'f':
		lit := "false"
		if c == 't' {
			lit = "true"
		}
		if err := d.literal(lit); err != nil {
			return err
		}
		*v = Bool("", c == 't').Value
		return nil
	case c == 'n':
		*v = Value{}
		return d.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		lit, err := d.number()
		if err != nil {
			return err
		}
		if n, err := strconv.ParseInt(string(lit), 10, 64); err == nil {
			*v = Integer("", n).Value
			return nil
		}
		f, err := strconv.ParseFloat(string(lit), 64)
		if err != nil {
			return fmt.Errorf("cannot unmarshal number %s into guest.Value", lit)
		}
		*v = Number("", f).Value
		return nil
	case c == '[':
		var list []string
		if err := d.stringsField(&list, "content"); err != nil {
			return err
		}
		*v = Strings("", list).Value
		return nil
	}
	return d.mismatch("guest.Value", "content")
}

var propertyFields = []string{"type", "title", "description", "default", "enum", "format", "minimum", "maximum"}

func (p *PropertySchema) decodeJSON(d *decoder) error {
	d.where = "PropertySchema"
	ok, err := d.open("guest.PropertySchema")
	for first := ok; ok && err == nil; first = false {
		var key []byte
		if key, ok, err = d.key(first); !ok || err != nil {
			break
		}
		switch match(key, propertyFields) {
		case 0:
			err = d.stringField(&p.Type, "type")
		case 1:
			err = d.stringField(&p.Title, "title")
		case 2:
			err = d.stringField(&p.Description, "description")
		case 3:
			err = d.rawField(&p.Default)
		case 4:
			err = d.stringsField(&p.Enum, "enum")
		case 5:
			err = d.stringField(&p.Format, "format")
		case 6:
			err = d.floatPtrField(&p.Minimum, "minimum")
		case 7:
			err = d.floatPtrField(&p.Maximum, "maximum")
		default:
			err = d.skip()
		}
	}
	return err
}

var samplingFields = []string{"messages", "systemPrompt", "maxTokens", "temperature", "stopSequences", "includeContext", "modelPreferences", "metadata", "_meta", "tools", "toolChoice"}

func (r *SamplingRequest) decodeJSON(d *decoder) error {
	d.where = "SamplingRequest"
	ok, err := d.open("guest.SamplingRequest")
	for first := ok; ok && err == nil; first = false {
		var key []byte
		if key, ok, err = d.key(first); !ok || err != nil {
			break
		}
		switch match(key, samplingFields) {
		case 0:
			err = d.messagesField(&r.Messages)
		case 1:
			err = d.stringField(&r.SystemPrompt, "systemPrompt")
		case 2:
			err = d.intField(&r.MaxTokens, "maxTokens")
		case 3:
			err = d.floatPtrField(&r.Temperature, "temperature")
		case 4:
			err = d.stringsField(&r.StopSequences, "stopSequences")
		case 5:
			err = d.stringField(&r.IncludeContext, "includeContext")
		case 6:
			err = d.rawField(&r.ModelPreferences)
		case 7:
			err = d.rawField(&r.Metadata)
		case 8:
			err = d.rawField(&r.Meta)
		case 9:
			err = d.rawField(&r.Tools)
		case 10:
			err = d.rawField(&r.ToolChoice)
		default:
			err = d.skip()
		}
	}
	return err
}

var messageFields = []string{"role", "content"}

func (m *SamplingMessage) decodeJSON(d *decoder) error {
	d.where = "SamplingMessage"
	ok, err := d.open("guest.SamplingMessage")
	for first := ok; ok && err == nil; first = false {
		var key []byte
		if key, ok, err = d.key(first); !ok || err != nil {
			break
		}
		switch match(key, messageFields) {
		case 0:
			err = d.stringField(&m.Role, "role")
		case 1:
			err = d.rawField(&m.Content)
		default:
			err = d.skip()
		}
	}
	return err
}

var metaFields = []string{"_meta"}

func (r *RootsRequest) decodeJSON(d *decoder) error {
	d.where = "RootsRequest"
	ok, err := d.open("guest.RootsRequest")
	for first := ok; ok && err == nil; first = false {
		var key []byte
		if key, ok, err = d.key(first); !ok || err != nil {
			break
		}
		if match(key, metaFields) == 0 {
			err = d.rawField(&r.Meta)
		} else {
			err = d.skip()
		}
	}
	return err
}

var textFields = []string{"type", "text"}

func (t *TextContent) decodeJSON(d *decoder) error {
	d.where = "TextContent"
	ok, err := d.open("guest.TextContent")
	for first := ok; ok && err == nil; first = false {
		var key []byte
		if key, ok, err = d.key(first); !ok || err != nil {
			break
		}
		switch match(key, textFields) {
		case 0:
			err = d.stringField(&t.Type, "type")
		case 1:
			err = d.stringField(&t.Text, "text")
		default:
			err = d.skip()
		}
	}
	return err
}

var progressFields = []string{"progressToken", "progress", "total", "message"}

func (p *Progress) decodeJSON(d *decoder) error {
	d.where = "Progress"
	ok, err := d.open("guest.Progress")
	for first := ok; ok && err == nil; first = false {
		var key []byte
		if key, ok, err = d.key(first); !ok || err != nil {
			break
		}
		switch match(key, progressFields) {
		case 0:
			err = d.rawField(&p.ProgressToken)
		case 1:
			err = d.floatField(&p.Progress, "progress")
		case 2:
			err = d.floatPtrField(&p.Total, "total")
		case 3:
			err = d.stringField(&p.Message, "message")
		default:
			err = d.skip()
		}
	}
	return err
}

func (e *Event) decodeJSON(d *decoder) error {
	d.where = "Event"
	ok, err := d.open("guest.Event")
	for first := ok; ok && err == nil; first = false {
		var key []byte
		if key, ok, err = d.key(first); !ok || err != nil {
			break
		}
		switch match(key, requestFields) {
		case 0:
			err = d.stringField(&e.Method, "method")
		case 1:
			err = d.rawField(&e.Params)
		default:
			err = d.skip()
		}
	}
	return err
}
