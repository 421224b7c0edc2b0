package guest

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// The SDK's own JSON encoder for the result types of types.go and the
// values found in them. It appends to a buffer the module reuses from call
// to call, without reflection, and writes what encoding/json.Marshal
// writes for the same values, byte for byte: the same field order and
// omitempty rules, map keys sorted, strings escaped for HTML (<, >, & as
// \u003c…) with U+2028, U+2029 and invalid UTF-8 replaced, and numbers
// formatted alike. A value of any type it does not know (a struct of the
// handler's own, a pointer, a json.Marshaler …) is encoded by
// encoding/json.

// jsonAppender is a type the SDK's encoder writes.
type jsonAppender interface {
	appendJSON(b []byte) ([]byte, error)
}

// appendAny appends any value: the types a handler's results usually hold
// directly, anything else through encoding/json.
func appendAny(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case float64:
		return appendFloat(b, x, 64, v)
	case float32:
		return appendFloat(b, float64(x), 32, v)
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case int32:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int16:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int8:
		return strconv.AppendInt(b, int64(x), 10), nil
	case uint:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint16:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint8:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case map[string]any:
		return appendMap(b, x)
	case map[string]string:
		if x == nil {
			return append(b, "null"...), nil
		}
		keys := sortedKeys(x)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, x[k])
		}
		return append(b, '}'), nil
	case []any:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendAny(b, e); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case []string:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, e)
		}
		return append(b, ']'), nil
	case TextContent:
		return x.appendJSON(b)
	case []TextContent:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b, _ = e.appendJSON(b)
		}
		return append(b, ']'), nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, out...), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appendMap(b []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '{')
	if len(m) == 1 {
		for k, v := range m {
			b = appendString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendAny(b, v); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	}
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendAny(b, m[k]); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendFloat formats f as encoding/json does; NaN and infinities are
// left to encoding/json for its error.
func appendFloat(b []byte, f float64, bits int, v any) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		_, err := json.Marshal(v)
		return b, err
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// e-09 → e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// htmlSafe marks the ASCII bytes a string holds as they are.
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// htmlSafeWord reports whether all eight bytes of w are htmlSafe.
func htmlSafeWord(w uint64) bool {
	q, b, l, g, a := w^(lsbs*'"'), w^(lsbs*'\\'), w^(lsbs*'<'), w^(lsbs*'>'), w^(lsbs*'&')
	m := (w - lsbs*0x20) | w | (q-lsbs)&^q | (b-lsbs)&^b | (l-lsbs)&^l | (g-lsbs)&^g | (a-lsbs)&^a
	return m&msbs == 0
}

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && htmlSafeWord(*(*uint64)(unsafe.Pointer(unsafe.StringData(s[i:])))) {
			i += 8
			continue
		}
		if c := s[i]; c < utf8.RuneSelf {
			if htmlSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func (r ElicitResult) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"action":`...)
	b = appendString(b, r.Action)
	if len(r.Content) > 0 {
		b = append(b, `,"content":`...)
		var err error
		if b, err = r.Content.appendJSON(b); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendJSON appends the fields as a JSON object, in their order; a name
// given twice is an error.
func (fs Fields) appendJSON(b []byte) ([]byte, error) {
	if fs == nil {
		return append(b, "null"...), nil
	}
	var index map[string]struct{}
	b = append(b, '{')
	for i := range fs {
		f := &fs[i]
		twice := false
		if i < indexAt {
			for j := range i {
				if fs[j].Name == f.Name {
					twice = true
					break
				}
			}
		} else {
			if index == nil {
				index = make(map[string]struct{}, len(fs))
				for _, g := range fs[:i] {
					index[g.Name] = struct{}{}
				}
			}
			_, twice = index[f.Name]
			index[f.Name] = struct{}{}
		}
		if twice {
			return b, fmt.Errorf("guest: content field %q given twice", f.Name)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, f.Name)
		b = append(b, ':')
		var err error
		if b, err = f.Value.appendJSON(b); err != nil {
			return b, fmt.Errorf("guest: content field %q: %w", f.Name, err)
		}
	}
	return append(b, '}'), nil
}

// appendJSON appends the value as JSON.
func (v Value) appendJSON(b []byte) ([]byte, error) {
	switch v.kind {
	case KindString:
		return appendString(b, v.s), nil
	case KindNumber:
		f := math.Float64frombits(v.n)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			_, err := json.Marshal(f)
			return b, err
		}
		return appendFloat(b, f, 64, nil)
	case KindInteger:
		return strconv.AppendInt(b, int64(v.n), 10), nil
	case KindBool:
		return strconv.AppendBool(b, v.n != 0), nil
	case KindStrings:
		b = append(b, '[')
		for i, e := range v.list {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, e)
		}
		return append(b, ']'), nil
	}
	return append(b, "null"...), nil
}

// MarshalJSON encodes the fields as a JSON object, as the SDK does (a name
// given twice is an error).
func (fs Fields) MarshalJSON() ([]byte, error) { return fs.appendJSON(nil) }

// MarshalJSON encodes the value.
func (v Value) MarshalJSON() ([]byte, error) { return v.appendJSON(nil) }

// MarshalJSON encodes the properties as a JSON object, in their order.
func (ps Properties) MarshalJSON() ([]byte, error) {
	if ps == nil {
		return []byte("null"), nil
	}
	b := []byte{'{'}
	for i := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, ps[i].Name)
		b = append(b, ':')
		s, err := json.Marshal(ps[i].PropertySchema)
		if err != nil {
			return nil, err
		}
		b = append(b, s...)
	}
	return append(b, '}'), nil
}

func (r SamplingResult) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"role":`...)
	b = appendString(b, r.Role)
	b = append(b, `,"content":`...)
	var err error
	if b, err = appendAny(b, r.Content); err != nil {
		return b, err
	}
	b = append(b, `,"model":`...)
	b = appendString(b, r.Model)
	if r.StopReason != "" {
		b = append(b, `,"stopReason":`...)
		b = appendString(b, r.StopReason)
	}
	return append(b, '}'), nil
}

func (r RootsResult) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"roots":`...)
	if r.Roots == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, root := range r.Roots {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"uri":`...)
			b = appendString(b, root.URI)
			if root.Name != "" {
				b = append(b, `,"name":`...)
				b = appendString(b, root.Name)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

func (t TextContent) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"type":`...)
	b = appendString(b, t.Type)
	b = append(b, `,"text":`...)
	b = appendString(b, t.Text)
	return append(b, '}'), nil
}

func (e *Error) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"code":`...)
	b = strconv.AppendInt(b, e.Code, 10)
	b = append(b, `,"message":`...)
	b = appendString(b, e.Message)
	if e.Data != nil {
		b = append(b, `,"data":`...)
		var err error
		if b, err = appendAny(b, e.Data); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}
