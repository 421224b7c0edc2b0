package snodo

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// flatSeeds are tool results and content blocks for the fast decoders:
// the ones they take and the ones they must leave to the codec.
var flatSeeds = []string{
	`{"content":[{"type":"text","text":"the weather is fine"}]}`,
	`{"resultType":"complete","content":[{"type":"text","text":"fine"}],"structuredContent":{"t":21},"isError":false}`,
	` { "content" : [ { "type" : "text" , "text" : "a" } , {"type":"image","data":"AAAA","mimeType":"image/png"} ] , "isError" : true } `,
	`{"content":[{"type":"resource_link","uri":"file:///a","name":"a","title":"A","description":"é ü"}],"_meta":{"k":[1,2,{"x":"}"}]}}`,
	`{"content":[{"type":"text","text":"a\"b"}]}`,
	`{"content":[{"type":"text","text":"\u00e9"}]}`,
	`{"content":[{"type":"text","Text":"case"}]}`,
	`{"content":[{"type":"text","text":"x","extra":1}]}`,
	`{"content":[{"type":"text","size":3}]}`,
	`{"content":[{"type":"text","text":null}]}`,
	`{"content":[]}`,
	`{"content":null}`,
	`{"content":[{"type":"text"}],"content":[{"type":"image"}]}`,
	`{"content":[{"type":"text"}],"isError":null}`,
	`{"content":[{"type":"text"}],"structuredContent":null}`,
	`{"content":[{"type":"text"}],"structuredContent":{"a":tru}}`,
	`{"content":[{"type":"text"}],"structuredContent":"s","_meta":{}}`,
	`{"content":[{"type":"text"}],"other":1}`,
	`{"content":[{"type":"text"}]}x`,
	`{"content":[{"type":"text"}],}`,
	`{,"content":[{"type":"text"}]}`,
	`{"content":[{"type":"text"},]}`,
	`{"content":[{"type":"text" "text":"a"}]}`,
	`{"content":[{"type":"te` + "\x01" + `xt"}]}`,
	`{"content":[{"type":"te` + "\xff" + `xt"}]}`,
	`{"isError":true}`,
	`{}`,
	`[]`,
	``,
}

// exactToolResult is decodeToolResult by the codec alone, each block
// decoded by decodeContentExact.
func exactToolResult(raw []byte) (*CallToolResult, error) {
	var r struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
		IsError           bool              `json:"isError,omitempty"`
		Meta              json.RawMessage   `json:"_meta,omitempty"`
	}
	if err := unmarshal(raw, &r); err != nil {
		return nil, err
	}
	res := &CallToolResult{StructuredContent: r.StructuredContent, IsError: r.IsError, Meta: r.Meta}
	if r.Content != nil {
		res.Content = make([]Content, len(r.Content))
	}
	for i, c := range r.Content {
		if err := decodeContentExact(c, &res.Content[i]); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// checkFlat checks that the fast decoders, when they take raw, give what
// the codec gives.
func checkFlat(t *testing.T, raw []byte) {
	t.Helper()
	if got := decodeFlatToolResult(raw); got != nil {
		want, err := exactToolResult(raw)
		if err != nil {
			t.Fatalf("%q: fast path took it, the codec says %v", raw, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: fast path %+v, codec %+v", raw, got, want)
		}
	}
	var got Content
	if decodeFlatContent(raw, &got) {
		var want Content
		if err := decodeContentExact(raw, &want); err != nil {
			t.Fatalf("%q: fast path took the block, the codec says %v", raw, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: fast path %+v, codec %+v", raw, got, want)
		}
	}
}

func TestFlatDecodersMatchCodec(t *testing.T) {
	taken := 0
	for _, s := range flatSeeds {
		checkFlat(t, []byte(s))
		if decodeFlatToolResult([]byte(s)) != nil {
			taken++
		}
	}
	if taken < 4 {
		t.Fatalf("the fast path took %d of the seeds, want the 4 plain results", taken)
	}
	// What the fast path must leave to the codec.
	for _, s := range []string{
		`{"content":[{"type":"text","text":"a\"b"}]}`,
		`{"content":[{"type":"text","Text":"case"}]}`,
		`{"content":[]}`,
		`{"content":[{"type":"text"}],"structuredContent":null}`,
		`{"content":[{"type":"text"}],"structuredContent":{"a":tru}}`,
		`{"content":[{"type":"text"}]}x`,
		`{,"content":[{"type":"text"}]}`,
		`{"content":[{"type":"te` + "\xff" + `xt"}]}`,
	} {
		if decodeFlatToolResult([]byte(s)) != nil {
			t.Errorf("%q: fast path took it", s)
		}
	}
}

func FuzzFlatDecoders(f *testing.F) {
	for _, s := range flatSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkFlat(t, raw) })
}

// exactElicitMode is elicitMode by the codec alone.
func exactElicitMode(params []byte) string {
	var p struct {
		Mode string `json:"mode"`
	}
	_ = unmarshal(params, &p)
	if p.Mode == "" {
		return elicitForm
	}
	return p.Mode
}

var elicitModeSeeds = []string{
	`{"message":"m","requestedSchema":{"type":"object","properties":{"mode":{"type":"string"}}}}`,
	`{"mode":"url","url":"https://example.com","elicitationId":"e"}`,
	`{"message":"m","mode":"form"}`,
	`{"mode":null}`,
	`{"Mode":"url"}`,
	`{"MODE":"url","mode":"form"}`,
	`{"mode":"form","Mode":"url"}`,
	`{"mode":"u\u0072l"}`,
	`{"mode":"url","mode":"form"}`,
	`{"mode":"url","mode":null}`,
	`{"mode":7}`,
	`{"mode":"` + "\x01" + `"}`,
	`{"mode":"é"}`,
	`{"ｍode":"url"}`,
	`{"mode":"url"`,
	`[]`,
	``,
}

func TestElicitModeMatchesCodec(t *testing.T) {
	for _, s := range elicitModeSeeds {
		if got, want := elicitMode([]byte(s)), exactElicitMode([]byte(s)); got != want {
			t.Errorf("%q: elicitMode %q, the codec %q", s, got, want)
		}
	}
	if got := elicitMode([]byte(`{"message":"m","mode":"url"}`)); got != elicitURL {
		t.Errorf("elicitMode = %q, want url", got)
	}
}

func FuzzElicitMode(f *testing.F) {
	for _, s := range elicitModeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		if !json.Valid(params) {
			// The transports hand over params of a decoded message.
			return
		}
		if got, want := elicitMode(params), exactElicitMode(params); got != want {
			t.Fatalf("%q: elicitMode %q, the codec %q", params, got, want)
		}
	})
}

// An 8 MiB text result: above maxFlatResult it takes the codec's path,
// whose scan is faster than the fast decoder's over that many bytes.
func BenchmarkDecodeToolResult8MiB(b *testing.B) {
	big := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("abcdefgh", 1<<20) + `"}]}`)
	b.SetBytes(int64(len(big)))
	for b.Loop() {
		if _, err := decodeToolResult(big); err != nil {
			b.Fatal(err)
		}
	}
}
