package main

import (
	"io"

	"github.com/snodo/snodo/internal/safetext"
)

// Text from a server — tool results, descriptions, progress messages — is
// hostile input on a terminal: an escape sequence can rewrite the screen,
// a carriage return or a bidi override can make one line read as another.
// What snodo-run prints for people goes through termSafe; JSON output
// needs nothing, since a JSON string holds no raw control character.

// termSafe returns s with every control character but newline and tab,
// every C1 control and every bidi formatting character written as an
// escape (\x1b, \u202e), and invalid UTF-8 as U+FFFD.
func termSafe(s string) string { return safetext.Escape(s, true) }

// termSafeWriter applies termSafe to everything written through it. Each
// Write is one formatted piece of output, so a character is never split
// between two Writes.
type termSafeWriter struct{ w io.Writer }

func (t termSafeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, termSafe(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// oneLineSafe is termSafe for text that must stay on one line (a progress
// message): newlines and tabs are escaped too.
func oneLineSafe(s string) string { return safetext.Escape(s, false) }
