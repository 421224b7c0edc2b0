package guard

import (
	"encoding/json"
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
	for _, params := range []string{`{}`, `{"name":1}`, `{"name":null}`, `{"name":true}`, `{"NAME":"x"}`, `{"name":"a","name":"b"}`, `[]`, `{"name":`, `null`} {
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
