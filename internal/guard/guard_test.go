package guard

import (
	"encoding/json"
	"testing"
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
