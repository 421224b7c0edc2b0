package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/fakeserver"
)

func init() { scenarios["app"] = appServer }

// appHTML is the HTML of appServer's app.
const appHTML = "<!DOCTYPE html><html><body><p>sunny</p></body></html>\n"

// appServer is a Go SDK server that serves an MCP Apps app, in the legacy
// era, or the 2026-07-28 one with the argument --era=modern: weather points at ui://weather/dashboard through _meta.ui, refresh
// is an app-only tool, evil's app URI holds terminal controls and a
// newline, client_extensions returns the client extensions
// the client declared, and reading the app returns contents whose URI is
// its first argument, a JSON string (any URI, hostile ones included; the
// app's own by default), as text or, with a second argument "blob", as a
// blob (of MIME type M with "blob:M"). It declares the UI extension and a
// made-up com.example/x.
func appServer(s *fakeserver.Server) {
	contentsURI := "ui://weather/dashboard"
	versions := []string{"2025-11-25"}
	var args []string
	for _, a := range s.Args {
		switch a {
		case "--era=modern":
			versions = []string{"2026-07-28"}
			continue
		case "--era=legacy":
			continue
		}
		args = append(args, a)
	}
	if len(args) > 0 {
		if err := json.Unmarshal([]byte(args[0]), &contentsURI); err != nil {
			panic(err)
		}
	}
	blob := len(args) > 1 && strings.HasPrefix(args[1], "blob")
	blobType := snodo.UIMIMEType
	if len(args) > 1 && strings.HasPrefix(args[1], "blob:") {
		blobType = strings.TrimPrefix(args[1], "blob:")
	}
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{}}
	caps.AddExtension(snodo.UIExtensionID, map[string]any{})
	caps.AddExtension("com.example/x", map[string]any{"server": true})
	srv := mcp.NewServer(&mcp.Implementation{Name: "app", Version: "1"}, &mcp.ServerOptions{Capabilities: caps, SupportedProtocolVersions: versions})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	srv.AddTool(&mcp.Tool{Name: "weather", Description: "The weather, with a dashboard",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
		Meta:        mcp.Meta{"ui": map[string]any{"resourceUri": "ui://weather/dashboard", "visibility": []string{"model", "app"}}},
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("sunny"), nil })
	srv.AddTool(&mcp.Tool{Name: "refresh", InputSchema: map[string]any{"type": "object"},
		Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://weather/dashboard", "visibility": []string{"app"}}},
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("refreshed"), nil
	})
	srv.AddTool(&mcp.Tool{Name: "evil", InputSchema: map[string]any{"type": "object"},
		Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://x/\x1b[2J\u202e\nforged: line"}},
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("evil"), nil })
	srv.AddTool(&mcp.Tool{Name: "client_extensions", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			b, _ := json.Marshal(req.ClientCapabilities().Extensions)
			return text(string(b)), nil
		})
	uiMeta := mcp.Meta{"ui": map[string]any{"csp": map[string]any{"connectDomains": []string{"https://api.example.com"}}, "prefersBorder": true}}
	srv.AddResource(&mcp.Resource{URI: "ui://weather/dashboard", Name: "dashboard", MIMEType: snodo.UIMIMEType, Meta: uiMeta},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			c := &mcp.ResourceContents{URI: contentsURI, MIMEType: snodo.UIMIMEType, Meta: uiMeta}
			if blob {
				c.Blob, c.MIMEType = []byte(appHTML), blobType
			} else {
				c.Text = appHTML
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}, Meta: mcp.Meta{"com.example/r": map[string]any{"v": 1}}}, nil
		})
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
}

// appCmd is the command line that runs appServer behind snodo-run; server
// arguments go after --.
func appCmd(args []string, serverArgs ...string) []string {
	return append(append(append([]string{"--env", fakeserver.ScenarioEnv + "=app"}, args...), "--", fakeserver.Executable()), serverArgs...)
}

// tools list shows each tool's app (ui: URI, "app only" when the model may
// not call it) in text, and keeps _meta whole in JSON.
func TestToolsListShowsAppsUI(t *testing.T) {
	for _, era := range []string{"--era=legacy", "--era=modern"} {
		testToolsListShowsAppsUI(t, era)
	}
}

