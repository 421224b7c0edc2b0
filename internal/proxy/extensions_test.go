package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// A host's first message declares extensions; only extension declarations
// the proxy does not handle itself are passed on: not the tasks
// extension, not a name empty, too long or holding spaces or control
// characters, not settings that are no JSON object or too large, and at
// most 64.
func TestHostExtensionsLeavesOutWhatIsNoDeclaration(t *testing.T) {
	many := map[string]json.RawMessage{}
	for i := 0; i < 70; i++ {
		many[fmt.Sprintf("com.example/e%02d", i)] = json.RawMessage(`{}`)
	}
	manyJSON, _ := json.Marshal(many)
	for _, tc := range []struct {
		name, line, want string
	}{
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"h","version":"1"},"capabilities":{"extensions":{` +
			`"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]},"com.example/x":{"a":1},"io.modelcontextprotocol/tasks":{},` +
			`"":{},"a\u0000b":{},"a b":{},"a\u202eb":{},"` + strings.Repeat("n", 300) + `":{},"com.example/arr":[1],"com.example/str":"x","com.example/null":null,` +
			`"com.example/big":{"s":"` + strings.Repeat("x", 70<<10) + `"}}}}}`,
			`{"com.example/x":{"a":1},"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}`},
		{"2026-07-28 request", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["x"]}}}}}}`,
			`{"io.modelcontextprotocol/ui":{"mimeTypes":["x"]}}`},
		{"more than 64", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"extensions":` + string(manyJSON) + `}}}`, ""},
		{"none", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`, "null"},
		{"extensions not an object", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"extensions":[1]}}}`, "null"},
		{"a notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "null"},
		{"garbage", `garbage`, "null"},
		{"nothing", ``, "null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.line
			if in != "" {
				in += "\n"
			}
			p := New(Config{MaxLineBytes: 1 << 20}, strings.NewReader(in), io.Discard)
			ext, err := p.HostExtensions(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(ext)
			if tc.name == "more than 64" {
				if len(ext) != 64 || ext["com.example/e00"] == nil || ext["com.example/e64"] != nil {
					t.Errorf("%d extensions passed, want the first 64 by name", len(ext))
				}
				return
			}
			if string(got) != tc.want {
				t.Errorf("passed %s, want %s", got, tc.want)
			}
		})
	}
}

// extServer is fakeServer whose server/discover result declares
// extensions: MCP Apps', a made-up one, and the tasks extension.
type extServer struct{ fakeServer }

func (f extServer) Request(ctx context.Context, req *jsonrpc.Request, opts transport.RequestOptions) (*jsonrpc.Response, error) {
	if req.Method == "server/discover" {
		return jsonrpc.NewResult(req.ID, json.RawMessage(`{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"extensions":{`+
			`"io.modelcontextprotocol/ui":{},"com.example/y":{"b":[2]},"io.modelcontextprotocol/tasks":{}}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fake","version":"1"}}}`)), nil
	}
	return f.fakeServer.Request(ctx, req, opts)
}

// The host's first message, read by HostExtensions, is served as any
// other (a line over the limit answered with an error, the next ones
// read); the server's extensions but tasks reach the host in initialize
// and server/discover.
func TestHostExtensionsFirstMessageIsServed(t *testing.T) {
	for _, first := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"h","version":"1"},"capabilities":{"extensions":{"com.example/x":{}}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"x":"` + strings.Repeat("x", 2000) + `"}}}`,
	} {
		input := first + "\n" + `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\n"
		var out bytes.Buffer
		p := New(Config{MaxLineBytes: 1024}, strings.NewReader(input), &out)
		if _, err := p.HostExtensions(context.Background()); err != nil {
			t.Fatal(err)
		}
		c, err := snodo.Connect(context.Background(), extServer{}, &snodo.Options{Era: snodo.EraModern})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Serve(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 2 {
			t.Fatalf("%d answers, want 2:\n%s", len(lines), out.String())
		}
		want := `"extensions":{"com.example/y":{"b":[2]},"io.modelcontextprotocol/ui":{}}`
		if len(first) > 1024 {
			if !strings.Contains(lines[0], `"code":-32600`) || !strings.Contains(lines[0], "longer than the limit") {
				t.Errorf("a first line over the limit answered %s", lines[0])
			}
		} else if !strings.Contains(lines[0], `"id":1,"result"`) || !strings.Contains(lines[0], want) {
			t.Errorf("initialize answered %s, want the server's extensions but tasks", lines[0])
		}
		if !strings.Contains(lines[1], `"id":2,"result"`) || !strings.Contains(lines[1], want) {
			t.Errorf("server/discover answered %s, want the server's extensions but tasks", lines[1])
		}
	}
}

// HostExtensions returns when its context ends before the host says
// anything; its read ends with the host's input.
func TestHostExtensionsStopsWithItsContext(t *testing.T) {
	r, w := io.Pipe()
	p := New(Config{}, r, io.Discard)
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("signal")
	cancel(stop)
	if _, err := p.HostExtensions(ctx); !errors.Is(err, stop) {
		t.Errorf("HostExtensions: %v, want the context's cause", err)
	}
	w.Close() // the read in flight ends (goleak checks)
	<-p.first
}
