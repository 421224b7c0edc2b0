package guest

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/snodo/snodo/abi"
)

// Fields in name order encode as encoding/json encodes the same values in
// a map (whose keys it sorts).
func TestFieldsEncodeAsEncodingJSONDoes(t *testing.T) {
	fs := Fields{
		Bool("b", true), Number("big", 1e21), Bool("f", false), Integer("i", 42),
		Integer("max", math.MaxInt64), Integer("min", math.MinInt64), Number("n", 1.5),
		Number("neg", -2.5e-9), Strings("nil", nil), String("s", "<a href=\"x\">&amp;</a>\u2028\u2029\x00\x1f\x7f\b\f\n\r\t\\ é \xff\xfe"),
		Number("small", 1e-7), Strings("ss", []string{"a", "<b>", "\xff"}), Number("zero", 0), {Name: "zv"},
	}
	m := map[string]any{}
	for _, f := range fs {
		m[f.Name] = f.Value.Any()
	}
	want, err := json.Marshal(map[string]any{"action": "accept", "content": m})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ElicitResult{Action: Accept, Content: fs}.appendJSON([]byte("prefix"))
	if err != nil || string(got) != "prefix"+string(want) {
		t.Fatalf("got %s %v\nwant prefix%s", got, err, want)
	}
	// encoding/json gives the same through MarshalJSON.
	viaJSON, err := json.Marshal(ElicitResult{Action: Accept, Content: fs})
	if err != nil || string(viaJSON) != string(want) {
		t.Fatalf("encoding/json: %s %v\nwant %s", viaJSON, err, want)
	}
}

func TestFieldsKeepTheirOrder(t *testing.T) {
	got, err := ElicitResult{Action: Accept, Content: Fields{String("z", "1"), Integer("a", 2), Strings("m", []string{"x"})}}.appendJSON(nil)
	if want := `{"action":"accept","content":{"z":"1","a":2,"m":["x"]}}`; err != nil || string(got) != want {
		t.Fatalf("got %s %v, want %s", got, err, want)
	}
	// No content: none in the output, as with omitempty.
	for _, fs := range []Fields{nil, {}} {
		if got, _ := (ElicitResult{Action: Decline, Content: fs}).appendJSON(nil); string(got) != `{"action":"decline"}` {
			t.Fatalf("%#v: %s", fs, got)
		}
	}
}

func TestFieldNameGivenTwiceIsAnError(t *testing.T) {
	many := func(n, first, second int) Fields {
		fs := make(Fields, n)
		for i := range fs {
			fs[i] = Integer(fmt.Sprint("f", i), int64(i))
		}
		fs[second].Name = fs[first].Name
		return fs
	}
	for _, fs := range []Fields{
		{String("a", "1"), String("a", "2")},
		many(5, 1, 4),
		many(40, 3, 17),  // the second past indexAt, the first before it
		many(40, 20, 39), // both past it
		many(40, 0, indexAt),
	} {
		_, err := ElicitResult{Action: Accept, Content: fs}.appendJSON(nil)
		if err == nil || !strings.Contains(err.Error(), "given twice") {
			t.Errorf("%d fields with a name twice: %v", len(fs), err)
		}
		if _, err := json.Marshal(fs); err == nil {
			t.Errorf("encoding/json, %d fields with a name twice: no error", len(fs))
		}
	}
	if _, err := (ElicitResult{Action: Accept, Content: many(40, 0, 1)[1:]}).appendJSON(nil); err != nil {
		t.Fatalf("40 distinct names: %v", err)
	}
}

func TestNonFiniteNumberFieldIsAnError(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if out, err := (ElicitResult{Action: Accept, Content: Fields{Number("x", f)}}).appendJSON(nil); err == nil {
			t.Errorf("%v encoded: %s", f, out)
		}
	}
	// Through the SDK: -32603, not an output that is not JSON.
	reset()
	HandleElicitation(func(Context, ElicitRequest) (ElicitResult, error) {
		return ElicitResult{Action: Accept, Content: Fields{Number("x", math.NaN())}}, nil
	})
	st, out := Call(abi.ExportHandle, abi.AppendRequest(nil, abi.MethodElicitationCreate, json.RawMessage(`{"message":"m"}`)))
	if e, err := abi.ParseErrorObject(out); st != abi.StatusError || err != nil || e.Code != -32603 {
		t.Fatalf("%v %s", st, out)
	}
}

