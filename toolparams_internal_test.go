package snodo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bytedance/sonic"

	"github.com/snodo/snodo/internal/jsoncodec"
)

// TestToolParamsFastPath checks that tools/call's params encoded without
// the codec are the codec's encoding, byte for byte (the codec with map
// keys sorted, which its default configuration leaves in map order), and
// that what the fast path does not take still goes through the codec.
func TestToolParamsFastPath(t *testing.T) {
	if _, ok := jsoncodec.AppendAny(nil, ""); !ok {
		t.Skip("no fast path where sonic's encoder is not native")
	}
	sorted := sonic.Config{SortMapKeys: true}.Froze()
	check := func(name string, args any, wantFast bool) {
		t.Helper()
		want, werr := sorted.Marshal(toolCallParams{Name: name, Arguments: args})
		fast, ok := appendToolParams(name, args)
		if ok != wantFast {
			t.Fatalf("%q %#v: fast path %v, want %v", name, args, ok, wantFast)
		}
		if ok && (werr != nil || !bytes.Equal(fast, want)) {
			t.Fatalf("%q %#v:\n got %s\nwant %s (%v)", name, args, fast, want, werr)
		}
		got, err := toolParams(toolCallParams{Name: name, Arguments: args})
		if (err != nil) != (werr != nil) {
			t.Fatalf("%q %#v: error %v, codec's %v", name, args, err, werr)
		}
		if err == nil && !sameJSON(got, want) {
			t.Fatalf("%q %#v:\n got %s\nwant %s", name, args, got, want)
		}
	}
	for _, name := range []string{"echo", "", `we"ird\name`, "<tool>&\u2028", "bad\xff", "tab\tnl\n"} {
		check(name, nil, true)
		check(name, map[string]any(nil), true)
		check(name, map[string]any{}, true)
		check(name, map[string]any{"text": "hello-1", "n": 3, "f": 2.5, "ok": true, "none": nil}, true)
		check(name, map[string]any{"nested": map[string]any{"list": []any{1, "two", nil, json.RawMessage(`{"a":1}`)}}}, true)
		check(name, map[string]any{"long": strings.Repeat("long text ", 100)}, true)
	}
	// Left to the codec: other argument types, values the fast path does
	// not encode, and values the codec rejects.
	type args struct {
		City string `json:"city"`
	}
	check("weather", args{"Paris"}, false)
	check("weather", &args{"Paris"}, false)
	check("weather", map[string]string{"city": "Paris"}, false)
	check("weather", map[string]any{"at": args{"Paris"}}, false)
	check("weather", map[string]any{"nan": math.NaN()}, false)
	check("weather", map[string]any{"raw": json.RawMessage(`{`)}, false)

	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		m := map[string]any{}
		for range r.IntN(12) {
			m[fmt.Sprint(r.IntN(1000))+string(rune(r.IntN(0x3000)))] = randomArg(r, 0)
		}
		check("tool", m, true)
	}
}

func randomArg(r *rand.Rand, depth int) any {
	switch k := r.IntN(9); {
	case k == 0:
		return nil
	case k == 1:
		return r.Float64() * math.Pow(10, float64(r.IntN(60)-30))
	case k == 2:
		return r.Int64N(1<<53) - 1<<52
	case k == 3:
		return r.IntN(2) == 0
	case k <= 5 || depth > 2:
		b := make([]byte, r.IntN(20))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return string(b)
	case k == 6:
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = randomArg(r, depth+1)
		}
		return a
	default:
		m := map[string]any{}
		for range r.IntN(4) {
			m[fmt.Sprint(r.IntN(100))] = randomArg(r, depth+1)
		}
		return m
	}
}

// sameJSON reports whether a and b decode to the same value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// TestBuildParamsOwn checks that params encoded for the request alone are
// sent as they are when nothing is added to them, and that the params are
// otherwise the ones built without own.
func TestBuildParamsOwn(t *testing.T) {
	legacy := legacyDialect{version: version20251125}
	modern := newModernDialect("2026-07-28", Implementation{Name: "c", Version: "1"}, json.RawMessage(`{}`))
	plain := &callConfig{}
	traced := &callConfig{traceMeta: []byte(`"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"`)}
	for _, tc := range []struct {
		d        dialect
		cc       *callConfig
		token    []byte
		base     string
		tail     string
		sameBase bool
	}{
		{legacy, plain, nil, `{"name":"echo","arguments":{"text":"hi"}}`, "", true},
		{legacy, plain, nil, `{}`, "", true},
		{legacy, plain, nil, `{"name":"echo","arguments":{"_meta":{"a":1}}}`, "", false},
		{legacy, plain, nil, `{"_meta":{"a":1},"name":"echo"}`, "", false},
		{legacy, plain, []byte(`"snodo-1"`), `{"name":"echo"}`, "", false},
		{legacy, traced, nil, `{"name":"echo"}`, "", false},
		{legacy, plain, nil, `{"name":"echo"}`, `"requestState":"s"`, false},
		{legacy, plain, nil, `{ "name":"echo" }`, "", false},
		{modern, plain, nil, `{"name":"echo"}`, "", false},
	} {
		base := []byte(tc.base)
		want, err := buildParams(tc.d, tc.cc, tc.token, base, []byte(tc.tail), false)
		if err != nil {
			t.Fatal(err)
		}
		got, err := buildParams(tc.d, tc.cc, tc.token, base, []byte(tc.tail), true)
		if err != nil {
			t.Fatal(err)
		}
		if !sameJSON(got, want) || !strings.HasPrefix(string(want), "{") {
			t.Errorf("%s: own %s, not own %s", tc.base, got, want)
		}
		if same := &got[0] == &base[0]; same != tc.sameBase {
			t.Errorf("%s: params sent as they are: %v, want %v", tc.base, same, tc.sameBase)
		}
	}
}
