package guest

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/snodo/snodo/abi"
)

// The SDK's codec must decode and encode what encoding/json does for the
// SDK's types: these tests compare the two on the same inputs.

var decodeSeeds = []string{
	`{"message":"hi","requestedSchema":{"type":"object","properties":{"name":{"type":"string","title":"Name","enum":["a","b"],"minimum":1.5,"maximum":2e3,"default":"x"}},"required":["name"]}}`,
	`{"mode":"url","url":"https://x","elicitationId":"e1","message":"m","_meta":{"k":[1,2,{"a":null}]}}`,
	`{"messages":[{"role":"user","content":{"type":"text","text":"w?"}}],"maxTokens":9,"tools":[{"name":"get_weather","inputSchema":{"type":"object"}}],"toolChoice":{"mode":"auto"},"TOOLS":null}`,
	`{"MESSAGE":"upper","Message":"mixed","message":"last"}`,
	`{"message":"\u00e9\ud83d\ude00\ud800x\\\"\/\b\f\n\r\t","requestedSchema":null}`,
	"{\"message\":\"\xff\xfe bad utf8 \xe2\x82\"}",
	`{"message":1}`,
	`{"message":"a"} x`,
	`{"message":"a",}`,
	`{"requestedSchema":{"properties":{"a":{"type":"x"},"a":{"title":"y"}}}}`,
	`{"requestedSchema":{"required":[],"properties":{}}}`,
	`{"requestedSchema":{"required":null,"properties":null}}`,
	`{"requestedSchema":{"required":["a",null,"b"]}}`,
	`{"requestedSchema":"s"}`,
	`null`,
	`[]`,
	`"s"`,
	``,
	` {"message" : "spaces" } `,
	`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":100,"temperature":0.5,"stopSequences":["x"],"systemPrompt":"s","includeContext":"none","modelPreferences":{"hints":[]},"metadata":{},"_meta":null}`,
	`{"maxTokens":1.5}`,
	`{"maxTokens":1e2}`,
	`{"maxTokens":99999999999999999999}`,
	`{"temperature":null,"maxTokens":-0}`,
	`{"messages":[{"role":"a"}],"messages":[{"content":1}]}`,
	`{"progressToken":"t","progress":1,"total":4,"message":"m"}`,
	`{"progressToken":7,"progress":1e400}`,
	`{"method":"notifications/resources/updated","params":{"uri":"file:///x"}}`,
	`{"type":"text","text":"t"}`,
	`[{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}]`,
	`{"a":[[[[[]]]]],"b":{"c":{"d":-1.5e-3}},"message":"x"}`,
	`{"message":"\u12"}`,
	`{"message":"\x"}`,
	`{"mes\u0073age":"escaped key"}`,
	"{\"me\u017Fsage\":\"long s\"}",
	`{"message":tru}`,
	`{"a":01}`,
	`{"a":-}`,
	`{"a":1.}`,
	`{"a":1e}`,
}

// Envelopes a host would not write, but which must be read as
// encoding/json reads them.
var dispatchSeeds = []string{
	`{"params":{"message":"params first"},"method":"elicitation/create"}`,
	`{"method":"elicitation/create","params":{"message":"a"},"params":{"mode":"b"}}`,
	`{"method":"elicitation/create","params":{"message":1},"params":{"message":"fixed"}}`,
	`{"method":"elicitation/create","params":{"message":1}}`,
	`{"method":"elicitation/create","params":{"message":1},"x":tru}`,
	`{"method":"elicitation/create","params":{"message":"a"},"method":"roots/list"}`,
	`{"method":"roots/list","params":{"message":"a"},"method":"elicitation/create"}`,
	`{"method":"elicitation/create","params":null}`,
	`{"method":"elicitation/create"}`,
	`{"METHOD":"elicitation/create","Params":{"message":"folded"}}`,
	`{"method":"elicitation/create","params":{"message":"a"}} {}`,
	`{"method":"elicitation/create","params":[1]}`,
	`{"method":"elicitation/create","params":{"message":"a"`,
	`{"method":"nope","params":{}}`,
	`{"method":2}`,
	`[]`,
}

func FuzzDecodeMatchesEncodingJSON(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	for _, s := range dispatchSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		compareDecode[ElicitRequest](t, data)
		compareDecode[SamplingRequest](t, data)
		compareDecode[RootsRequest](t, data)
		compareDecode[Progress](t, data)
		compareDecode[Event](t, data)
		compareDecode[TextContent](t, data)

		compareDispatch(t, data)
		compareDispatch(t, abi.AppendRequest(nil, abi.MethodElicitationCreate, data))

		m := SamplingMessage{Content: data}
		if got, want := m.Text(), textWithEncodingJSON(m); got != want {
			t.Fatalf("Text of %q: %q, encoding/json %q", data, got, want)
		}
	})
}

