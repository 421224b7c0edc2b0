package jsonrpc

import (
	"encoding/json"
	"testing"
)

// "IDs (string or integer, never null; large integers kept exact)".
func TestIDLargeIntegersKeptExact(t *testing.T) {
	for _, in := range []string{
		`0`, `-1`, `42`, `9007199254740993`, `18446744073709551616`,
		`-123456789012345678901234567890`,
	} {
		var id ID
		if err := id.UnmarshalJSON([]byte(in)); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := string(id.AppendJSON(nil)); got != in {
			t.Errorf("round trip of %s = %s", in, got)
		}
		if id.IsString() || !id.IsValid() {
			t.Errorf("%s: IsString=%v IsValid=%v", in, id.IsString(), id.IsValid())
		}
	}
}

func TestIDStringAndIntegerAreDistinct(t *testing.T) {
	var a, b ID
	if err := a.UnmarshalJSON([]byte(`"1"`)); err != nil {
		t.Fatal(err)
	}
	if err := b.UnmarshalJSON([]byte(`1`)); err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatal(`"1" and 1 compare equal; they are different IDs`)
	}
	if a != StringID("1") || b != Int64ID(1) {
		t.Fatalf("decoded IDs differ from constructed ones: %#v %#v", a, b)
	}
	m := map[ID]int{a: 1, b: 2}
	if len(m) != 2 {
		t.Fatal("IDs do not work as distinct map keys")
	}
}

func TestIDRejectsNonIntegers(t *testing.T) {
	for _, in := range []string{`1.5`, `1e3`, `01`, `true`, `{}`, `[]`, `-`, `"unterminated`} {
		var id ID
		if err := id.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("%s accepted as an ID: %v", in, id)
		}
	}
}

func TestIDNullIsZero(t *testing.T) {
	var id ID
	if err := id.UnmarshalJSON([]byte(`null`)); err != nil {
		t.Fatal(err)
	}
	if id.IsValid() {
		t.Fatal("null decoded to a valid ID")
	}
	if got := string(id.AppendJSON(nil)); got != "null" {
		t.Fatalf("zero ID encodes as %s", got)
	}
}

func TestIDInt64(t *testing.T) {
	if n, ok := Int64ID(-7).Int64(); !ok || n != -7 {
		t.Fatalf("Int64() = %d, %v", n, ok)
	}
	var big ID
	_ = big.UnmarshalJSON([]byte(`18446744073709551616`))
	if _, ok := big.Int64(); ok {
		t.Fatal("an integer beyond int64 reported as fitting")
	}
	if _, ok := StringID("3").Int64(); ok {
		t.Fatal("a string ID reported as an integer")
	}
}

func TestIDStringEscaping(t *testing.T) {
	id := StringID("a\"b\\c\n\x01é")
	b, err := json.Marshal(id)
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil || s != "a\"b\\c\n\x01é" {
		t.Fatalf("encoded %s decodes to %q, %v", b, s, err)
	}
}

func TestParseID(t *testing.T) {
	for raw, want := range map[string]string{`7`: "7", `"a"`: "a", ` "b" `: "b"} {
		if id, ok := ParseID([]byte(raw)); !ok || id.String() != want {
			t.Errorf("ParseID(%s) = %v, %v", raw, id, ok)
		}
	}
	for _, raw := range []string{``, `null`, `1.5`, `{}`, `[1]`, `true`} {
		if id, ok := ParseID([]byte(raw)); ok {
			t.Errorf("ParseID(%q) = %v, true; want false", raw, id)
		}
	}
}
