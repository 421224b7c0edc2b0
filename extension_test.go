package snodo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/jsonrpc"
)

// uiTool and uiContents are an MCP Apps server's tool and HTML resource,
// with _meta.ui members the client does not know beside those it might.
const (
	uiToolMeta     = `{"ui":{"resourceUri":"ui://weather/dashboard","visibility":["model","app"],"future":{"x":[1,2]}},"ui/resourceUri":"ui://weather/dashboard","com.example/y":"z"}`
	uiContentsMeta = `{"ui":{"csp":{"connectDomains":["https://api.example.com"],"resourceDomains":["https://cdn.example.com"]},"prefersBorder":true,"domain":"a.example.com"}}`
	uiTool         = `{"name":"weather","inputSchema":{"type":"object"},"_meta":` + uiToolMeta + `}`
	uiResource     = `{"uri":"ui://weather/dashboard","name":"dashboard","mimeType":"text/html;profile=mcp-app","_meta":` + uiContentsMeta + `}`
	uiContents     = `{"uri":"ui://weather/dashboard","mimeType":"text/html;profile=mcp-app","text":"<!DOCTYPE html><p>sun</p>","_meta":` + uiContentsMeta + `}`
)

// uiServer answers as an MCP Apps server, in either era.
func uiServer(modern bool) func(fc *fakeCall) *jsonrpc.Response {
	complete := ""
	if modern {
		complete = `"resultType":"complete",`
	}
	next := func(fc *fakeCall) *jsonrpc.Response {
		switch fc.Req.Method {
		case "tools/list":
			return result(fc, `{`+complete+`"tools":[`+uiTool+`]}`)
		case "resources/list":
			return result(fc, `{`+complete+`"resources":[`+uiResource+`]}`)
		case "resources/read":
			return result(fc, `{`+complete+`"contents":[`+uiContents+`]}`)
		case "tools/call":
			return result(fc, `{`+complete+`"content":[]}`)
		}
		return noMore(fc)
	}
	if modern {
		return modernServer(next)
	}
	return legacyServer("2025-11-25", next)
}

func jsonEqual(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Errorf("%s:\n got %s\nwant %s", what, gb, wb)
	}
}

// The extensions of Options.Extensions are declared in capabilities.extensions
// of initialize (legacy) and in the client capabilities of every
// 2026-07-28 request, merged with the tasks extension on the calls that
// declare it, in one extensions object.
func TestExtensionsDeclaredInBothEras(t *testing.T) {
	want := `{"com.example/x":{"a":1},"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}`
	for _, modern := range []bool{false, true} {
		f := newFake(t, uiServer(modern))
		c, err := snodo.Connect(context.Background(), f,
			&snodo.Options{Extensions: map[string]json.RawMessage{
				"com.example/x":     json.RawMessage(`{ "a" : 1 }`),
				snodo.UIExtensionID: json.RawMessage(`{"mimeTypes":["` + snodo.UIMIMEType + `"]}`),
			}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := snodo.ListTools(c, context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CallTool(context.Background(), "weather", nil); err != nil {
			t.Fatal(err)
		}
		var caps []json.RawMessage
		if modern {
			for _, m := range []string{"tools/list", "tools/call"} {
				caps = append(caps, f.sent(m)[0].meta("io.modelcontextprotocol/clientCapabilities"))
			}
		} else {
			caps = append(caps, f.sent("initialize")[0].param("capabilities"))
		}
		for i, raw := range caps {
			if n := strings.Count(string(raw), `"extensions"`); n != 1 {
				t.Errorf("modern=%v request %d: %d extensions members in %s, want 1", modern, i, n, raw)
			}
			var cc struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			}
			if err := json.Unmarshal(raw, &cc); err != nil {
				t.Fatalf("capabilities %s: %v", raw, err)
			}
			if modern && i == 1 {
				// tools/call declares the tasks extension too.
				if _, ok := cc.Extensions["io.modelcontextprotocol/tasks"]; !ok {
					t.Errorf("tools/call capabilities %s lack the tasks extension", raw)
				}
				delete(cc.Extensions, "io.modelcontextprotocol/tasks")
			}
			got, _ := json.Marshal(cc.Extensions)
			jsonEqual(t, "declared extensions", got, want)
		}
		_ = c.Close()
	}
}

// Without Options.Extensions, no extensions member is declared.
func TestNoExtensionDeclaredByDefault(t *testing.T) {
	f := newFake(t, uiServer(false))
	c, err := snodo.Connect(context.Background(), f, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if caps := f.sent("initialize")[0].param("capabilities"); strings.Contains(string(caps), "extensions") {
		t.Errorf("capabilities %s declare extensions", caps)
	}
}

// Options.Extensions refuses names and settings that are not an extension
// declaration, and the tasks extension the client declares itself; Connect
// fails before sending anything, saying what is wrong.
func TestExtensionsRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings string
		want     string
	}{
		{"", `{}`, "name is empty"},
		{"a\x00b", `{}`, "control or invisible"},
		{"a b", `{}`, "spaces"},
		{strings.Repeat("x", 300), `{}`, "more than the limit"},
		{"com.example/x", `[1]`, "not a JSON object"},
		{"com.example/x", `{"a":`, "not a JSON object"},
		{"com.example/x", `{} {}`, "not a JSON object"},
		{"io.modelcontextprotocol/tasks", `{}`, "declared by the client itself"},
	} {
		f := newFake(t, uiServer(false))
		_, err := snodo.Connect(context.Background(), f, &snodo.Options{Extensions: map[string]json.RawMessage{tc.name: json.RawMessage(tc.settings)}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Extensions{%q: %s}: error %v, want one saying %q", tc.name, tc.settings, err, tc.want)
		}
		if m := f.methods(); len(m) != 0 {
			t.Errorf("Extensions{%q: %s}: sent %v", tc.name, tc.settings, m)
		}
	}
}

// A tool's and a resource's _meta, _meta.ui of MCP Apps included with
// members Snodo does not know, reach the caller intact and encode again
// unchanged, in both eras.
func TestUIMetaRoundTrips(t *testing.T) {
	for _, modern := range []bool{false, true} {
		f := newFake(t, uiServer(modern))
		c, err := snodo.Connect(context.Background(), f, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		tools, err := snodo.ListTools(c, ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, "Tool.Meta", tools.Tools[0].Meta, uiToolMeta)
		b, _ := json.Marshal(tools.Tools[0])
		jsonEqual(t, "Tool encoded", b, uiTool)

		res, err := snodo.ListResources(c, ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, "Resource.Meta", res.Resources[0].Meta, uiContentsMeta)
		b, _ = json.Marshal(res.Resources[0])
		jsonEqual(t, "Resource encoded", b, uiResource)

		read, err := c.ReadResource(ctx, "ui://weather/dashboard")
		if err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, "ResourceContents.Meta", read.Contents[0].Meta, uiContentsMeta)
		b, _ = json.Marshal(read.Contents[0])
		jsonEqual(t, "ResourceContents encoded", b, uiContents)
		if read.Contents[0].MIMEType != snodo.UIMIMEType {
			t.Errorf("MIME type %q", read.Contents[0].MIMEType)
		}
		_ = c.Close()
	}
}
