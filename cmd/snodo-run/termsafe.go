package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Text from a server — tool results, descriptions, progress messages — is
// hostile input on a terminal: an escape sequence can rewrite the screen,
// a carriage return or a bidi override can make one line read as another.
// What snodo-run prints for people goes through termSafe; JSON output
// needs nothing, since a JSON string holds no raw control character.

// termSafe returns s with every control character but newline and tab,
// every C1 control and every bidi formatting character written as an
// escape (\x1b, \u202e), and invalid UTF-8 as U+FFFD.
func termSafe(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteRune(utf8.RuneError)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0, isBidi(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f ||
			(r >= 0x80 && r < 0xa0) || isBidi(r) {
			return true
		}
		i += n
	}
	return false
}

// isBidi reports the Unicode bidi formatting characters.
func isBidi(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

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
func oneLineSafe(s string) string {
	s = termSafe(s)
	if strings.ContainsAny(s, "\n\t") {
		s = strings.NewReplacer("\n", `\n`, "\t", `\t`).Replace(s)
	}
	return s
}
