package jsoncodec

import (
	"slices"
	"testing"
)

// HasUnknownKeys is the fast path of keeping unknown fields: it must never
// say "no unknown keys" when there is one.
func TestHasUnknownKeys(t *testing.T) {
	known := []string{"type", "text", "annotations"}
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`{}`, false},
		{`{"type":"text","text":"a,b}\"c"}`, false},
		{` { "type" : "text" , "annotations" : {"x":[1,{"y":"}"}]} } `, false},
		{`{"type":"text","x":1}`, true},
		{`{"type":"text","annotations":{"x":1},"y":[]}`, true},
		{`{"type":"text","t\u0065xt":"a"}`, true},
		{`{"type":1.5e3,"text":null,"annotations":true}`, false},
		{`{"type":"text",`, true},
		{`[1]`, true},
	} {
		if got := HasUnknownKeys([]byte(tc.in), known); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.in, got, tc.want)
		}
	}
}

func FuzzHasUnknownKeys(f *testing.F) {
	f.Add(`{"type":"text","x":{"a":[1,2]}}`)
	f.Add(`{"type":"text"}`)
	f.Add(`{"text":"a\"b\\","x":1}`)
	f.Add(`{"text":"\\\"}\\","type":"y","z":[]}`)
	known := []string{"type", "text"}
	f.Fuzz(func(t *testing.T, s string) {
		if HasUnknownKeys([]byte(s), known) {
			return
		}
		// No unknown keys claimed: the exact decoder must agree.
		var all map[string]any
		if err := Unmarshal([]byte(s), &all); err != nil {
			return
		}
		for k := range all {
			if !slices.Contains(known, k) {
				t.Fatalf("%s: unknown key %q missed", s, k)
			}
		}
	})
}
