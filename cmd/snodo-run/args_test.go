package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// "tools call NAME --arg k=v": argument names are checked against the
// tool's input schema, values typed by it, and the whole object validated,
// before the call; the demo server's schemas forbid additional properties.
func TestToolsCallChecksArgumentsAgainstTheDemoSchema(t *testing.T) {
	server := []string{"--", demo}
	call := func(args ...string) result {
		return cli(t, append(append([]string{"tools", "call"}, args...), server...)...)
	}
	t.Run("unknown name, closest suggested", func(t *testing.T) {
		e := exits(t, call("echo", "--arg", "txt=hi"), exitUsage, "usage")
		contains(t, "error", e.Message, `tool echo has no argument "txt"`, `did you mean "text"?`, "its arguments: text")
	})
	t.Run("unknown name in --args", func(t *testing.T) {
		e := exits(t, call("echo", "--args", `{"text":"x","extra":1}`), exitUsage, "usage")
		contains(t, "error", e.Message, `no argument "extra"`, "its arguments: text")
	})
	t.Run("value that is not an integer", func(t *testing.T) {
		e := exits(t, call("count", "--arg", "steps=abc"), exitUsage, "usage")
		contains(t, "error", e.Message, "--arg steps=abc", `"abc" is not an integer`)
		e = exits(t, call("count", "--arg", "steps=2.5"), exitUsage, "usage")
		contains(t, "error", e.Message, `"2.5" is not an integer`)
	})
	t.Run("integers sent as numbers", func(t *testing.T) {
		r := ok(t, call("count", "--arg", "steps=2", "--arg", "delay_ms=1", "-o", "text"))
		contains(t, "count", r.stdout, "counted to 2")
	})
	t.Run("required argument missing", func(t *testing.T) {
		e := exits(t, call("echo"), exitUsage, "usage")
		contains(t, "error", e.Message, "input schema of tool echo", "missing required argument text")
	})
	t.Run("--args of the wrong type", func(t *testing.T) {
		e := exits(t, call("echo", "--args", `{"text":5}`), exitUsage, "usage")
		contains(t, "error", e.Message, "argument text: got number, want string")
	})
	t.Run("--no-validate sends them anyway", func(t *testing.T) {
		// The server refuses the extra argument itself: it was sent.
		e := exits(t, call("echo", "--arg", "text=hi", "--arg", "extra=1", "--no-validate"), exitServer, "tool")
		contains(t, "error", e.Message, "extra")
	})
}

// The same against server-everything, whose schemas (draft-07, from zod)
// say nothing of additional properties, which it silently drops.
func TestToolsCallChecksArgumentsAgainstServerEverything(t *testing.T) {
	srv := everything(t)
	call := func(args ...string) result {
		return cli(t, append(append([]string{"tools", "call"}, args...), "--", srv)...)
	}
	e := exits(t, call("get-sum", "--arg", "a=2", "--arg", "bb=40"), exitUsage, "usage")
	contains(t, "error", e.Message, `tool get-sum has no argument "bb" (did you mean "b"?); its arguments: a, b`)
	e = exits(t, call("get-sum", "--arg", "a=two", "--arg", "b=40"), exitUsage, "usage")
	contains(t, "error", e.Message, `"two" is not a number`)
	e = exits(t, call("get-sum", "--args", `{"a":1}`), exitUsage, "usage")
	contains(t, "error", e.Message, "missing required argument b")
	e = exits(t, call("get-annotated-message", "--arg", "messageType=warning"), exitUsage, "usage")
	contains(t, "error", e.Message, "argument messageType: value must be one of 'error', 'success', 'debug'")
	e = exits(t, call("get-tiny-image", "--arg", "size=2"), exitUsage, "usage")
	contains(t, "error", e.Message, `takes no argument "size"`)

	contains(t, "sum", ok(t, call("get-sum", "--arg", "a=2.5", "--arg", "b=-0.5", "-o", "text")).stdout, "is 2.")
	contains(t, "echo", ok(t, call("echo", "--arg", "message=123")).stdout, `"text":"Echo: 123"`)
	r := ok(t, call("get-annotated-message", "--arg", "messageType=success", "--arg", "includeImage=true"))
	contains(t, "boolean argument", r.stdout, `"type":"image"`)
}

func mustSchema(t *testing.T, raw string) *inputSchema {
	t.Helper()
	is, err := compileInputSchema(json.RawMessage(raw))
	if err != nil {
		t.Fatalf("compile %s: %v", raw, err)
	}
	return is
}

