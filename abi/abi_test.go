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
		`{"abi":2,"methods":["roots/list"]}`: `"abi" is 2, this host speaks version 1`,
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
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, err := ParseManifest(data); err == nil {
			if m.ABI != Version || (len(m.Methods) == 0 && !m.Progress && !m.Events) {
				t.Fatalf("accepted %+v", m)
			}
			for _, method := range m.Methods {
				if !IsKnownMethod(method) {
					t.Fatalf("accepted method %q", method)
				}
			}
		}
		ParseErrorObject(data)
		CheckResult(data)
	})
}

func isValidUTF8(s string) bool { return strings.ToValidUTF8(s, "") == s }
