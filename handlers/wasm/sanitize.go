package wasm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// SanitizeText makes text that came from a guest (or from a module file's
// name) safe to put in a log line or on a terminal: control characters —
// C0 (newline, carriage return and escape included), DEL and C1 — become
// Go-style escapes (\n, \r, \t, \x1b, \x9b), Unicode's bidirectional
// overrides, isolates and marks and the line and paragraph separators
// become \u escapes, and invalid UTF-8 becomes U+FFFD. So a guest cannot
// start a new log line, forge one, move the cursor, colour the terminal or
// reorder what is shown. Text without any of these is returned as it is.
func SanitizeText(s string) string {
	if !needsSanitizing(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i, r := range s {
		switch {
		case r == utf8.RuneError && isInvalidAt(s, i):
			b.WriteRune(utf8.RuneError)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || (r >= 0x7f && r <= 0x9f):
			fmt.Fprintf(&b, `\x%02x`, r)
		case isBidiOrSeparator(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func needsSanitizing(s string) bool {
	for i, r := range s {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || isBidiOrSeparator(r) ||
			(r == utf8.RuneError && isInvalidAt(s, i)) {
			return true
		}
	}
	return false
}

// isInvalidAt reports whether the U+FFFD decoded at i stands for invalid
// UTF-8 rather than an encoded U+FFFD.
func isInvalidAt(s string, i int) bool {
	_, n := utf8.DecodeRuneInString(s[i:])
	return n == 1
}

// isBidiOrSeparator reports the format characters that reorder or break
// displayed text: ALM, LRM, RLM, LRE..RLO, LRI..PDI, and the line and
// paragraph separators.
func isBidiOrSeparator(r rune) bool {
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

// sanitizeJSON returns valid JSON from a guest in the same meaning but
// safe to show: compacted (no newline between tokens) and with the
// characters SanitizeText escapes written as JSON \u escapes inside its
// strings. raw that is not valid JSON is returned as it is.
func sanitizeJSON(raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return nil
	}
	var buf strings.Builder
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return raw
	}
	s := compact.String()
	if !needsSanitizing(s) {
		return json.RawMessage(s)
	}
	// Valid compact JSON holds no control character outside a \ escape,
	// so what is left to escape are runes inside strings.
	for _, r := range s {
		if isBidiOrSeparator(r) || (r >= 0x7f && r <= 0x9f) {
			fmt.Fprintf(&buf, `\u%04x`, r)
		} else {
			buf.WriteRune(r)
		}
	}
	return json.RawMessage(buf.String())
}

// escapedError is an error whose message went through SanitizeText; it
// still unwraps to its cause.
type escapedError struct {
	msg string
	err error
}

func (e *escapedError) Error() string { return e.msg }
func (e *escapedError) Unwrap() error { return e.err }