func testToolsListShowsAppsUI(t *testing.T, era string) {
	r := ok(t, cli(t, appCmd([]string{"tools", "list", "-o", "text"}, era)...))
	contains(t, "text output", r.stdout,
		"weather(city?: string)\n    The weather, with a dashboard\n    ui: ui://weather/dashboard\n",
		"refresh()\n    ui: ui://weather/dashboard (app only)\n")
	if strings.Contains(r.stdout, "client_extensions()\n    ui:") {
		t.Errorf("a tool without an app shows one:\n%s", r.stdout)
	}
	// The server's URI reaches the terminal escaped, on its line.
	contains(t, "text output", r.stdout, "evil()\n    ui: ui://x/\\x1b[2J\\u202e forged: line\n")
	if strings.ContainsAny(r.stdout, "\x1b\u202e") || strings.Contains(r.stdout, "\nforged") {
		t.Errorf("a control character of the app URI reached the terminal:\n%q", r.stdout)
	}

	r = ok(t, cli(t, appCmd([]string{"tools", "list"}, era)...))
	var out struct {
		Tools []struct {
			Name string          `json:"name"`
			Meta json.RawMessage `json:"_meta"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tl := range out.Tools {
		got[tl.Name] = string(tl.Meta)
	}
	if got["weather"] != `{"ui":{"resourceUri":"ui://weather/dashboard","visibility":["model","app"]}}` ||
		got["refresh"] != `{"ui":{"resourceUri":"ui://weather/dashboard","visibility":["app"]}}` {
		t.Errorf("_meta in JSON output: %v", got)
	}
}

// The UI extension is declared only with --mcp-apps (or mcp_apps: true in
// the config, SNODO_MCP_APPS), with the MIME type of HTML apps.
func TestUIFlagDeclaresAppsExtension(t *testing.T) {
	for _, era := range []string{"--era=legacy", "--era=modern"} {
		call := []string{"tools", "call", "client_extensions", "-o", "text"}
		r := ok(t, cli(t, appCmd(call, era)...))
		if strings.Contains(r.stdout, "io.modelcontextprotocol/ui") {
			t.Errorf("%s: declared without --mcp-apps: %s", era, r.stdout)
		}
		want := `"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}`
		r = ok(t, cli(t, appCmd(append([]string{"--mcp-apps"}, call...), era)...))
		contains(t, era+" with --mcp-apps", r.stdout, want)
		r = ok(t, cliWith(t, runOpts{env: []string{"SNODO_MCP_APPS=true"}}, appCmd(call, era)...))
		contains(t, era+" with SNODO_MCP_APPS", r.stdout, want)
	}
}

// appName is the name of a saved app: app, the URI's last segment reduced
// to [a-z0-9_-], a number, .html.
var appName = regexp.MustCompile(`^app(-[a-z0-9_-]{1,40})?-[0-9]+\.html$`)

// resources read --save writes an app's HTML (text or blob) to a new file
// in DIR, named from its URI, and prints the path instead of the HTML; a
// file is never replaced, and a symlink in DIR never followed.
func TestResourcesReadSavesApp(t *testing.T) {
	for _, blob := range []string{"text", "blob"} {
		parent := t.TempDir()
		dir := filepath.Join(parent, "apps")
		outside := filepath.Join(parent, "outside.html")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// A link in DIR with the first name: never followed.
		if err := os.Symlink(outside, filepath.Join(dir, "app-dashboard-1.html")); err != nil {
			t.Fatal(err)
		}
		read := []string{"resources", "read", "ui://weather/dashboard", "--save", dir}
		r := ok(t, cli(t, appCmd(read, `"ui://weather/dashboard"`, blob)...))
		var res snodo.ReadResourceResult
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatal(err)
		}
		c := res.Contents[0]
		want := filepath.Join(dir, "app-dashboard-2.html")
		if savedPath(c.Extra) != want || c.Text != nil || c.Blob != "" {
			t.Errorf("%s: contents %+v, want saved to %s without the HTML", blob, c, want)
		}
		if !strings.Contains(string(c.Meta), `"prefersBorder":true`) {
			t.Errorf("%s: _meta lost: %s", blob, c.Meta)
		}
		if b, err := os.ReadFile(want); err != nil || string(b) != appHTML {
			t.Errorf("%s: %s holds %q (%v)", blob, want, b, err)
		}
		if _, err := os.Lstat(outside); err == nil {
			t.Errorf("%s: the symlink was followed", blob)
		}
		// Again: a new file, the first one kept.
		if err := os.WriteFile(want, []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
		r = ok(t, cli(t, appCmd(append(read, "-o", "text"), `"ui://weather/dashboard"`, blob)...))
		contains(t, "text output", r.stdout, "--- ui://weather/dashboard [text/html;profile=mcp-app, saved to "+filepath.Join(dir, "app-dashboard-3.html")+"]")
		if b, _ := os.ReadFile(want); string(b) != "mine" {
			t.Errorf("%s: an existing file was replaced", blob)
		}
	}
}

// The server picks the URI of what it returns: whatever it is, the app is
// saved to a new file directly in DIR with a name of snodo-run's own, and
// nothing is written anywhere else.
func TestResourcesReadSaveHostileAppURIs(t *testing.T) {
	for _, uri := range []string{
		"ui://../../x",
		"ui://a/%2e%2e/b",
		"ui://a/%2e%2e%2f%2e%2e%2fx",
		"ui://" + strings.Repeat("../", 5000) + "etc/passwd",
		"ui://" + strings.Repeat("a", 10000),
		"ui://a\x00/../../x\x00.html",
		"ui://",
		"ui://..",
		"ui://a/.hidden",
		"ui:///etc/passwd",
		`ui://C:\Windows\..\x`,
		"ui://a/b?x=../../y#/../../z",
		"ui://a/\u202e\u200blmth.exe",
		"ui://a/NUL",
		"/tmp/x",
		"",
	} {
		parent := t.TempDir()
		dir := filepath.Join(parent, "apps")
		arg, _ := json.Marshal(uri)
		r := cli(t, appCmd([]string{"resources", "read", "ui://weather/dashboard", "--save", dir}, string(arg))...)
		short := uri
		if len(short) > 60 {
			short = short[:60] + "…"
		}
		if r.code != 0 {
			t.Errorf("URI %q: exit %d\n%s", short, r.code, r.stderr)
			continue
		}
		if entries, _ := os.ReadDir(parent); len(entries) != 1 || entries[0].Name() != "apps" {
			t.Errorf("URI %q: %v beside DIR", short, entries)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 || !entries[0].Type().IsRegular() || !appName.MatchString(entries[0].Name()) {
			t.Errorf("URI %q: DIR holds %v, want one app-….html file", short, entries)
			continue
		}
		if b, _ := os.ReadFile(filepath.Join(dir, entries[0].Name())); string(b) != appHTML {
			t.Errorf("URI %q: file holds %q", short, b)
		}
	}
}

// The proxy passes through the extensions it does not know, in every
// combination of eras: the host's client extensions (MCP Apps' and a
// made-up one) reach the server — in the initialize the proxy sends a
// legacy server, in each request's client capabilities to a 2026-07-28
// one — and the server's reach the host, in the initialize result or the
// server/discover result; the tasks extension, which the client handles
// itself, is not passed. _meta on results (tools, app contents) passes
// unchanged.
func TestProxyPassesUnknownExtensionsThrough(t *testing.T) {
	for _, hostEra := range []string{"legacy", "modern"} {
		for _, serverEra := range []string{"legacy", "modern"} {
			t.Run("host "+hostEra+" server "+serverEra, func(t *testing.T) {
				mark := newMark()
				cmd := exec.Command(binary, "proxy", "--", fakeserver.Executable(), "--era="+serverEra)
				cmd.Dir = t.TempDir()
				cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "SNODO_CACHE_DIR="+cacheDir, markEnv+"="+mark,
					fakeserver.ScenarioEnv+"=app")
				caps := &mcp.ClientCapabilities{}
				caps.AddExtension(snodo.UIExtensionID, map[string]any{"mimeTypes": []string{snodo.UIMIMEType}})
				caps.AddExtension("com.example/x", map[string]any{"a": 1})
				caps.AddExtension("io.modelcontextprotocol/tasks", map[string]any{})
				client := mcp.NewClient(&mcp.Implementation{Name: "apps-host", Version: "1"}, &mcp.ClientOptions{Capabilities: caps})
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				var opts *mcp.ClientSessionOptions
				if v := hostEras[hostEra]; v != "" {
					opts = &mcp.ClientSessionOptions{ProtocolVersion: v}
				}
				s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, opts)
				if err != nil {
					t.Fatal(err)
				}
				defer func() {
					_ = s.Close()
					assertNoneLeft(t, mark)
				}()

				// The server's extensions, in the host's handshake.
				got, _ := json.Marshal(s.InitializeResult().Capabilities.Extensions)
				if want := `{"com.example/x":{"server":true},"io.modelcontextprotocol/ui":{}}`; string(got) != want {
					t.Errorf("server extensions at the host: %s, want %s", got, want)
				}

				// The host's, at the server.
				res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "client_extensions"})
				if err != nil {
					t.Fatal(err)
				}
				var received map[string]json.RawMessage
				if err := json.Unmarshal([]byte(resultText(res)), &received); err != nil {
					t.Fatalf("client_extensions: %v in %q", err, resultText(res))
				}
				if string(received[snodo.UIExtensionID]) != `{"mimeTypes":["text/html;profile=mcp-app"]}` || string(received["com.example/x"]) != `{"a":1}` {
					t.Errorf("the server received %s", resultText(res))
				}
				if _, ok := received["io.modelcontextprotocol/tasks"]; ok {
					t.Errorf("the host's tasks extension reached the server: %s", resultText(res))
				}

				// _meta on results, unchanged.
				tools, err := s.ListTools(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, tl := range tools.Tools {
					if tl.Name == "weather" {
						m, _ := json.Marshal(tl.Meta)
						if string(m) != `{"ui":{"resourceUri":"ui://weather/dashboard","visibility":["model","app"]}}` {
							t.Errorf("weather's _meta at the host: %s", m)
						}
					}
				}
				read, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ui://weather/dashboard"})
				if err != nil {
					t.Fatal(err)
				}
				if v, _ := json.Marshal(read.Meta["com.example/r"]); string(v) != `{"v":1}` {
					t.Errorf("the read result's _meta at the host: %v", read.Meta)
				}
				c := read.Contents[0]
				m, _ := json.Marshal(c.Meta)
				if c.Text != appHTML || c.MIMEType != snodo.UIMIMEType || string(m) != `{"ui":{"csp":{"connectDomains":["https://api.example.com"]},"prefersBorder":true}}` {
					t.Errorf("app contents at the host: %+v, _meta %s", c, m)
				}
			})
		}
	}
}

