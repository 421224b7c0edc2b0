package jsonrpc

import (
	"bytes"
	"testing"

	"github.com/snodo/snodo/internal/jsoncodec"
)

var envelopeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`,
	`{"jsonrpc":"2.0","id":"a\"b","result":{}}`,
	`{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"message":"q","requestedSchema":{"type":"object"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}`,
	` { "jsonrpc" : "2.0" , "id" : -0 , "result" : [ 1 , "x" , { } ] } `,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}`,
	`{"jsonrpc":"2.0","id":1,"result":null}`,
	`{"jsonrpc":"2.0","id":null,"result":{}}`,
	`{"jsonrpc":"2.0","ID":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"result":{}}`,
	`{"jsonrpc":"2.0","method":"a\u002fb","params":{}}`,
	`{"jsonrpc":"2.\u0030","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":1.5,"result":{}}`,
	`{"jsonrpc":"2.0","method":"","params":[]}`,
	`{"jsonrpc":"2.0","method":"x","params":"s"}`,
	`{"jsonrpc":"2.0","id":1,"result":{"a":"\\"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{}} x`,
	`{"jsonrpc":"2.0","id":1,"result":{}`,
	`[]`, `"x"`, `{}`, ``, `{"jsonrpc":"1.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"result":true,"extra":1}`,
}

// The scan gives what the decoder gives, or declines.
func FuzzScanEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast wire
		if !scanEnvelope(data, &fast) {
			return
		}
		var slow wire
		if err := jsoncodec.Unmarshal(data, &slow); err != nil {
			t.Fatalf("scanned %q, which the decoder refuses: %v", data, err)
		}
		raw := func(b []byte) string { return string(trimSpace(b)) }
		if fast.JSONRPC != slow.JSONRPC || raw(fast.ID) != raw(slow.ID) || (fast.ID == nil) != (slow.ID == nil) ||
			raw(fast.Params) != raw(slow.Params) || raw(fast.Result) != raw(slow.Result) ||
			(fast.Method == nil) != (slow.Method == nil) || (fast.Method != nil && *fast.Method != *slow.Method) ||
			slow.Error != nil {
			t.Fatalf("%q: scan %+v, decoder %+v", data, fast, slow)
		}
	})
}

// The common messages take the scan; the others the decoder.
func TestScanEnvelopeTakesTheCommonShapes(t *testing.T) {
	for i, s := range envelopeSeeds {
		var w wire
		got := scanEnvelope([]byte(s), &w)
		want := i < 5 || s == `{"jsonrpc":"2.0","method":"","params":[]}` ||
			s == `{"jsonrpc":"2.0","method":"x","params":"s"}` || s == `{"jsonrpc":"2.0","id":1,"result":{"a":"\\"}}` ||
			s == `{"jsonrpc":"2.0","id":null,"result":{}}` || s == `{"jsonrpc":"2.0","id":1.5,"result":{}}`
		if got != want {
			t.Errorf("%s: scanned %v, want %v", s, got, want)
		}
	}
	big := append([]byte(`{"jsonrpc":"2.0","id":1,"result":"`), bytes.Repeat([]byte("x"), scanEnvelopeMax)...)
	big = append(big, `"}`...)
	var w wire
	if scanEnvelope(big, &w) {
		t.Error("a line over scanEnvelopeMax was scanned")
	}
	if m, err := Decode(big); err != nil || len(m.(*Response).Result) != scanEnvelopeMax+2 {
		t.Errorf("Decode of the long line: %v", err)
	}
}
