package safetext

import (
	"encoding/json"
	"testing"
)

// Every control, bidi control, invisible format character and separator
// is escaped; what people read (letters, marks, emoji, U+FFFD as sent) is
// kept.
func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want, layout string }{
		{"plain ünïcödé ✓ \uFFFD", "plain ünïcödé ✓ \uFFFD", "plain ünïcödé ✓ \uFFFD"},
		{"a\nb\r\tc", `a\nb\r\tc`, "a\nb\\r\tc"},
		{"\x1b[31m\x00\x7f\u0085\u009b", `\x1b[31m\x00\x7f\x85\x9b`, `\x1b[31m\x00\x7f\x85\x9b`},
		{"\u202a\u202e\u2066\u2069\u200e\u200f\u061c", `\u202a\u202e\u2066\u2069\u200e\u200f\u061c`, `\u202a\u202e\u2066\u2069\u200e\u200f\u061c`},
		{"se\u200bc\u200cr\u200de\ufefft\u00ad", `se\u200bc\u200cr\u200de\ufefft\u00ad`, `se\u200bc\u200cr\u200de\ufefft\u00ad`},
		{"\u2028\u2029\u3164\U000e0001x", `\u2028\u2029\u3164\U000e0001x`, `\u2028\u2029\u3164\U000e0001x`},
		{"bad \xff", "bad \uFFFD", "bad \uFFFD"},
	} {
		if got := Escape(c.in, false); got != c.want {
			t.Errorf("Escape(%q, false) = %q, want %q", c.in, got, c.want)
		}
		if got := Escape(c.in, true); got != c.layout {
			t.Errorf("Escape(%q, true) = %q, want %q", c.in, got, c.layout)
		}
		if Needs(c.in, false) != (c.in != c.want) {
			t.Errorf("Needs(%q) disagrees with Escape", c.in)
		}
	}
}

// JSON escapes the same characters inside strings as \u escapes, and so
// keeps the value: decoding the escaped text gives what decoding the raw
// text gives.
func TestJSON(t *testing.T) {
	raw := "{\n  \"m\": \"\u202eevil\u2066\u200b\ufeff\u009b\u2028\U000e0041 é ✓\\u001b\"\n}"
	got := string(JSON([]byte(raw)))
	want := "{\n  \"m\": \"\\u202eevil\\u2066\\u200b\\ufeff\\u009b\\u2028\\udb40\\udc41 é ✓\\u001b\"\n}"
	if got != want {
		t.Fatalf("JSON = %q, want %q", got, want)
	}
	var a, b map[string]string
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(got), &b); err != nil || a["m"] != b["m"] {
		t.Fatalf("JSON changed the value: %q, want %q (%v)", b["m"], a["m"], err)
	}
	if s := `{"a":"plain é"}`; string(JSON([]byte(s))) != s {
		t.Errorf("JSON changed %s", s)
	}
	if s := string(JSON([]byte("\"bad \xff\""))); s != `"bad \ufffd"` {
		t.Errorf("JSON of invalid UTF-8 = %s", s)
	}
}