// Each VALUE is typed by its property's schema, $ref and anyOf included.
func TestArgumentsTypedBySchema(t *testing.T) {
	is := mustSchema(t, `{"type":"object","$defs":{"n":{"type":"integer"}},"properties":{
		"n":{"$ref":"#/$defs/n"}, "x":{"type":"number"}, "ok":{"type":"boolean"},
		"tags":{"type":"array","items":{"type":"string"}}, "opts":{"type":"object"},
		"s":{"type":"string"}, "maybe":{"anyOf":[{"type":"integer"},{"type":"null"}]},
		"any":{}, "level":{"enum":[1,2,3]}}}`)
	args := map[string]any{}
	err := is.setPairs("t", args, []string{"n=3", "x=1e3", "ok=false", `tags=["a","b"]`, `opts={"k":true}`,
		"s=42", "maybe=null", `any={"a":1}`, "level=2"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(args)
	want := `{"any":{"a":1},"level":2,"maybe":null,"n":3,"ok":false,"opts":{"k":true},"s":"42","tags":["a","b"],"x":1e3}`
	if string(got) != want {
		t.Errorf("arguments %s, want %s", got, want)
	}
	if err := is.check("t", args); err != nil {
		t.Errorf("check: %v", err)
	}
	for pair, msg := range map[string]string{
		"n=abc":              `"abc" is not an integer`,
		"n=1.5":              `"1.5" is not an integer`,
		"x=0x10":             `"0x10" is not a number`,
		"ok=yes":             `"yes" is not a boolean`,
		"tags=a,b":           `"a,b" is not a JSON array`,
		`tags={"a":1}`:       "is not a JSON array",
		`opts=[1]`:           "is not a JSON object",
		`opts={"a":1,"a":2}`: "is not a JSON object",
		"maybe=many":         `"many" is not an integer or null`,
	} {
		err := is.setPairs("t", map[string]any{}, []string{pair})
		if err == nil || !strings.Contains(err.Error(), msg) || exitCode(err) != exitUsage {
			t.Errorf("--arg %s: error %v, want exit 2 and %q", pair, err, msg)
		}
	}
}

// Unknown names are refused unless the schema allows them.
func TestArgumentNamesAllowedBySchema(t *testing.T) {
	strict := mustSchema(t, `{"type":"object","properties":{"message":{"type":"string"},"count":{"type":"integer"}}}`)
	err := strict.setPairs("t", map[string]any{}, []string{"mesage=hi"})
	if err == nil || !strings.Contains(err.Error(), `did you mean "message"?); its arguments: count, message`) {
		t.Errorf("unknown name: %v", err)
	}
	err = strict.setPairs("t", map[string]any{}, []string{"zzz=hi"})
	if err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("a far name has no suggestion: %v", err)
	}
	for _, raw := range []string{
		`{"type":"object","properties":{"a":{}},"additionalProperties":true}`,
		`{"type":"object","properties":{"a":{}},"additionalProperties":{"type":"integer"}}`,
		`{"type":"object","patternProperties":{"^x-":{"type":"integer"}}}`,
		`{"allOf":[{"properties":{"a":{}}},{"properties":{"x-n":{"type":"integer"}}}]}`,
	} {
		is := mustSchema(t, raw)
		args := map[string]any{}
		if err := is.setPairs("t", args, []string{"x-n=5"}); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
		if !reflect.DeepEqual(args, map[string]any{"x-n": json.Number("5")}) {
			t.Errorf("%s: arguments %v, want x-n: 5", raw, args)
		}
		if err := is.check("t", args); err != nil {
			t.Errorf("%s: check: %v", raw, err)
		}
	}
	// The schema that allows other names types their values too.
	is := mustSchema(t, `{"type":"object","patternProperties":{"^x-":{"type":"integer"}},"additionalProperties":{"type":"boolean"}}`)
	if err := is.setPairs("t", map[string]any{}, []string{"x-n=abc"}); err == nil || !strings.Contains(err.Error(), "not an integer") {
		t.Errorf("pattern property: %v, want not an integer", err)
	}
	args := map[string]any{}
	if err := is.setPairs("t", args, []string{"other=true"}); err != nil || args["other"] != true {
		t.Errorf("additional property: %v %v, want true", err, args)
	}
}

// A server's schema cannot make snodo-run read files or fetch URLs.
func TestInputSchemaRefsStayInside(t *testing.T) {
	for _, ref := range []string{"file:///etc/passwd", "/etc/passwd", "http://127.0.0.1:1/x.json"} {
		_, err := compileInputSchema(json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"` + ref + `"}}}`))
		if err == nil || !strings.Contains(err.Error(), "must be self-contained") {
			t.Errorf("$ref %s: %v, want a refusal", ref, err)
		}
	}
}

// A schema that is not one is reported, for --no-validate to get past.
func TestBrokenInputSchemaIsAnError(t *testing.T) {
	for _, raw := range []string{`{"type":"nope"}`, `{"properties":[]}`, `{not json`, `{"$schema":"https://example.com/my-draft"}`} {
		if _, err := compileInputSchema(json.RawMessage(raw)); err == nil {
			t.Errorf("schema %s compiled", raw)
		}
	}
}
