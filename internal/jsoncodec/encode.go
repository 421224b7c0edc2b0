package jsoncodec

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/bytedance/sonic/encoder"
)

// AppendAny appends the JSON encoding of v to dst without reflection, for
// the values decoded JSON is made of: nil, string, bool, float64, float32,
// the integer kinds, json.RawMessage, map[string]any and []any. It writes
// exactly what sonic's default configuration (sonic.ConfigDefault) writes,
// with map keys sorted as encoding/json sorts them (sonic's default leaves
// them in map order): strings are not HTML-escaped, U+2028, U+2029 and
// invalid UTF-8 are kept as they are, the control characters other than
// \n, \r and \t become \u00XX, numbers are formatted as encoding/json
// formats them, and a json.RawMessage is checked with sonic's validator
// and kept as it is.
//
// ok is false, and dst is to be dropped, when v holds anything else (any
// other type, NaN or an infinity, an invalid json.RawMessage, maps nested
// deeper than maxDepth, which a cycle would be), or when sonic's encoder
// is not native on this platform: the caller then encodes v with sonic,
// which encodes it or reports the error.
func AppendAny(dst []byte, v any) (_ []byte, ok bool) {
	if !nativeEncoder {
		return dst, false
	}
	return appendAny(dst, v, 0)
}

// AppendString appends s as a JSON string, escaped as AppendAny escapes
// strings: invalid UTF-8 is kept as it is.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s, false) }

// AppendStringValid appends s as a JSON string, with invalid UTF-8 replaced
// by U+FFFD as encoding/json does; otherwise escaped as AppendString.
func AppendStringValid(dst []byte, s string) []byte { return appendString(dst, s, true) }

func appendString(dst []byte, s string, repair bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			// Eight bytes at a time while none needs an escape (nor,
			// when repairing, is outside ASCII).
			w := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))
			if plainWord(w) && (!repair || w&msbs == 0) {
				i += 8
				continue
			}
		}
		c := s[i]
		if c >= utf8.RuneSelf {
			size := 1
			if repair {
				var r rune
				if r, size = utf8.DecodeRuneInString(s[i:]); r == utf8.RuneError && size == 1 {
					dst = append(dst, s[start:i]...)
					dst = append(dst, "\uFFFD"...) // U+FFFD, as UTF-8
					start = i + 1
				}
			}
			i += size
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

const (
	lsbs = 0x0101010101010101
	msbs = 0x8080808080808080
)

// plainWord reports whether none of the eight bytes of w needs an escape:
// none is below 0x20, a quote or a backslash.
func plainWord(w uint64) bool {
	q, b := w^(lsbs*'"'), w^(lsbs*'\\')
	return ((w-lsbs*0x20)|(q-lsbs)|(b-lsbs))&^w&^q&^b&msbs == 0
}

// maxDepth bounds the nesting of maps and arrays AppendAny encodes itself.
const maxDepth = 64

func appendAny(dst []byte, v any, depth int) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return AppendString(dst, x), true
	case bool:
		return strconv.AppendBool(dst, x), true
	case float64:
		return appendFloat(dst, x, 64)
	case float32:
		return appendFloat(dst, float64(x), 32)
	case int:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int64:
		return strconv.AppendInt(dst, x, 10), true
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int16:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int8:
		return strconv.AppendInt(dst, int64(x), 10), true
	case uint:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint64:
		return strconv.AppendUint(dst, x, 10), true
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint16:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint8:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case json.RawMessage:
		if x == nil {
			return append(dst, "null"...), true
		}
		if ok, _ := encoder.Valid(x); !ok {
			return dst, false
		}
		return append(dst, x...), true
	case map[string]any:
		if depth >= maxDepth {
			return dst, false
		}
		if x == nil {
			return append(dst, "null"...), true
		}
		// The members, sorted by key: on the stack for the usual small
		// map. (Maps and arrays are encoded here, not in functions of
		// their own: a recursion through two functions makes dst escape,
		// and the caller's buffer with it.)
		var arr [8]member
		members := arr[:0]
		for k, v := range x {
			members = append(members, member{k, v})
		}
		sortMembers(members)
		dst = append(dst, '{')
		for i, mb := range members {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, mb.key)
			dst = append(dst, ':')
			var ok bool
			if dst, ok = appendAny(dst, mb.value, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	case []any:
		if depth >= maxDepth {
			return dst, false
		}
		if x == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendAny(dst, e, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	}
	return dst, false
}

// member is one member of a map being encoded.
type member struct {
	key   string
	value any
}

// sortMembers sorts members by key, bytewise as encoding/json sorts map
// keys. Keys are distinct.
func sortMembers(members []member) {
	if len(members) > 12 {
		slices.SortFunc(members, func(a, b member) int { return cmp.Compare(a.key, b.key) })
		return
	}
	for i := 1; i < len(members); i++ {
		for j := i; j > 0 && members[j].key < members[j-1].key; j-- {
			members[j], members[j-1] = members[j-1], members[j]
		}
	}
}

// appendFloat formats f as encoding/json does (and sonic); NaN and the
// infinities are not JSON.
func appendFloat(dst []byte, f float64, bits int) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		// e-09 → e-9, as encoding/json writes it.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}