// appFileKind keeps only [a-z0-9_-] of the URI's last segment, at most 40
// of them, never a dash at either end.
func TestAppFileKind(t *testing.T) {
	for uri, want := range map[string]string{
		"ui://weather/dashboard":            "app-dashboard",
		"ui://Weather/Dash.Board_2":         "app-dash-board_2",
		"ui://../../x":                      "app-x",
		"ui://a/%2e%2e/b":                   "app-b",
		"ui://a/%2e%2e":                     "app-2e-2e",
		"ui://a/b/":                         "app-b",
		"ui://a/b?x=../../y#/../../z":       "app-b",
		"ui://":                             "app",
		"ui://..":                           "app",
		"ui://a/.hidden":                    "app-hidden",
		"ui://a\x00/../../x\x00.html":       "app-x-html",
		`ui://C:\Windows\..\x`:              "app-c-windows-x",
		"ui://a/\u202e\u200blmth.exe":       "app-lmth-exe",
		"":                                  "app",
		"ui://" + strings.Repeat("a.", 100): "app-a-a-a-a-a-a-a-a-a-a-a-a-a-a-a-a-a-a-a-a",
		"ui://" + strings.Repeat("b", 100):  "app-" + strings.Repeat("b", 40),
	} {
		got := appFileKind(uri)
		if got != want {
			t.Errorf("appFileKind(%q) = %q, want %q", uri, got, want)
		}
		if !appName.MatchString(got + "-1.html") {
			t.Errorf("appFileKind(%q) = %q, not a saved app's name", uri, got)
		}
	}
}

// A ui:// app is saved as .html whatever MIME type the server gives its
// blob: the server cannot pick an executable extension.
func TestResourcesReadSavesAppBlobAsHTML(t *testing.T) {
	for _, mt := range []string{"application/x-msdownload", "application/x-sh", "application/octet-stream", ""} {
		dir := t.TempDir()
		ok(t, cli(t, appCmd([]string{"resources", "read", "ui://weather/dashboard", "--save", dir}, `"ui://weather/dashboard"`, "blob:"+mt)...))
		if b, err := os.ReadFile(filepath.Join(dir, "app-dashboard-1.html")); err != nil || string(b) != appHTML {
			entries, _ := os.ReadDir(dir)
			t.Errorf("blob of type %q: DIR holds %v, want app-dashboard-1.html", mt, entries)
		}
	}
}
