package abi

import (
	"encoding/json"
	"strings"
	"testing"
)

// ABI.md §2: the manifest's rules, each refusal saying what is wrong.
func TestParseManifest(t *testing.T) {
	good := []string{
		`{"abi":1,"methods":["elicitation/create"]}`,
		`{"abi":1,"name":"x","methods":["sampling/createMessage","roots/list"],"progress":true}`,
		`{"abi":1,"events":true}`,
		`{"abi":1,"methods":["sampling/createMessage"],"samplingTools":true}`,
	}
	for _, s := range good {
		if _, err := ParseManifest([]byte(s)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	bad := map[string]string{
		``:                                   "gave no manifest",
		`[1]`:                                "not a valid JSON object",
		`{"methods":["roots/list"]}`:         `no "abi" version`,
		`{"abi":3,"methods":["roots/list"]}`: `"abi" is 3, this host speaks versions 1 to 2`,
		`{"abi":1,"methods":["tools/call"]}`: `unknown method "tools/call"`,
		`{"abi":1,"methods":["roots/list","roots/list"]}`: `lists method "roots/list" twice`,
		`{"abi":1}`: "declares nothing",
		`{"abi":1,"methods":["roots/list"],"samplingTools":true}`: `"samplingTools" but does not list "sampling/createMessage"`,
		`{"abi":1,"events":true,"extra":1}`:                       `unknown field "extra"`,
		`{"abi":1,"events":true} {}`:                              "trailing data",
	}
	for s, want := range bad {
		_, err := ParseManifest([]byte(s))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one containing %q", s, err, want)
		}
	}
}

// ABI.md §3: an error object needs an integer "code".
func TestParseErrorObject(t *testing.T) {
	e, err := ParseErrorObject([]byte(`{"code":-32042,"message":"m","data":{"a":1}}`))
	if err != nil || e.Code != -32042 || e.Message != "m" || string(e.Data) != `{"a":1}` {
		t.Fatalf("%+v %v", e, err)
	}
	for s, want := range map[string]string{
		`{"message":"m"}`:  `no "code"`,
		`{"code":1.5}`:     "not an integer",
		`nope`:             "not a JSON object",
		`{"code":1} extra`: "trailing data",
	} {
		if _, err := ParseErrorObject([]byte(s)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", s, err, want)
		}
	}
}

// ABI.md §3.1: "params is {} when the server sent none."
func TestAppendRequest(t *testing.T) {
	if got := string(AppendRequest(nil, "elicitation/create", nil)); got != `{"method":"elicitation/create","params":{}}` {
		t.Fatal(got)
	}
	if got := string(AppendProgress(nil, json.RawMessage(` {"progress":1} `))); got != `{"params":{"progress":1}}` {
		t.Fatal(got)
	}
}

// The envelopes the host writes into guest memory are valid JSON and
// decode back to what went in, whatever the method name.
func FuzzAppendRequest(f *testing.F) {
	f.Add("elicitation/create", `{"message":"hi"}`)
	f.Add("a\"b\\c\x01\u2028", `[]`)
	f.Fuzz(func(t *testing.T, method, params string) {
		if !json.Valid([]byte(params)) {
			return
		}
		b := AppendRequest(nil, method, json.RawMessage(params))
		var r Request
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		if !strings.ContainsRune(method, 0xFFFD) && isValidUTF8(method) && r.Method != method {
			t.Fatalf("method %q came back as %q", method, r.Method)
		}
	})
}

// ParseManifest and ParseErrorObject never panic, and what they accept
// satisfies their rules.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"abi":1,"methods":["elicitation/create"]}`))
	f.Add([]byte(`{"code":1,"message":"x"}`))
	f.Add([]byte(`{"abi":2,"intercept":{"requests":true,"methods":["tools/call"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, err := ParseManifest(data); err == nil {
			if m.ABI < 1 || m.ABI > Version || (len(m.Methods) == 0 && !m.Progress && !m.Events && m.Intercept == nil) {
				t.Fatalf("accepted %+v", m)
			}
			if ic := m.Intercept; ic != nil && (m.ABI < VersionInterceptors || (!ic.Requests && !ic.Results) || (ic.Methods != nil && len(ic.Methods) == 0)) {
				t.Fatalf("accepted %+v", ic)
			}
			for _, method := range m.Methods {
				if !IsKnownMethod(method) {
					t.Fatalf("accepted method %q", method)
				}
			}
		}
		ParseErrorObject(data)
		CheckResult(data)
		if r, err := ParseReplacement(data); err == nil && (r.Result == nil) == (r.Error == nil) {
			t.Fatalf("accepted %+v", r)
		}
	})
}

func isValidUTF8(s string) bool { return strings.ToValidUTF8(s, "") == s }

// ABI.md §8.1: an interceptor manifest's rules, each refusal saying what is
// wrong; a version-1 manifest keeps parsing as before.
func TestParseManifestIntercept(t *testing.T) {
	good := map[string]func(Manifest) bool{
		`{"abi":2,"intercept":{"requests":true}}`: func(m Manifest) bool {
			return m.Intercepts("tools/call", false) && m.Intercepts("x/y", false) && !m.Intercepts("tools/call", true)
		},
		`{"abi":2,"intercept":{"results":true,"methods":["tools/call"]}}`: func(m Manifest) bool {
			return m.Intercepts("tools/call", true) && !m.Intercepts("tools/list", true) && !m.Intercepts("tools/call", false)
		},
		`{"abi":2,"methods":["roots/list"]}`: func(m Manifest) bool { return !m.Intercepts("tools/call", false) },
		`{"abi":1,"events":true}`:            func(m Manifest) bool { return m.Intercept == nil },
	}
	for s, ok := range good {
		m, err := ParseManifest([]byte(s))
		if err != nil || !ok(m) {
			t.Errorf("%s: %+v %v", s, m, err)
		}
	}
	bad := map[string]string{
		`{"abi":1,"intercept":{"requests":true}}`:                            `interceptors need "abi": 2`,
		`{"abi":2,"intercept":{}}`:                                           `neither "requests": true nor "results": true`,
		`{"abi":2,"intercept":{"requests":true,"methods":[]}}`:               `lists no "methods"`,
		`{"abi":2,"intercept":{"requests":true,"methods":["a","a"]}}`:        `lists method "a" twice`,
		`{"abi":2,"intercept":{"requests":true,"methods":[""]}}`:             `method name of 0 bytes`,
		`{"abi":2,"intercept":{"requests":true,"methods":["tools/call\n"]}}`: `holds byte 0x0a`,
		`{"abi":2,"intercept":{"requests":true,"all":true}}`:                 `unknown field "all"`,
		`{"abi":2}`: "declares nothing",
	}
	for s, want := range bad {
		_, err := ParseManifest([]byte(s))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one containing %q", s, err, want)
		}
	}
}

// ABI.md §8.2, §8.3: the envelopes are valid JSON, whatever the strings
// hold, and carry what the sections say.
func TestInterceptEnvelopes(t *testing.T) {
	r := InterceptRequest{Method: "tools/call", Params: json.RawMessage(` {"name":"x"} `), Server: "fs\x00\"\xff", Era: "legacy", ProtocolVersion: "2025-11-25"}
	in := AppendInterceptRequest(nil, &r)
	var got map[string]any
	if err := json.Unmarshal(in, &got); err != nil {
		t.Fatalf("%s: %v", in, err)
	}
	if got["server"] != "fs\x00\"\uFFFD" || got["era"] != "legacy" || got["caller"] != nil || got["params"].(map[string]any)["name"] != "x" {
		t.Errorf("%s", in)
	}
	res := InterceptResult{InterceptRequest: r, Error: json.RawMessage(`{"code":-1,"message":"m"}`)}
	out := AppendInterceptResult(nil, &res)
	got = nil
	if err := json.Unmarshal(out, &got); err != nil || got["error"] == nil || got["result"] != nil {
		t.Fatalf("%s: %v", out, err)
	}
	res.Result, res.Error = json.RawMessage(`{"content":[]}`), nil
	out = AppendInterceptResult(nil, &res)
	got = nil
	if err := json.Unmarshal(out, &got); err != nil || got["result"] == nil {
		t.Fatalf("%s: %v", out, err)
	}
}

// ABI.md §8.3: a REPLACE output is exactly one "result" object or one
// error object; anything else is refused, a duplicate member included.
func TestParseReplacement(t *testing.T) {
	r, err := ParseReplacement([]byte(`{"result":{"content":[]}}`))
	if err != nil || string(r.Result) != `{"content":[]}` || r.Error != nil {
		t.Fatalf("%+v %v", r, err)
	}
	r, err = ParseReplacement([]byte(`{"error":{"code":-32001,"message":"no"}}`))
	if err != nil || r.Error == nil || r.Error.Code != -32001 || r.Result != nil {
		t.Fatalf("%+v %v", r, err)
	}
	for s, want := range map[string]string{
		``:                                 "no output",
		`[]`:                               "not a valid JSON object",
		`{}`:                               `exactly one member`,
		`{"result":{},"result":{}}`:        `exactly one member`,
		`{"result":{},"error":{"code":1}}`: `exactly one member`,
		`{"Result":{}}`:                    `exactly one member`,
		`{"result":[1]}`:                   "not a JSON object",
		`{"error":"no"}`:                   "not a JSON object",
		`{"error":{"message":"no code"}}`:  `no "code"`,
		`{"result":{"a":1}`:                "not a valid JSON object",
	} {
		if _, err := ParseReplacement([]byte(s)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", s, err, want)
		}
	}
}
