// Package safetext escapes text from hostile sources — a Wasm guest, an MCP
// server — before it reaches a log line or a terminal, so that it cannot
// start or forge a line, move the cursor, colour the screen, reorder what
// is shown or hide characters in it. Every escaper of Snodo is this one:
// Escape for text, JSON for JSON text, Unsafe for the characters both
// escape.
package safetext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Unsafe reports whether r must not reach a terminal or a log line as it
// is: the controls (category Cc: C0, DEL and C1), the format characters
// (Cf: the bidirectional marks, embeddings, overrides and isolates
// U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069; the zero-width
// space, non-joiner and joiner U+200B–U+200D; the byte order mark
// U+FEFF; the soft hyphen; the tag characters …), the line and paragraph
// separators U+2028 and U+2029, and the other default-ignorable code
// points (the Hangul fillers, U+034F …), which show as nothing.
func Unsafe(r rune) bool {
	if r < utf8.RuneSelf {
		return r < 0x20 || r == 0x7f
	}
	return r <= 0x9f || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Other_Default_Ignorable_Code_Point)
}

// Escape returns s with every Unsafe character written as a Go-style
// escape — \n, \r, \t, \x1b and \x9b for the controls, \u202e (or
// \U000e0001 past U+FFFF) for the others — and invalid UTF-8 as U+FFFD.
// With keepLayout, newlines and tabs stay as they are, for multi-line text
// shown to people. Text without any of these is returned as it is.
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
		case r <= 0x9f && Unsafe(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case r > 0xffff && Unsafe(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		case Unsafe(r):
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
		if Unsafe(r) || (r == utf8.RuneError && invalidAt(s, i)) {
			return true
		}
	}
	return false
}

// JSON returns the JSON text b with every Unsafe character written as a
// JSON \u escape (a surrogate pair past U+FFFF) and invalid UTF-8 as
// \ufffd: the same value, safe to print. In valid JSON such characters
// stand only inside strings, where the escape means the character; the
// whitespace between tokens (tab, newline, carriage return) stays. b
// without any of these is returned as it is.
func JSON(b []byte) []byte {
	i := 0
	for i < len(b) {
		c := b[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if (r == utf8.RuneError && n == 1) || Unsafe(r) {
			break
		}
		i += n
	}
	if i == len(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = append(out, `\ufffd`...)
		case r == '\t' || r == '\n' || r == '\r' || !Unsafe(r):
			out = append(out, b[i:i+n]...)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += n
	}
	return out
}

// invalidAt reports whether the U+FFFD decoded at i stands for invalid
// UTF-8 rather than an encoded U+FFFD.
func invalidAt(s string, i int) bool {
	_, n := utf8.DecodeRuneInString(s[i:])
	return n == 1
}
