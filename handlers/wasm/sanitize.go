package wasm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/snodo/snodo/internal/safetext"
)

// SanitizeText makes text that came from a guest (or from a module file's
// name) safe to put in a log line or on a terminal: control characters —
// C0 (newline, carriage return and escape included), DEL and C1 — become
// Go-style escapes (\n, \r, \t, \x1b, \x9b), Unicode's bidirectional
// overrides, isolates and marks and the line and paragraph separators
// become \u escapes, and invalid UTF-8 becomes U+FFFD. So a guest cannot
// start a new log line, forge one, move the cursor, colour the terminal or
// reorder what is shown. Text without any of these is returned as it is.
func SanitizeText(s string) string { return safetext.Escape(s, false) }

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
	if !safetext.Needs(s, false) {
		return json.RawMessage(s)
	}
	// Valid compact JSON holds no control character outside a \ escape,
	// so what is left to escape are runes inside strings.
	for _, r := range s {
		if safetext.IsBidiOrSeparator(r) || (r >= 0x7f && r <= 0x9f) {
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
