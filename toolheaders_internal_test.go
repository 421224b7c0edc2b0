package snodo

import (
	"encoding/json"
	"strings"
	"testing"
)

// The x-mcp-header rules (server/tools.mdx), one invalid schema each, as
// the conformance suite's invalid tools.
func TestToolBindings(t *testing.T) {
	invalid := map[string]string{
		"empty":        `{"properties":{"a":{"type":"string","x-mcp-header":""}}}`,
		"not string":   `{"properties":{"a":{"type":"string","x-mcp-header":7}}}`,
		"object":       `{"properties":{"a":{"type":"object","x-mcp-header":"A"}}}`,
		"array":        `{"properties":{"a":{"type":"array","items":{"type":"string"},"x-mcp-header":"A"}}}`,
		"null":         `{"properties":{"a":{"type":"null","x-mcp-header":"A"}}}`,
		"number":       `{"properties":{"a":{"type":"number","x-mcp-header":"A"}}}`,
		"same case":    `{"properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"A"}}}`,
		"diff case":    `{"properties":{"a":{"type":"string","x-mcp-header":"Ab"},"b":{"properties":{"c":{"type":"string","x-mcp-header":"aB"}}}}}`,
		"space":        `{"properties":{"a":{"type":"string","x-mcp-header":"A B"}}}`,
		"colon":        `{"properties":{"a":{"type":"string","x-mcp-header":"A:B"}}}`,
		"non-ASCII":    `{"properties":{"a":{"type":"string","x-mcp-header":"Régión"}}}`,
		"control":      `{"properties":{"a":{"type":"string","x-mcp-header":"A\r\nB"}}}`,
		"items":        `{"properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}`,
		"anyOf":        `{"anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}`,
		"ref target":   `{"$defs":{"d":{"type":"string","x-mcp-header":"A"}},"properties":{"a":{"$ref":"#/$defs/d"}}}`,
		"if":           `{"properties":{"a":{"type":"string","if":{"properties":{"b":{"type":"string","x-mcp-header":"B"}}}}}}`,
		"root":         `{"type":"object","x-mcp-header":"Root"}`,
		"not a schema": `[1]`,
	}
	for name, schema := range invalid {
		if b, err := toolBindings(json.RawMessage(schema)); err == nil {
			t.Errorf("%s: accepted, bindings %v", name, b)
		}
	}
	b, err := toolBindings(json.RawMessage(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region","default":{"x-mcp-header":"data, not a schema"}},
		"x-mcp-header":{"type":"integer"},
		"opts":{"type":"object","properties":{"tenant":{"type":"boolean","x-mcp-header":"Tenant"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, x := range b {
		got[x.header] = strings.Join(x.path, ".")
	}
	if len(got) != 2 || got["Region"] != "region" || got["Tenant"] != "opts.tenant" {
		t.Errorf("bindings %v", got)
	}
	if b, err := toolBindings(nil); err != nil || b != nil {
		t.Errorf("no schema: %v %v", b, err)
	}
}

func TestHeaderValue(t *testing.T) {
	for raw, want := range map[string]string{
		`"us-west1"`: "us-west1", `42`: "42", `-7`: "-7", `42.0`: "42", `true`: "true", `false`: "false",
		`"Hello, 世界"`: "=?base64?SGVsbG8sIOS4lueVjA==?=", `""`: "",
	} {
		if got, ok := headerValue(json.RawMessage(raw)); !ok || got != want {
			t.Errorf("headerValue(%s) = %q %v, want %q", raw, got, ok, want)
		}
	}
	for _, raw := range []string{`null`, `3.5`, `9007199254740993`, `{}`, `[]`, `"unterminated`} {
		if got, ok := headerValue(json.RawMessage(raw)); ok {
			t.Errorf("headerValue(%s) = %q", raw, got)
		}
	}
}
