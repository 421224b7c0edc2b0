package main

import (
	"io"
	"sync"
	"unicode/utf8"

	"github.com/snodo/snodo/internal/safetext"
)

// Text from a server — tool results, descriptions, progress messages — is
// hostile input on a terminal: an escape sequence can rewrite the screen,
// a carriage return, a bidi override or a zero-width space can make one
// line read as another. What snodo-run prints for people goes through
// termSafe; JSON output and error objects through safetext.JSON (marshal,
// reportError), which writes the same characters as \u escapes.

// termSafe returns s with every control character but newline and tab,
// every bidi control and invisible format character written as an escape
// (\x1b, \x9b, \u202e, \u200b), and invalid UTF-8 as U+FFFD
// (safetext.Escape).
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

// streamSafeWriter is termSafeWriter for a stream cut anywhere (the
// server's stderr, with --server-stderr): the incomplete character at the
// end of a Write is held back until the rest of it arrives.
type streamSafeWriter struct {
	mu   sync.Mutex
	w    io.Writer
	held []byte
}

func (t *streamSafeWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := append(t.held, p...)
	cut := len(b)
	for i := len(b) - 1; i >= 0 && i > len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				cut = i
			}
			break
		}
	}
	t.held = append(t.held[:0:0], b[cut:]...)
	if _, err := io.WriteString(t.w, termSafe(string(b[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// oneLineSafe is termSafe for text that must stay on one line (a progress
// message): newlines and tabs are escaped too.
func oneLineSafe(s string) string { return safetext.Escape(s, false) }
