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
	keys []string // scratch, shared by the objects being read
	// path is where the scanner is, for errors: a key, or an index when
	// key is "" and idx >= 0.
	path []step
}

type step struct {
	key string
	idx int
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

func (s *scanner) object(depth int) error {
	s.i++ // '{'
	mark := len(s.keys)
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
		key := string(raw)
		if escaped {
			if err := json.Unmarshal(s.data[s.i-len(raw)-2:s.i], &key); err != nil {
				return s.errorf("bad key: %v", err)
			}
		}
		canon := canonicalKey(key)
		for _, k := range s.keys[mark:] {
			if k == canon {
				return fmt.Errorf("ambiguous JSON: an object at %s has the key %+q more than once, or with another key a decoder takes for it (same letters in another case, or with _ or -)", s.where(), key)
			}
		}
		s.keys = append(s.keys, canon)
		s.space()
		if s.i >= len(s.data) || s.data[s.i] != ':' {
			return s.errorf("want : after a key")
		}
		s.i++
		s.path = append(s.path, step{key: key, idx: -1})
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
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			if plainKey(st.key) {
				b.WriteString(st.key)
			} else {
				b.WriteString(strconv.QuoteToASCII(st.key))
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