// compareDispatch runs input through the SDK as snodo_handle's input, and
// checks the request the handler got, or the error, against what
// encoding/json makes of the same input.
func compareDispatch(t *testing.T, input []byte) {
	t.Helper()
	reset()
	var got *ElicitRequest
	HandleElicitation(func(_ Context, req ElicitRequest) (ElicitResult, error) {
		got = &req
		return ElicitResult{Action: Accept}, nil
	})
	st, out := Call(abi.ExportHandle, input)

	var env abi.Request
	var want ElicitRequest
	wantCode := 0
	switch {
	case json.Unmarshal(input, &env) != nil:
		wantCode = -32602
	case env.Method != abi.MethodElicitationCreate:
		wantCode = -32601
	case len(env.Params) > 0 && json.Unmarshal(env.Params, &want) != nil:
		wantCode = -32602
	}
	if wantCode != 0 {
		e, err := abi.ParseErrorObject(out)
		if st != abi.StatusError || err != nil || e.Code != int64(wantCode) || got != nil {
			t.Fatalf("input %q: status %v, output %s, want error %d", input, st, out, wantCode)
		}
		return
	}
	if st != abi.StatusOK || got == nil {
		t.Fatalf("input %q: status %v, output %s, want the handler called", input, st, out)
	}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("input %q:\n got %#v\nwant %#v", input, *got, want)
	}
}

func compareDecode[T any](t *testing.T, data []byte) {
	t.Helper()
	var got, want T
	err := unmarshal(data, &got)
	wantErr := json.Unmarshal(data, &want)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%T from %q: error %v, encoding/json %v", got, data, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%T from %q:\n got %#v\nwant %#v", got, data, got, want)
	}
	if r, ok := any(&got).(*ElicitRequest); ok {
		// Properties decode through the SDK's own decoder under
		// encoding/json too (UnmarshalJSON): compare them with what
		// encoding/json makes of the object as a map.
		var ref refElicitRequest
		refErr := json.Unmarshal(data, &ref)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("ElicitRequest from %q: error %v, encoding/json with a map %v", data, err, refErr)
		}
		if err == nil && !reflect.DeepEqual(r.asRef(), ref) {
			t.Fatalf("ElicitRequest from %q:\n got %#v\nwant %#v", data, r.asRef(), ref)
		}
	}
}

// refElicitRequest is ElicitRequest with its properties in a map, as
// encoding/json decodes them without the SDK.
type refElicitRequest struct {
	Mode            string `json:"mode,omitempty"`
	Message         string `json:"message"`
	RequestedSchema struct {
		Type       string                    `json:"type"`
		Properties map[string]PropertySchema `json:"properties,omitempty"`
		Required   []string                  `json:"required,omitempty"`
	} `json:"requestedSchema"`
	URL           string          `json:"url,omitempty"`
	ElicitationID string          `json:"elicitationId,omitempty"`
	Meta          json.RawMessage `json:"_meta,omitempty"`
}

func (r *ElicitRequest) asRef() refElicitRequest {
	ref := refElicitRequest{Mode: r.Mode, Message: r.Message, URL: r.URL, ElicitationID: r.ElicitationID, Meta: r.Meta}
	ref.RequestedSchema.Type = r.RequestedSchema.Type
	ref.RequestedSchema.Required = r.RequestedSchema.Required
	if ps := r.RequestedSchema.Properties; ps != nil {
		ref.RequestedSchema.Properties = map[string]PropertySchema{}
		for _, p := range ps {
			if _, twice := ref.RequestedSchema.Properties[p.Name]; twice {
				panic("property " + p.Name + " twice")
			}
			ref.RequestedSchema.Properties[p.Name] = p.PropertySchema
		}
	}
	return ref
}

// textWithEncodingJSON is SamplingMessage.Text as it was written with
// encoding/json.
func textWithEncodingJSON(m SamplingMessage) string {
	var one TextContent
	if json.Unmarshal(m.Content, &one) == nil && one.Type == "text" {
		return one.Text
	}
	var many []TextContent
	if json.Unmarshal(m.Content, &many) != nil {
		return ""
	}
	var s string
	for _, c := range many {
		if c.Type == "text" {
			s += c.Text
		}
	}
	return s
}

