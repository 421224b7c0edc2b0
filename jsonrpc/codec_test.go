package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

func TestDecodeKinds(t *testing.T) {
	cases := []struct {
		in   string
		want Message
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, &Request{ID: Int64ID(1), Method: "tools/list"}},
		{`{"jsonrpc":"2.0","id":"a","method":"m","params":{"x":1}}`, &Request{ID: StringID("a"), Method: "m", Params: json.RawMessage(`{"x":1}`)}},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`, &Notification{Method: "notifications/progress", Params: json.RawMessage(`{"progress":1}`)}},
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, &Response{ID: Int64ID(7), Result: json.RawMessage(`{}`)}},
		{`{"jsonrpc":"2.0","id":7,"result":null}`, &Response{ID: Int64ID(7), Result: json.RawMessage(`null`)}},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`, &Response{Error: &Error{Kind: KindServer, Code: -32700, Message: "parse error"}}},
		{`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad","data":[1]}}`, &Response{ID: Int64ID(3), Error: &Error{Kind: KindServer, Code: -32602, Message: "bad", Data: json.RawMessage(`[1]`)}}},
	}
	for _, c := range cases {
		got, err := Decode([]byte(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if !sameMessage(got, c.want) {
			t.Errorf("Decode(%s) = %#v, want %#v", c.in, got, c.want)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	cases := map[string]int64{
		`not json`:                                               CodeParseError,
		`{"jsonrpc":"2.0","id":1,"method":"m"`:                   CodeParseError,
		`{"id":1,"method":"m"}`:                                  CodeInvalidRequest,
		`{"jsonrpc":"1.0","id":1,"method":"m"}`:                  CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":null,"method":"m"}`:               CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":1.5,"method":"m"}`:                CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":3}`:       CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":1}`:                               CodeInvalidRequest,
		`{"jsonrpc":"2.0"}`:                                      CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1}}`: CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":1,"error":{"message":"x"}}`:       CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":null,"result":{}}`:                CodeInvalidRequest,
	}
	for in, code := range cases {
		_, err := Decode([]byte(in))
		var e *Error
		if !errors.As(err, &e) || e.Code != code || e.Kind != KindProtocol {
			t.Errorf("Decode(%s) error = %v, want code %d kind protocol", in, err, code)
		}
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	msgs := []Message{
		&Request{ID: Int64ID(1), Method: "tools/call", Params: json.RawMessage(`{"name":"echo"}`)},
		&Request{ID: StringID("x\"y"), Method: "ping"},
		&Notification{Method: "notifications/initialized"},
		&Response{ID: Int64ID(2), Result: json.RawMessage(`{"ok":true}`)},
		&Response{ID: Int64ID(3), Error: &Error{Code: -32601, Message: "method not found"}},
	}
	for _, m := range msgs {
		b, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(b) {
			t.Fatalf("Encode(%#v) = %s: not JSON", m, b)
		}
		back, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(%s): %v", b, err)
		}
		if r, ok := m.(*Response); ok && r.Error != nil {
			r.Error.Kind = KindServer // decoding marks errors as the peer's
		}
		if !sameMessage(back, m) {
			t.Errorf("round trip of %#v gave %#v", m, back)
		}
	}
}

// A message is one line: raw values with line breaks are compacted.
func TestEncodeIsOneLine(t *testing.T) {
	m := &Request{ID: Int64ID(1), Method: "m", Params: json.RawMessage("{\n  \"a\": \"x\\ny\"\n}")}
	b, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(b, "\r\n") {
		t.Fatalf("encoded message spans lines: %q", b)
	}
	if want := `{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"x\ny"}}`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	bad := &Notification{Method: "m", Params: json.RawMessage("{\n")}
	if _, err := Encode(bad); !errors.Is(err, ErrInvalidJSON) {
		t.Fatalf("invalid multi-line params: err = %v, want ErrInvalidJSON", err)
	}
}

func TestEncodeRequestNeedsID(t *testing.T) {
	if _, err := Encode(&Request{Method: "m"}); err == nil {
		t.Fatal("a request without an ID was encoded")
	}
}

func sameMessage(a, b Message) bool {
	switch a := a.(type) {
	case *Request:
		b, ok := b.(*Request)
		return ok && a.ID == b.ID && a.Method == b.Method && bytes.Equal(a.Params, b.Params)
	case *Notification:
		b, ok := b.(*Notification)
		return ok && a.Method == b.Method && bytes.Equal(a.Params, b.Params)
	case *Response:
		b, ok := b.(*Response)
		if !ok || a.ID != b.ID || !bytes.Equal(a.Result, b.Result) || (a.Error == nil) != (b.Error == nil) {
			return false
		}
		return a.Error == nil || (a.Error.Kind == b.Error.Kind && a.Error.Code == b.Error.Code &&
			a.Error.Message == b.Error.Message && bytes.Equal(a.Error.Data, b.Error.Data))
	}
	return false
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`,
		`{"jsonrpc":"2.0","method":"n"}`,
		`{"jsonrpc":"2.0","id":"s","result":[1,2]}`,
		`{"jsonrpc":"2.0","id":99999999999999999999,"error":{"code":-1,"message":"x","data":null}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":""}}`,
		`[]`, `null`, `"`, `{"id":-0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindProtocol {
				t.Fatalf("Decode error %v is not a protocol *Error", err)
			}
			return
		}
		// Whatever decodes must encode to one line of JSON that decodes to
		// the same message.
		b, err := Encode(m)
		if err != nil {
			return // e.g. a raw value that is invalid once compacted
		}
		if bytes.ContainsAny(b, "\n") {
			t.Fatalf("encoded %q spans lines", b)
		}
		back, err := Decode(b)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
		if r, ok := m.(*Response); ok && r.Error != nil {
			r.Error.Kind = KindServer
		}
		if !sameMessage(m, back) && !rawDiffersOnlyInSpace(m, back) {
			t.Fatalf("round trip changed the message:\n%#v\n%#v", m, back)
		}
	})
}

// rawDiffersOnlyInSpace reports whether two messages differ only in the
// insignificant whitespace of raw values, which encoding may compact.
func rawDiffersOnlyInSpace(a, b Message) bool {
	ea, _ := Encode(a)
	eb, _ := Encode(b)
	return bytes.Equal(ea, eb)
}
