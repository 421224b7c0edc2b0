package jsonrpc

import (
	"encoding/json"
	"math"
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

// An integer ID is the same ID however it was made, at the edges of int64
// and beyond them: decoded, constructed, negative zero.
func TestIDIntegerForms(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		n     int64
		fits  bool
		text  string
		equal ID
	}{
		{`0`, 0, true, "0", Int64ID(0)},
		{`-0`, 0, true, "0", Int64ID(0)},
		{`123456`, 123456, true, "123456", Int64ID(123456)},
		{`-42`, -42, true, "-42", Int64ID(-42)},
		{`9223372036854775807`, math.MaxInt64, true, "9223372036854775807", Int64ID(math.MaxInt64)},
		{`-9223372036854775808`, math.MinInt64, true, "-9223372036854775808", Int64ID(math.MinInt64)},
		{`9223372036854775808`, 0, false, "9223372036854775808", ID{}},
		{`-9223372036854775809`, 0, false, "-9223372036854775809", ID{}},
	} {
		id, ok := ParseID([]byte(tc.raw))
		if !ok || id.IsString() {
			t.Fatalf("%s: %v, %v", tc.raw, id, ok)
		}
		n, fits := id.Int64()
		if fits != tc.fits || n != tc.n {
			t.Errorf("%s: Int64() = %d, %v", tc.raw, n, fits)
		}
		if id.String() != tc.text || string(id.AppendJSON(nil)) != tc.text {
			t.Errorf("%s: String %q, JSON %s", tc.raw, id.String(), id.AppendJSON(nil))
		}
		if tc.fits && id != tc.equal {
			t.Errorf("%s: %#v != %#v", tc.raw, id, tc.equal)
		}
		again, _ := ParseID(id.AppendJSON(nil))
		if again != id || again == StringID(tc.text) {
			t.Errorf("%s: decoded again as %#v", tc.raw, again)
		}
	}
}
