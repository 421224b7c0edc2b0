package intercept

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxDepth is how deep CheckUnambiguous lets objects and arrays nest, as
// encoding/json does.
const maxDepth = 10000

// CheckUnambiguous checks that data is one valid JSON object in which no
// object, at any depth, has two keys a decoder could take for the same
// one: the same key twice, or two keys equal under Unicode simple case
// folding once "_" and "-" are dropped and invalid UTF-8 is read as U+FFFD
// ("path", "Path", "PATH", "pa_th", "paſh" are one key). Decoders disagree
// about such keys (the first or the last wins, case matters or not), so an
// interceptor could check one value while the server, or the client's
// caller, reads another. The error names the key and where it is.
func CheckUnambiguous(data []byte) error {
	s := scanner{data: data}
	s.space()
	if s.i >= len(s.data) || s.data[s.i] != '{' {
		return fmt.Errorf("not a JSON object")
	}
	if err := s.value(0); err != nil {
		return err
	}
	s.space()
	if s.i != len(s.data) {
		return fmt.Errorf("trailing data after the JSON object at byte %d", s.i)
	}
	return nil
}

type scanner struct {
	data []byte
	i    int
	keys []key // scratch, shared by the objects being read
	// path is where the scanner is, for errors: a key, or an index when
	// key is "" and idx >= 0.
	path []step
}

type step struct {
	raw     []byte // a key's raw bytes
	escaped bool
	idx     int
}

func (s *scanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at byte %d: "+format, append([]any{s.i}, args...)...)
}

func (s *scanner) value(depth int) error {
	if depth > maxDepth {
		return s.errorf("nested deeper than %d", maxDepth)
	}
	s.space()
	if s.i >= len(s.data) {
		return s.errorf("unexpected end")
	}
	switch c := s.data[s.i]; {
	case c == '{':
		return s.object(depth)
	case c == '[':
		s.i++
		s.space()
		if s.i < len(s.data) && s.data[s.i] == ']' {
			s.i++
			return nil
		}
		s.path = append(s.path, step{idx: 0})
		defer func() { s.path = s.path[:len(s.path)-1] }()
		for n := 0; ; n++ {
			s.path[len(s.path)-1].idx = n
			if err := s.value(depth + 1); err != nil {
				return err
			}
			s.space()
			if s.i >= len(s.data) {
				return s.errorf("unexpected end in an array")
			}
			if s.data[s.i] == ']' {
				s.i++
				return nil
			}
			if s.data[s.i] != ',' {
				return s.errorf("want , or ] in an array")
			}
			s.i++
		}
	case c == '"':
		_, _, err := s.str()
		return err
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	default:
		return s.number()
	}
}

func (s *scanner) lit(word string) error {
	if len(s.data)-s.i < len(word) || string(s.data[s.i:s.i+len(word)]) != word {
		return s.errorf("unexpected character")
	}
	s.i += len(word)
	return nil
}

func (s *scanner) number() error {
	start := s.i
	if s.i < len(s.data) && s.data[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.data) && s.data[s.i] >= '0' && s.data[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.data) && s.data[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		s.i = start
		return s.errorf("unexpected character")
	}
	if s.i < len(s.data) && s.data[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return s.errorf("bad number")
		}
	}
	if s.i < len(s.data) && (s.data[s.i] == 'e' || s.data[s.i] == 'E') {
		s.i++
		if s.i < len(s.data) && (s.data[s.i] == '+' || s.data[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return s.errorf("bad number")
		}
	}
	return nil
}

// str reads a string; raw is its bytes between the quotes, escaped says
// whether it has escapes.
func (s *scanner) str() (raw []byte, escaped bool, err error) {
	s.i++ // '"'
	start := s.i
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '"':
			raw = s.data[start:s.i]
			s.i++
			return raw, escaped, nil
		case c == '\\':
			escaped = true
			s.i++
			if s.i >= len(s.data) {
				return nil, false, s.errorf("unexpected end in a string")
			}
			switch s.data[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if len(s.data)-s.i < 5 {
					return nil, false, s.errorf("bad \\u escape")
				}
				for _, h := range s.data[s.i+1 : s.i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return nil, false, s.errorf("bad \\u escape")
					}
				}
				s.i += 5
			default:
				return nil, false, s.errorf("bad escape")
			}
		case c < 0x20:
			return nil, false, s.errorf("control character in a string")
		default:
			s.i++
		}
	}
	return nil, false, s.errorf("unexpected end in a string")
}

// key is an object's key as read: its raw bytes and, once needed, its
// canonical form (canonicalKey).
type key struct {
	raw    []byte // between the quotes
	simple bool   // ASCII letters, digits and punctuation other than _ and -, no escape
	canon  string
	hasCan bool
}

