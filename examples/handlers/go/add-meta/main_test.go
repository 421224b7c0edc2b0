package main

import (
	"strings"
	"testing"
)

// The configuration is checked before any request: keys MCP reserves,
// malformed keys, two keys a decoder takes for one — in the entries or
// in an object of a value — are errors that say which and why.
func TestLoadConfig(t *testing.T) {
	if m, err := loadConfig([]byte(`{"meta":{"com.example/tenant":"acme","com.example/x":{"a":[{"b":1,"c":2}],"d":{"e":1}}}}`)); err != nil || len(m) != 2 {
		t.Fatalf("%v %v", m, err)
	}
	for in, want := range map[string]string{
		`{"meta":{"io.modelcontextprotocol/x":1}}`:         `the prefix "io.modelcontextprotocol/" is reserved for MCP`,
		`{"meta":{"io.ModelContext-Protocol/x":1}}`:        "reserved for MCP",
		`{"meta":{"dev.mcp/x":1}}`:                         "reserved for MCP",
		`{"meta":{"progressToken":1}}`:                     "unprefixed keys",
		`{"meta":{"traceparent":"x"}}`:                     "unprefixed keys",
		`{"meta":{"com.example/a":1,"com.example/A":2}}`:   "differ only in case",
		`{"meta":{"com.example/sa":1,"com.example/ſa":2}}`: "the name",
		`{"meta":{"com.example/x":{"a":{"k":1,"K":2}}}}`:   `the keys "k" and "K"`,
		`{"meta":{"com.example/x":[{"p_a":1,"pa":2}]}}`:    `the keys "p_a" and "pa"`,
		`{"meta":{"1com.example/x":1}}`:                    "is not dot-separated labels",
		`{"meta":{"com.example/-x":1}}`:                    "the name",
		`{"meta":{}}`:                                      `"meta" must hold the entries`,
		`{"meta":{"com.example/x":1},"more":1}`:            `unknown field "more"`,
		``:                                                 `"meta" must hold the entries`,
	} {
		if _, err := loadConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}
