package transport_test

import (
	"testing"

	"github.com/snodo/snodo/transport"
)

// The specification's encoding examples (streamable-http.mdx, "Value
// Encoding"), and the cases of the conformance suite.
func TestEncodeHeaderValue(t *testing.T) {
	cases := map[string]string{
		"us-west1":           "us-west1",
		"Hello, 世界":          "=?base64?SGVsbG8sIOS4lueVjA==?=",
		" padded ":           "=?base64?IHBhZGRlZCA=?=",
		"line1\nline2":       "=?base64?bGluZTEKbGluZTI=?=",
		"=?base64?literal?=": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
		"us west 1":          "us west 1",
		"\tindented":         "=?base64?CWluZGVudGVk?=",
		"us-west1 ":          "=?base64?dXMtd2VzdDEg?=",
		"line1\r\nline2":     "=?base64?bGluZTENCmxpbmUy?=",
		"":                   "",
		"=?base64?":          "=?base64?",
	}
	for in, want := range cases {
		got := transport.EncodeHeaderValue(in)
		if got != want {
			t.Errorf("EncodeHeaderValue(%q) = %q, want %q", in, got, want)
		}
		back, err := transport.DecodeHeaderValue(got)
		if err != nil || back != in {
			t.Errorf("DecodeHeaderValue(%q) = %q, %v", got, back, err)
		}
	}
	if _, err := transport.DecodeHeaderValue("=?base64?!!?="); err == nil {
		t.Error("invalid Base64 decoded")
	}
}

func TestIsToken(t *testing.T) {
	for s, want := range map[string]bool{"Region": true, "X-Tenant_1.a~": true, "": false, "a b": false, "a:b": false, "é": false, "a\r": false} {
		if transport.IsToken(s) != want {
			t.Errorf("IsToken(%q) = %v", s, !want)
		}
	}
}
