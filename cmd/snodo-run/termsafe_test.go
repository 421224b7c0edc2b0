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
	if err := renderText(&out, &snodo.CallToolResult{Content: []snodo.Content{{Type: snodo.ContentText, Text: hostile}}}); err != nil {
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
