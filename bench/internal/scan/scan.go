// Package scan finds members of JSON objects without decoding them: it skips
// values byte by byte and returns raw slices of the input. The lean MCP server
// uses it to read only the id, the method and the few arguments it needs, so
// that what a benchmark measures is the client, not the server.
package scan

import "bytes"

// Field returns the raw value of the member named key in the JSON object obj,
// or nil if obj is not an object or has no such member. Keys are compared
// byte for byte, so they must not contain escapes.
func Field(obj []byte, key string) []byte {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] == '}' {
			return nil
		}
		if obj[i] == ',' {
			i++
			continue
		}
		if obj[i] != '"' {
			return nil
		}
		end := skipString(obj, i)
		if end < 0 {
			return nil
		}
		name := obj[i+1 : end-1]
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return nil
		}
		i = skipSpace(obj, i+1)
		vend := skipValue(obj, i)
		if vend < 0 {
			return nil
		}
		if string(name) == key {
			return obj[i:vend]
		}
		i = vend
	}
}

// Path follows keys through nested objects.
func Path(obj []byte, keys ...string) []byte {
	for _, k := range keys {
		obj = Field(obj, k)
		if obj == nil {
			return nil
		}
	}
	return obj
}

// Int parses a raw JSON integer; ok is false for anything else.
func Int(raw []byte) (n int, ok bool) {
	if len(raw) == 0 {
		return 0, false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// Is reports whether raw is the JSON string s (without escapes).
func Is(raw []byte, s string) bool {
	return len(raw) == len(s)+2 && raw[0] == '"' && string(raw[1:len(raw)-1]) == s
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		// Count the backslashes before the quote: an odd number escapes it.
		k := i - 1
		for k >= 0 && b[k] == '\\' {
			k--
		}
		if (i-1-k)%2 == 0 {
			return i + 1
		}
		i++
	}
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				if i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default:
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}
