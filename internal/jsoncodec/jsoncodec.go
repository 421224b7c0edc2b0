// Package jsoncodec is Snodo's JSON coding below the public API: a sonic
// decode that does not copy its input, a scanner that reads the top-level
// members of an object without decoding it, and an encoder of the values
// decoded JSON is made of that writes what sonic writes, without
// reflection. The root package, jsonrpc and the transports share it.
package jsoncodec

import (
	"bytes"
	"slices"
	"unsafe"

	"github.com/bytedance/sonic"
)

// Unmarshal decodes the JSON value data into v with sonic, without copying
// data first (sonic's own Unmarshal copies its whole input into a string).
// Decoded strings may share data's memory, so data must not be modified
// afterwards: use it on lines, params and results as transports return
// them, which nothing writes to.
func Unmarshal(data []byte, v any) error {
	return sonic.ConfigDefault.UnmarshalFromString(bytesToString(data), v)
}

// String returns a string sharing b's memory, as the strings Unmarshal
// decodes do: b must not be modified afterwards.
func String(b []byte) string { return bytesToString(b) }

// bytesToString returns a string sharing b's memory.
func bytesToString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// HasUnknownKeys reports whether the JSON object data has a top-level
// member not in known. It scans without allocating; on anything it does
// not expect (an escaped key, malformed input) it answers true, so that
// the caller takes the exact, slower path.
func HasUnknownKeys(data []byte, known []string) bool {
	unknown := false
	ok := EachMember(data, func(key, _ []byte) bool {
		if !slices.ContainsFunc(known, func(k string) bool { return k == string(key) }) {
			unknown = true
			return false
		}
		return true
	})
	return unknown || !ok
}

// EachMember calls f with the raw key (without quotes) and raw value of
// each top-level member of the JSON object data, until f returns false. It
// reports false for input it cannot scan: not an object, malformed, or a
// key with an escape, whose raw bytes are not its value.
func EachMember(data []byte, f func(key, value []byte) bool) bool {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i++
	for {
		i = SkipSpace(data, i)
		if i >= len(data) {
			return false
		}
		if data[i] == '}' {
			return true
		}
		if data[i] == ',' {
			i = SkipSpace(data, i+1)
		}
		if i >= len(data) || data[i] != '"' {
			return false
		}
		end := i + 1
		for end < len(data) && data[end] != '"' {
			if data[end] == '\\' {
				return false
			}
			end++
		}
		if end >= len(data) {
			return false
		}
		key := data[i+1 : end]
		i = SkipSpace(data, end+1)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		start := SkipSpace(data, i+1)
		i = SkipValue(data, start)
		if i < 0 {
			return false
		}
		if !f(key, bytes.TrimRight(data[start:i], " \t\r\n")) {
			return true
		}
	}
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func SkipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// SkipValue returns the index of the delimiter (",", "}" or "]", after any
// whitespace) that ends the JSON value at data[i:], or -1. It does not
// validate the value.
func SkipValue(data []byte, i int) int {
	depth := 0
	for i < len(data) {
		switch c := data[i]; c {
		case '"':
			// Jump from quote to quote (IndexByte is vectorised: a long
			// text is the common case); a quote preceded by an odd run of
			// backslashes is escaped.
			i++
			for {
				k := bytes.IndexByte(data[i:], '"')
				if k < 0 {
					return -1
				}
				q := i + k
				backslashes := 0
				for j := q - 1; j >= i && data[j] == '\\'; j-- {
					backslashes++
				}
				i = q + 1
				if backslashes%2 == 0 {
					break
				}
			}
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i
			}
			i++
		default:
			i++
		}
		if depth == 0 && i < len(data) {
			// A complete scalar or container ends at the next delimiter.
			j := SkipSpace(data, i)
			if j < len(data) && (data[j] == ',' || data[j] == '}' || data[j] == ']') {
				return j
			}
		}
	}
	return -1
}
