package guard

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestToolName(t *testing.T) {
	for params, want := range map[string]string{
		`{"name":"echo","arguments":{"name":"x"}}`: "echo",
		`{"arguments":{},"name":"a b"}`:            "a b",
	} {
		if got, err := ToolName(json.RawMessage(params)); err != nil || got != want {
			t.Errorf("ToolName(%s) = %q, %v; want %q", params, got, err, want)
		}
	}
	for _, params := range []string{`{}`, `{"name":1}`, `{"name":null}`, `{"name":true}`, `{"NAME":"x"}`, `{"name":"a","namE":"b"}`, `{"name":"a","na_me":"b"}`, `{"name":"a","name":"b"}`, `[]`, `{"name":`, `null`} {
		if got, err := ToolName(json.RawMessage(params)); err == nil {
			t.Errorf("ToolName(%s) = %q, want an error", params, got)
		}
	}
}

// * matches "/" too: a tool name is not a path, so --deny-tool '*' hides
// a tool named a/b, and --deny-tool 'fs*' one named fs/write.
func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"*", "a/b", true},
		{"fs*", "fs/write", true},
		{"delete_*", "delete_all", true},
		{"delete_*", "undelete_all", false},
		{"cou?t", "count", true},
		{"[a-c]at", "bat", true},
		{"[!a-c]at", "bat", false},
		{"a.b", "axb", false},
		{`\*`, "*", true},
		{`\*`, "x", false},
		{"[abc", "a", false},
		{"echo", "echo", true},
		{"echo", "echo2", false},
	} {
		if got := Match(c.pattern, c.name); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
	if Allowed(nil, []string{"*"}, "a/b") || !Allowed(nil, nil, "a/b") || Allowed([]string{"x*"}, nil, "a/b") {
		t.Error("Allowed")
	}
}

// topLevel returns the members of the JSON object b in order, duplicates
// included.
func topLevel(t *testing.T, b []byte) (keys []string, values []json.RawMessage) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", b)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		keys, values = append(keys, tok.(string)), append(values, v)
	}
	return keys, values
}

// toolNames are the names in a JSON array of tools.
func toolNames(t *testing.T, list json.RawMessage) []string {
	t.Helper()
	var tools []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(list, &tools); err != nil {
		t.Fatalf("tools %s: %v", list, err)
	}
	var names []string
	for _, x := range tools {
		names = append(names, x.Name)
	}
	return names
}

// A filtered tools/list result holds the denied tool under no spelling of
// "tools" that a host could read: not for a Go host decoding it with
// encoding/json (case-insensitive, Unicode simple folding, last duplicate
// wins), not for a JavaScript host (JSON.parse: exact keys, last wins),
// not for a reader that takes the first duplicate, exactly or without
// regard to case.
func TestFilterToolsKeySpellings(t *testing.T) {
	deny := func(n string) bool { return n != "secret" }
	for _, result := range []string{
		`{"tools":[{"name":"echo"}],"toolſ":[{"name":"secret"}]}`,
		`{"toolſ":[{"name":"secret"}],"tools":[{"name":"echo"}]}`,
		`{"tools":[{"name":"echo"}],"Tools":[{"name":"secret"}]}`,
		`{"TOOLS":[{"name":"secret"}],"tools":[{"name":"echo"}]}`,
		`{"tools":[{"name":"echo"}],"tOoLs":[{"name":"secret"}],"nextCursor":"c"}`,
		`{"tools":[{"name":"echo"}],"to_ols":[{"name":"secret"}]}`,
		`{"tools":[{"name":"secret"}],"tools":[{"name":"echo"}]}`,
		`{"tools":[{"name":"echo"}],"tools":[{"name":"secret"}]}`,
		`{"tools":[{"name":"echo"}],"tools":[{"name":"secret"}],"toolſ":[{"name":"secret"}],"tools":[{"name":"echo"}]}`,
	} {
		out := FilterTools(json.RawMessage(result), deny)
		seen := map[string][]string{}
		var goHost struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(out, &goHost); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		for _, x := range goHost.Tools {
			seen["encoding/json"] = append(seen["encoding/json"], x.Name)
		}
		keys, values := topLevel(t, out)
		for i, k := range keys {
			if k == "tools" {
				if _, ok := seen["first exact"]; !ok {
					seen["first exact"] = toolNames(t, values[i])
				}
				seen["last exact"] = toolNames(t, values[i])
			}
			if strings.EqualFold(k, "tools") {
				if _, ok := seen["first folded"]; !ok {
					seen["first folded"] = toolNames(t, values[i])
				}
			}
		}
		for _, reader := range []string{"encoding/json", "first exact", "last exact", "first folded"} {
			if got := seen[reader]; slices.Contains(got, "secret") || !slices.Equal(got, seen["encoding/json"]) {
				t.Errorf("%s\nfiltered to %s\na host reading it as %s sees %q, encoding/json %q", result, out, reader, got, seen["encoding/json"])
			}
		}
		if n := strings.Count(string(out), `"tools"`); n != 1 || len(keys) > 2 {
			t.Errorf("filtered to %s, want exactly one tools key", out)
		}
	}
	// Another key goes through as it was.
	if out := FilterTools(json.RawMessage(`{"tools":[],"nextCursor":"c"}`), deny); string(out) != `{"nextCursor":"c","tools":[]}` {
		t.Errorf("nextCursor lost: %s", out)
	}
}

// A name that differs from a denied one by a control, invisible or
// white-space character is never allowed when a pattern is given: not
// listed, not called. Without any pattern, nothing is compared.
func TestGuardHoldsAgainstInvisibleCharacters(t *testing.T) {
	deny := []string{"secret"}
	for _, name := range []string{"secret\x00", "secret\u200b", "secret\u200d", "secret\ufeff", "secret\u202e", "secret\u2066",
		"secret\u00ad", "secret\u3164", "secret\x1b", "secret\u009b", "secret ", " secret", "secret\u00a0", "secret\t", "secret\u2028", "secret\xff"} {
		if Allowed(nil, deny, name) || Allowed([]string{"*"}, nil, name) {
			t.Errorf("%q is allowed", name)
		}
		if err := CheckName(name); err == nil || !strings.Contains(err.Error(), "tool name") {
			t.Errorf("CheckName(%q) = %v, want a reason", name, err)
		}
		if !utf8.ValidString(name) {
			continue // JSON holds no invalid UTF-8
		}
		list, _ := json.Marshal(map[string]any{"tools": []map[string]string{{"name": "echo"}, {"name": name}}})
		if got := string(FilterTools(list, func(n string) bool { return Allowed(nil, deny, n) })); got != `{"tools":[{"name":"echo"}]}` {
			t.Errorf("%q listed: %s", name, got)
		}
		if got := string(FilterTools(list, func(string) bool { return true })); got != `{"tools":[{"name":"echo"}]}` {
			t.Errorf("FilterTools listed %q: %s", name, got)
		}
		if !Allowed(nil, nil, name) {
			t.Errorf("%q refused without any pattern", name)
		}
	}
	for _, name := range []string{"secret", "a b", "fs/write", "ünïcödé", "日本", "emoji✓"} {
		if err := CheckName(name); err != nil || !Allowed(nil, []string{"other"}, name) {
			t.Errorf("%q refused: %v", name, err)
		}
	}
	// Names are compared as they are: case, normalization and look-alikes
	// are not mapped (an allow list covers them).
	for _, name := range []string{"Secret", "ѕecret", "secre\u0301t"} {
		if !Allowed(nil, deny, name) {
			t.Errorf("%q is not allowed: the guard compares names byte for byte", name)
		}
	}
}
