// Package safetext escapes text from hostile sources — a Wasm guest, an MCP
// server — before it reaches a log line or a terminal, so that it cannot
// start or forge a line, move the cursor, colour the screen, or reorder
// what is shown.
package safetext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape returns s with control characters — C0 (newline, carriage return
// and escape included), DEL and C1 — written as Go-style escapes (\n, \r,
// \t, \x1b, \x9b), Unicode's bidirectional overrides, isolates and marks
// and the line and paragraph separators as \u escapes, and invalid UTF-8
// as U+FFFD. With keepLayout, newlines and tabs stay as they are, for
// multi-line text shown to people. Text without any of these is returned
// as it is.
func Escape(s string, keepLayout bool) string {
	if !Needs(s, keepLayout) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i, r := range s {
		switch {
		case r == utf8.RuneError && invalidAt(s, i):
			b.WriteRune(utf8.RuneError)
		case keepLayout && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || (r >= 0x7f && r <= 0x9f):
			fmt.Fprintf(&b, `\x%02x`, r)
		case IsBidiOrSeparator(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Needs reports whether Escape would change s.
func Needs(s string, keepLayout bool) bool {
	for i, r := range s {
		if keepLayout && (r == '\n' || r == '\t') {
			continue
		}
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || IsBidiOrSeparator(r) ||
			(r == utf8.RuneError && invalidAt(s, i)) {
			return true
		}
	}
	return false
}

// invalidAt reports whether the U+FFFD decoded at i stands for invalid
// UTF-8 rather than an encoded U+FFFD.
func invalidAt(s string, i int) bool {
	_, n := utf8.DecodeRuneInString(s[i:])
	return n == 1
}

// IsBidiOrSeparator reports the format characters that reorder or break
// displayed text: ALM, LRM, RLM, LRE..RLO, LRI..PDI, and the line and
// paragraph separators.
func IsBidiOrSeparator(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}
