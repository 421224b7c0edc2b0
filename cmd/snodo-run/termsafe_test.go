package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/snodo/snodo"
)

// A server's text cannot drive the terminal: escape sequences, carriage
// returns, C1 controls and bidi overrides are printed as escapes; newlines
// and tabs of multi-line text stay.
func TestTextOutputEscapesServerControlCharacters(t *testing.T) {
	hostile := "line one\n\x1b[2J\x1b[31mred\r[INFO] forged\u202eevil\u009b1m\tok\xff"
	var out bytes.Buffer
	if err := renderText(&out, &snodo.CallToolResult{Content: []snodo.Content{{Type: "text", Text: hostile}}}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, bad := range []string{"\x1b", "\r", "\u202e", "\u009b", "\xff"} {
		if strings.Contains(got, bad) {
			t.Errorf("output holds %q raw: %q", bad, got)
		}
	}
	for _, want := range []string{"line one\n", `\x1b[2J`, `\r[INFO] forged`, `\u202eevil`, `\x9b1m`, "\tok", "\uFFFD"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q: %q", want, got)
		}
	}
	if s := oneLineSafe("50%\nnext\x1b[K"); s != `50%\nnext\x1b[K` {
		t.Errorf("progress message %q", s)
	}
}

// The server's stderr is a stream cut anywhere: a character split between
// two writes is escaped whole, not as two invalid halves.
func TestStreamSafeWriterJoinsSplitCharacters(t *testing.T) {
	var out bytes.Buffer
	w := &streamSafeWriter{w: &out}
	for _, p := range []string{"a\xe2\x80", "\xae\x1b", "[2J\u200b\n\xe2", "x"} {
		if n, err := w.Write([]byte(p)); err != nil || n != len(p) {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if got, want := out.String(), "a\\u202e\\x1b[2J\\u200b\n\uFFFDx"; got != want {
		t.Errorf("escaped %q, want %q", got, want)
	}
}