func TestDecodeMatchesEncodingJSON(t *testing.T) {
	for _, s := range decodeSeeds {
		data := []byte(s)
		compareDecode[ElicitRequest](t, data)
		compareDecode[SamplingRequest](t, data)
		compareDecode[RootsRequest](t, data)
		compareDecode[Progress](t, data)
		compareDecode[Event](t, data)
		compareDecode[TextContent](t, data)
	}
	for _, s := range dispatchSeeds {
		compareDispatch(t, []byte(s))
	}
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	compareDecode[ElicitRequest](t, []byte(`{"x":`+deep+`}`))
}

// The decoded strings and raw values must not share the call's input: the
// host reuses the input buffer for the next call, and a handler may keep
// what it was given.
func TestKeptRequestSurvivesTheNextInput(t *testing.T) {
	reset()
	var kept ElicitRequest
	HandleElicitation(func(_ Context, req ElicitRequest) (ElicitResult, error) {
		kept = req
		return ElicitResult{Action: Decline}, nil
	})
	input := abi.AppendRequest(nil, abi.MethodElicitationCreate,
		json.RawMessage(`{"message":"hello","_meta":{"a":1},"requestedSchema":{"properties":{"p":{"default":"d"}}}}`))
	if st, out := Call(abi.ExportHandle, input); st != abi.StatusOK {
		t.Fatalf("%v %s", st, out)
	}
	for i := range input {
		input[i] = 'X'
	}
	if kept.Message != "hello" || string(kept.Meta) != `{"a":1}` || string(kept.RequestedSchema.Properties[0].Default) != `"d"` {
		t.Fatalf("kept request changed with the input: %+v", kept)
	}
	// A raw value's capacity ends with it: appending to it copies.
	meta := append(kept.Meta, '!')
	if string(kept.RequestedSchema.Properties[0].Default) != `"d"` || string(meta) != `{"a":1}!` {
		t.Fatalf("append to a raw value wrote over the input: %+v", kept)
	}
}

// unmarshal decodes data into v with the SDK's decoder when v's type has
// one, else with encoding/json. Strings and raw values decoded by the
// SDK's decoder may share data's memory.
func unmarshal(data []byte, v any) error {
	if dv, ok := v.(jsonDecoder); ok {
		d := decoder{data: data}
		d.ws()
		if err := dv.decodeJSON(&d); err != nil {
			return err
		}
		return d.end()
	}
	return json.Unmarshal(data, v)
}

// marshalAppend appends v's JSON to b, with the SDK's encoder when it
// knows v's type.
func marshalAppend(b []byte, v any) ([]byte, error) {
	if a, ok := v.(jsonAppender); ok {
		return a.appendJSON(b)
	}
	return appendAny(b, v)
}

type marshalerValue struct{}

func (marshalerValue) MarshalJSON() ([]byte, error) { return []byte(`{"custom" : true}`), nil }

func TestEncodeMatchesEncodingJSON(t *testing.T) {
	values := []any{
		ElicitResult{Action: Accept, Content: Fields{
			Bool("b", true), Bool("f", false), Number("big", 1e21), Integer("i", 42), Integer("min", math.MinInt64),
			Number("n", 1.5), Number("neg", -2.5e-9), Strings("nil", nil), String("s", "<a href=\"x\">&amp;</a>\u2028\u2029\x00\x1f\x7f\b\f\n\r\t\\ é \xff\xfe"),
			Number("small", 1e-7), Strings("ss", []string{"a", "<b>"}), Number("zero", 0),
		}},
		&Error{Code: 1, Message: "m", Data: map[string]any{
			"s": "<a href=\"x\">&amp;</a>\u2028\u2029\x00\x1f\x7f\b\f\n\r\t\\ é \xff\xfe",
			"i": 42, "i8": int8(-8), "i16": int16(16), "i32": int32(-32), "i64": int64(math.MinInt64),
			"u": uint(7), "u8": uint8(8), "u16": uint16(16), "u32": uint32(32), "u64": uint64(math.MaxUint64),
			"f": 1.5, "big": 1e21, "small": 1e-7, "neg": -2.5e-9, "zero": 0.0, "f32": float32(0.1), "f32e": float32(1e-7),
			"b": true, "n": nil, "nested": map[string]any{"z": []any{1, "two", nil, map[string]any{}}, "a": []string{"x"}},
			"ms": map[string]string{"k": "v", "a": "b"}, "nilmap": map[string]any(nil), "nilslice": []any(nil),
			"raw": json.RawMessage(`{"a" : [1, 2]}`), "bytes": []byte("hi"), "ptr": &Root{URI: "u"},
			"marshaler": marshalerValue{}, "text": Text("t"), "texts": []TextContent{Text("a")},
		}},
		ElicitResult{Action: Decline},
		ElicitResult{Action: Cancel, Content: Fields{}},
		SamplingResult{Role: "assistant", Content: Text("hi"), Model: "m", StopReason: "endTurn"},
		SamplingResult{Role: "assistant", Model: "m"},
		SamplingResult{Content: []TextContent{Text("a"), Text("<b>")}},
		RootsResult{Roots: []Root{{URI: "file:///a", Name: "A"}, {URI: "file:///b"}}},
		RootsResult{},
		RootsResult{Roots: []Root{}},
		&Error{Code: -32602, Message: "bad <input>"},
		&Error{Code: 1, Message: "m", Data: map[string]int{"n": 1}},
		&Error{Code: 1, Message: "m", Data: []any{1.0, "x"}},
	}
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := marshalAppend([]byte("prefix"), v)
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		if string(got) != "prefix"+string(want) {
			t.Errorf("%T:\n got %s\nwant prefix%s", v, got, want)
		}
	}
	for _, v := range []any{math.NaN(), math.Inf(1), float32(math.Inf(-1)), make(chan int)} {
		if _, err := marshalAppend(nil, &Error{Message: "m", Data: map[string]any{"x": v}}); err == nil {
			t.Errorf("%v encoded without error", v)
		}
	}
}

func FuzzEncodeStringMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "<>&", "\u2028\u2029", "\xff", "\x00\x1f\"\\", "é😀", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}

func FuzzEncodeFloatMatchesEncodingJSON(f *testing.F) {
	for _, x := range []float64{0, 1, -1, 0.1, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		for _, v := range []any{x, float32(x)} {
			want, wantErr := json.Marshal(v)
			got, err := appendAny(nil, v)
			if (err == nil) != (wantErr == nil) || (err == nil && string(got) != string(want)) {
				t.Fatalf("%T %v: got %s %v, want %s %v", v, v, got, err, want, wantErr)
			}
		}
	})
}

// plain never passes a byte that may end a run of plain string bytes, and
// within whole words on a little-endian machine it stops exactly at the
// first one.
func FuzzPlain(f *testing.F) {
	f.Add([]byte(`"abcdefgh\"ijklmnop"`), 1)
	f.Add([]byte("0123456789abcdef\x01é\\\""), 3)
	f.Fuzz(func(t *testing.T, data []byte, i int) {
		if i < 0 || i > len(data) {
			return
		}
		first := i
		for first < len(data) {
			c := data[first]
			if c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
				break
			}
			first++
		}
		got := plain(data, i)
		if got < i || got > first {
			t.Fatalf("plain(%q, %d) = %d, first special byte at %d", data, i, got, first)
		}
		if littleEndian && first < len(data) && first < i+(len(data)-i)/8*8 && got != first {
			t.Fatalf("plain(%q, %d) = %d, want exactly %d", data, i, got, first)
		}
	})
}

// The request's first properties and strings share one allocation per
// call (callArena): what a handler keeps must still not change with the
// next call, appending to a slice must not write into another, and an
// input too long for the arena is copied on its own.
func TestKeptRequestSlicesAreItsOwn(t *testing.T) {
	for _, msg := range []string{"short", strings.Repeat("long ", arenaInput/4)} {
		reset()
		var kept []ElicitRequest
		HandleElicitation(func(_ Context, req ElicitRequest) (ElicitResult, error) {
			kept = append(kept, req)
			return ElicitResult{Action: Decline}, nil
		})
		params := func(field string) json.RawMessage {
			return json.RawMessage(`{"message":"` + msg + `","requestedSchema":{"properties":{"` + field + `":{"type":"string","enum":["x","y"]}},"required":["` + field + `"]}}`)
		}
		for _, field := range []string{"a", "b"} {
			input := abi.AppendRequest(nil, abi.MethodElicitationCreate, params(field))
			if st, out := Call(abi.ExportHandle, input); st != abi.StatusOK {
				t.Fatalf("%v %s", st, out)
			}
			clear(input)
		}
		first, second := kept[0].RequestedSchema, kept[1].RequestedSchema
		if first.Properties[0].Name != "a" || first.Required[0] != "a" || second.Properties[0].Name != "b" || second.Required[0] != "b" ||
			kept[0].Message != msg || kept[1].Message != msg {
			t.Fatalf("kept requests changed: %+v %+v", kept[0], kept[1])
		}
		req := append(first.Required, "r2", "r3")
		props := append(first.Properties, Property{Name: "p2"}, Property{Name: "p3"})
		enum := append(first.Properties[0].Enum, "z")
		if first.Required[0] != "a" || first.Properties[0].Name != "a" || !reflect.DeepEqual(first.Properties[0].Enum, []string{"x", "y"}) ||
			len(req) != 3 || len(props) != 3 || len(enum) != 3 {
			t.Fatalf("an append wrote into another slice: %+v", first)
		}
	}
}
