package wasm

import (
	"bytes"
	"encoding/json"

	"github.com/snodo/snodo/internal/safetext"
)

// SanitizeText makes text that came from a guest (or from a module file's
// name) safe to put in a log line or on a terminal: it is Snodo's one
// escaper (internal/safetext). Control characters — C0 (newline, carriage
// return and escape included), DEL and C1 — become Go-style escapes (\n,
// \r, \t, \x1b, \x9b); Unicode's bidirectional marks, embeddings,
// overrides and isolates, the other invisible format characters (zero-width
// space and joiners, byte order mark …) and the line and paragraph
// separators become \u escapes; invalid UTF-8 becomes U+FFFD. So a guest
// cannot start a new log line, forge one, move the cursor, colour the
// terminal, reorder what is shown or hide characters in it. Text without
// any of these is returned as it is.
func SanitizeText(s string) string { return safetext.Escape(s, false) }

// sanitizeJSON returns valid JSON from a guest in the same meaning but
// safe to show: compacted (no newline between tokens) and with the
// characters SanitizeText escapes written as JSON \u escapes inside its
// strings. raw that is not valid JSON is returned as it is.
func sanitizeJSON(raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return raw
	}
	return json.RawMessage(safetext.JSON(compact.Bytes()))
}

// escapedError is an error whose message went through SanitizeText; it
// still unwraps to its cause.
type escapedError struct {
	msg string
	err error
}

func (e *escapedError) Error() string { return e.msg }
func (e *escapedError) Unwrap() error { return e.err }