func (s *scanner) canon(k *key) (string, error) {
	if !k.hasCan {
		str := string(k.raw)
		if !k.simple {
			q := make([]byte, 0, len(k.raw)+2)
			q = append(append(append(q, '"'), k.raw...), '"')
			if err := json.Unmarshal(q, &str); err != nil {
				return "", s.errorf("bad key: %v", err)
			}
		}
		k.canon, k.hasCan = canonicalKey(str), true
	}
	return k.canon, nil
}

// sameKey reports whether a decoder could take a and b for one key.
func (s *scanner) sameKey(a, b *key) (bool, error) {
	if a.simple && b.simple {
		return asciiFoldEqual(a.raw, b.raw), nil
	}
	ca, err := s.canon(a)
	if err != nil {
		return false, err
	}
	cb, err := s.canon(b)
	return ca == cb, err
}

func asciiFoldEqual(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x >= 'a' && x <= 'z' {
			x -= 'a' - 'A'
		}
		if y >= 'a' && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// simpleKey reports whether raw, unescaped, is compared byte by byte up to
// ASCII case: no escape, no byte over 0x7f, no _ or -.
func simpleKey(raw []byte, escaped bool) bool {
	if escaped {
		return false
	}
	for _, c := range raw {
		if c >= utf8.RuneSelf || c == '_' || c == '-' {
			return false
		}
	}
	return true
}

// manyKeys is how many keys an object may have before they are compared
// through a map instead of each with each.
const manyKeys = 16

func (s *scanner) object(depth int) error {
	s.i++ // '{'
	mark := len(s.keys)
	var seen map[string]bool // past manyKeys
	defer func() { s.keys = s.keys[:mark] }()
	s.space()
	if s.i < len(s.data) && s.data[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		s.space()
		if s.i >= len(s.data) || s.data[s.i] != '"' {
			return s.errorf("want a key")
		}
		raw, escaped, err := s.str()
		if err != nil {
			return err
		}
		k := key{raw: raw, simple: simpleKey(raw, escaped)}
		dup := false
		if seen == nil && len(s.keys)-mark < manyKeys {
			for i := mark; i < len(s.keys) && !dup; i++ {
				if dup, err = s.sameKey(&s.keys[i], &k); err != nil {
					return err
				}
			}
		} else {
			if seen == nil {
				seen = make(map[string]bool, 2*manyKeys)
				for i := mark; i < len(s.keys); i++ {
					c, err := s.canon(&s.keys[i])
					if err != nil {
						return err
					}
					seen[c] = true
				}
			}
			c, err := s.canon(&k)
			if err != nil {
				return err
			}
			dup = seen[c]
			seen[c] = true
		}
		if dup {
			name := string(raw)
			if escaped {
				_ = json.Unmarshal(s.data[s.i-len(raw)-2:s.i], &name)
			}
			return fmt.Errorf("ambiguous JSON: an object at %s has the key %+q more than once, or with another key a decoder takes for it (same letters in another case, or with _ or -)", s.where(), name)
		}
		s.keys = append(s.keys, k)
		s.space()
		if s.i >= len(s.data) || s.data[s.i] != ':' {
			return s.errorf("want : after a key")
		}
		s.i++
		s.path = append(s.path, step{raw: raw, escaped: escaped, idx: -1})
		err = s.value(depth + 1)
		s.path = s.path[:len(s.path)-1]
		if err != nil {
			return err
		}
		s.space()
		if s.i >= len(s.data) {
			return s.errorf("unexpected end in an object")
		}
		if s.data[s.i] == '}' {
			s.i++
			return nil
		}
		if s.data[s.i] != ',' {
			return s.errorf("want , or } in an object")
		}
		s.i++
	}
}

func (s *scanner) where() string {
	if len(s.path) == 0 {
		return "the top level"
	}
	var b strings.Builder
	for _, st := range s.path {
		if st.idx >= 0 {
			fmt.Fprintf(&b, "[%d]", st.idx)
		} else {
			k := string(st.raw)
			if st.escaped {
				q := append(append(append([]byte(nil), '"'), st.raw...), '"')
				_ = json.Unmarshal(q, &k)
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			if plainKey(k) {
				b.WriteString(k)
			} else {
				b.WriteString(strconv.QuoteToASCII(k))
			}
		}
	}
	return b.String()
}

// canonicalKey is key as every decoder's case-insensitive matching sees
// it: invalid UTF-8 as U+FFFD, without "_" and "-", each letter the least
// rune of its simple case folding orbit.
func canonicalKey(key string) string {
	ascii := true
	for i := 0; i < len(key); i++ {
		if c := key[i]; c >= utf8.RuneSelf || c == '_' || c == '-' {
			ascii = false
			break
		}
	}
	if ascii {
		// The least of an ASCII letter's orbit is its upper case (K's
		// and S's orbits hold U+212A and U+017F, which are greater).
		return strings.ToUpper(key)
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(key, "\uFFFD") {
		if r == '_' || r == '-' {
			continue
		}
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

func plainKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if c := k[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return k != ""
}
