package jsoncodec

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bytedance/sonic"
)

// sortedDefault is sonic's default configuration with map keys sorted:
// what AppendAny writes.
var sortedDefault = sonic.Config{SortMapKeys: true}.Froze()

// checkSame fails unless AppendAny encodes v as sonic does, or declines a
// value sonic does not encode either.
func checkSame(t *testing.T, v any) {
	t.Helper()
	if !nativeEncoder {
		t.Skip("sonic's encoder is not native here")
	}
	want, werr := sortedDefault.Marshal(v)
	got, ok := AppendAny([]byte("prefix"), v)
	switch {
	case !ok && werr == nil:
		t.Fatalf("%#v: declined; sonic writes %q", v, want)
	case ok && werr != nil:
		t.Fatalf("%#v: wrote %q; sonic fails: %v", v, got, werr)
	case ok && !bytes.Equal(got, append([]byte("prefix"), want...)):
		t.Fatalf("%#v:\n got %q\nwant %q", v, got[len("prefix"):], want)
	}
}

func TestAppendAnyCases(t *testing.T) {
	for _, v := range []any{
		nil, "", "plain", `"quoted" \back\slash/`, "<>&", "a\u2028b\u2029c", "bad\xffx\xc3", "\xed\xa0\x80",
		"\x00\x01\b\t\n\v\f\r\x1f\x7f", "é😀", strings.Repeat("0123456\"", 9), strings.Repeat("x", 300) + "\n",
		true, false,
		0.0, math.Copysign(0, -1), 1.0, -1.5, 0.1, 1e20, 1e21, 1e-6, 1e-7, 1.5e-9, 123456789012345680000.0,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 1e300, -1e-300,
		float32(0.1), float32(1e21), float32(1e-7), float32(3.4e38), float32(16777216), float32(math.SmallestNonzeroFloat32),
		math.NaN(), math.Inf(1), math.Inf(-1), float32(math.Inf(1)),
		0, -1, math.MaxInt64, math.MinInt64, int8(-128), int16(300), int32(-7), int64(1 << 60),
		uint(7), uint8(255), uint16(65535), uint32(1 << 31), uint64(math.MaxUint64),
		json.RawMessage(nil), json.RawMessage{}, json.RawMessage(`{"a":[1,2]}`), json.RawMessage(" \n[1, 2]\t"),
		json.RawMessage(`nope`), json.RawMessage(`{"a":1}x`), json.RawMessage(`"bad\xff"`),
		map[string]any(nil), map[string]any{}, []any(nil), []any{},
		map[string]any{"b": 1, "a": 2, "A": 3, "é": 4, "aa": 5, "": 6, "a\x00": 7, "~": 8, "<k>": "&"},
		map[string]any{"nested": map[string]any{"list": []any{1, "two", nil, []any{}, map[string]any{"x": false}}}},
		map[string]any{"bad": math.NaN()},
	} {
		checkSame(t, v)
	}
	// Types left to sonic.
	for _, v := range []any{
		map[string]any{"struct": struct{ A int }{1}},
		[]any{json.Number("12"), 1},
		map[string]string{"a": "b"},
		struct{}{},
		[]byte("x"),
		new(int),
	} {
		if got, ok := AppendAny(nil, v); ok {
			t.Errorf("%#v: wrote %q", v, got)
		}
	}
}

func TestAppendAnyManyKeys(t *testing.T) {
	m := map[string]any{}
	for i := range 200 {
		m[string(rune('a'+i%26))+strings.Repeat("k", i/26)+string(rune('0'+i%10))] = i
	}
	checkSame(t, m)
}

func TestAppendAnyCycle(t *testing.T) {
	m := map[string]any{}
	m["self"] = m
	if _, ok := AppendAny(nil, m); ok {
		t.Fatal("a cyclic map was encoded")
	}
	deep := any("leaf")
	for range maxDepth - 1 {
		deep = []any{deep}
	}
	checkSame(t, deep)
}

// TestAppendAnyGenerated compares AppendAny with sonic over many generated
// values of the shapes tool arguments take.
func TestAppendAnyGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for range n {
		checkSame(t, genValue(r, 0))
	}
}

func genValue(r *rand.Rand, depth int) any {
	k := r.IntN(14)
	if depth > 3 && k >= 11 {
		k = r.IntN(11)
	}
	switch k {
	case 0:
		return nil
	case 1, 2:
		return genString(r)
	case 3:
		return r.IntN(2) == 0
	case 4:
		return math.Float64frombits(r.Uint64())
	case 5:
		f := []float64{0, 1, -2.5, 1e21, 1e-7, 123.456, float64(r.Int64()), r.NormFloat64() * 1e6}
		return f[r.IntN(len(f))]
	case 6:
		return math.Float32frombits(r.Uint32())
	case 7:
		switch r.IntN(4) {
		case 0:
			return r.Int()
		case 1:
			return int8(r.Int())
		case 2:
			return r.Uint64()
		default:
			return int64(r.IntN(1000) - 500)
		}
	case 8:
		raws := []string{`1`, `"s"`, `{"a":[true,null]}`, ` [ 1 , 2 ] `, "{\n}", `{`, `tru`, `"\u00e9"`, `01`, `1.`, `-`, `[1,]`}
		return json.RawMessage(raws[r.IntN(len(raws))])
	case 9:
		if r.IntN(8) == 0 {
			return []any(nil)
		}
		fallthrough
	case 11, 12:
		a := make([]any, r.IntN(5))
		for i := range a {
			a[i] = genValue(r, depth+1)
		}
		return a
	default:
		if r.IntN(10) == 0 {
			return map[string]any(nil)
		}
		m := map[string]any{}
		for range r.IntN(16) {
			m[genString(r)] = genValue(r, depth+1)
		}
		return m
	}
}

func genString(r *rand.Rand) string {
	pieces := []string{"a", "text", "hello-42", `"`, `\`, "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "<", ">", "&",
		"\u2028", "\u2029", "é", "😀", "\xff", "\xc3", "\xed\xa0\x80", "/", " ", "0123456789abcdef"}
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\\n\x00", "<>&\u2028", "bad\xff", strings.Repeat("abcdefg\"", 3)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkSame(t, s)
		checkSame(t, map[string]any{s: s, "k" + s: []any{s}})
		checkValid(t, s)
	})
}

// checkValid: AppendStringValid writes valid UTF-8 JSON that reads back as
// the string encoding/json writes for s, each invalid byte U+FFFD.
func checkValid(t *testing.T, s string) {
	t.Helper()
	got := AppendStringValid(nil, s)
	if !utf8.Valid(got) {
		t.Fatalf("AppendStringValid(%q) = %q: not UTF-8", s, got)
	}
	ref, _ := json.Marshal(s)
	var a, b string
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("AppendStringValid(%q) = %q: %v", s, got, err)
	}
	if err := json.Unmarshal(ref, &b); err != nil || a != b {
		t.Fatalf("AppendStringValid(%q) reads back as %q, encoding/json's as %q", s, a, b)
	}
}

func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, 1, 0.1, 1e21, 1e-7, math.MaxFloat64} {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		checkSame(t, math.Float64frombits(bits))
		checkSame(t, math.Float32frombits(uint32(bits)))
	})
}