func TestFieldsUnmarshal(t *testing.T) {
	var fs Fields
	err := json.Unmarshal([]byte(`{"s":"x\u00e9","i":-3,"n":1.5,"big":1e300,"huge":99999999999999999999,"b":true,"f":false,"l":["a","b"],"e":[],"z":null}`), &fs)
	if err != nil {
		t.Fatal(err)
	}
	want := Fields{String("s", "xé"), Integer("i", -3), Number("n", 1.5), Number("big", 1e300), Number("huge", 1e20),
		Bool("b", true), Bool("f", false), Strings("l", []string{"a", "b"}), Strings("e", []string{}), {Name: "z"}}
	if !reflect.DeepEqual(fs, want) {
		t.Fatalf("got  %#v\nwant %#v", fs, want)
	}
	if v, ok := fs.Get("l"); !ok || v.Kind() != KindStrings || !reflect.DeepEqual(v.Any(), []string{"a", "b"}) {
		t.Fatalf("Get(l): %#v %v", v, ok)
	}
	if _, ok := fs.Get("nope"); ok {
		t.Fatal("Get of a missing name")
	}
	for _, bad := range []string{`{"o":{}}`, `{"a":[1]}`, `[]`, `"s"`, `{"a":1`, `{"a":1} x`} {
		var fs Fields
		if err := json.Unmarshal([]byte(bad), &fs); err == nil {
			t.Errorf("%s: decoded %#v", bad, fs)
		}
	}
	var nilFields = Fields{String("a", "b")}
	if err := json.Unmarshal([]byte(`null`), &nilFields); err != nil || nilFields != nil {
		t.Fatalf("null: %#v %v", nilFields, err)
	}
}

// A form's properties come in the request's order; a name given twice
// keeps its first place and its last schema, as in a map.
func TestPropertiesKeepTheRequestsOrder(t *testing.T) {
	var req ElicitRequest
	reset()
	HandleElicitation(func(_ Context, r ElicitRequest) (ElicitResult, error) {
		req = r
		return ElicitResult{Action: Decline}, nil
	})
	var names []string
	var props []string
	for i := range 3 * indexAt {
		n := fmt.Sprintf("p%02d", (i*7)%(2*indexAt)) // repeats past 2*indexAt
		props = append(props, fmt.Sprintf(`%q:{"type":"string","title":"%d"}`, n, i))
		if i < 2*indexAt {
			names = append(names, n)
		}
	}
	for _, tc := range []struct {
		props string
		names []string
		title map[string]string
	}{
		{`"c":{"type":"string"},"a":{"type":"number"},"b":{"type":"boolean"}`, []string{"c", "a", "b"}, nil},
		{`"a":{"title":"1"},"b":{},"a":{"title":"2"}`, []string{"a", "b"}, map[string]string{"a": "2"}},
		{strings.Join(props, ","), names, map[string]string{"p00": "32", "p07": "33", "p15": "25"}},
	} {
		params := `{"message":"m","requestedSchema":{"type":"object","properties":{` + tc.props + `}}}`
		if st, out := Call(abi.ExportHandle, abi.AppendRequest(nil, abi.MethodElicitationCreate, json.RawMessage(params))); st != abi.StatusOK {
			t.Fatalf("%v %s", st, out)
		}
		var got []string
		for _, p := range req.RequestedSchema.Properties {
			got = append(got, p.Name)
		}
		if !reflect.DeepEqual(got, tc.names) {
			t.Fatalf("order %v, want %v", got, tc.names)
		}
		for name, title := range tc.title {
			if p, ok := req.RequestedSchema.Properties.Get(name); !ok || p.Title != title {
				t.Fatalf("%s: %+v %v, want title %s", name, p, ok, title)
			}
		}
		// encoding/json reads and writes them the same way, in order.
		var s Schema
		if err := json.Unmarshal([]byte(params[strings.Index(params, `{"type"`):len(params)-1]), &s); err != nil || !reflect.DeepEqual(s, req.RequestedSchema) {
			t.Fatalf("encoding/json: %v\n%#v\n%#v", err, s, req.RequestedSchema)
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var again Schema
		if err := json.Unmarshal(out, &again); err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("round trip through %s: %v", out, err)
		}
	}
	if _, ok := req.RequestedSchema.Properties.Get("nope"); ok {
		t.Fatal("Get of a missing name")
	}
}

func FuzzFieldValueEncodesAsEncodingJSON(f *testing.F) {
	f.Add("s", "<&>\u2028", 1.5, int64(-1), true)
	f.Add("\xff", "", 1e21, int64(math.MaxInt64), false)
	f.Fuzz(func(t *testing.T, name, s string, x float64, i int64, b bool) {
		for _, fd := range []Field{String(name, s), Number(name, x), Integer(name, i), Bool(name, b), Strings(name, []string{s, name})} {
			want, wantErr := json.Marshal(map[string]any{fd.Name: fd.Value.Any()})
			got, err := Fields{fd}.appendJSON(nil)
			if (err == nil) != (wantErr == nil) || (err == nil && string(got) != string(want)) {
				t.Fatalf("%#v: got %s %v, want %s %v", fd, got, err, want, wantErr)
			}
		}
	})
}
