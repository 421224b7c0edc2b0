package interop

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/handlers/wasm"
	"github.com/snodo/snodo/intercept"
)

// filesystemBin is @modelcontextprotocol/server-filesystem, installed
// beside server-everything by .ci/deps.d/20-npm-interop.sh.
var filesystemBin = filepath.Join("everything", "node_modules", ".bin", "mcp-server-filesystem")

// plantedSecret is an API-key-like token that must never reach the caller.
const plantedSecret = "sk-live-4f9c2a7e1b3d8f6a0c5e9b2d7a1f3c8e"

// buildInterceptors builds examples/handlers/go/confine-paths and
// redact-secrets into dir.
func buildInterceptors(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{"confine-paths", "redact-secrets"} {
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", filepath.Join(dir, name+".wasm"), "../../examples/handlers/go/"+name)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", name, err, b)
		}
	}
}

// interceptorModules loads the modules buildInterceptors built in dir,
// confine-paths confining to prefix.
func interceptorModules(t *testing.T, dir, prefix string) []intercept.Interceptor {
	t.Helper()
	h, err := wasm.NewHost(wasm.HostConfig{NoDiskCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	var opts []intercept.Interceptor
	for _, name := range []string{"confine-paths", "redact-secrets"} {
		mc := wasm.ModuleConfig{Path: filepath.Join(dir, name+".wasm")}
		if name == "confine-paths" {
			mc.Config, _ = json.Marshal(map[string]string{"prefix": prefix})
		}
		m, err := h.Load(context.Background(), mc)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, m)
	}
	return opts
}

// filesFixture makes the prefix the server may read, holding notes.txt
// with the planted secret, and a sibling directory outside it.
func filesFixture(t *testing.T) (prefix, outside string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	prefix, outside = filepath.Join(base, "allowed"), filepath.Join(base, "outside")
	for _, d := range []string{prefix, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(prefix, "notes.txt"), []byte("token: "+plantedSecret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside "+plantedSecret), 0o644); err != nil {
		t.Fatal(err)
	}
	return prefix, outside
}

// checkConfinedAndRedacted calls tool on c: paths outside prefix (plainly
// or with "..") are denied with -32030; the file inside, given relative,
// is read with the planted secret redacted. sent returns what the server
// got so far, which must never name the outside directory.
func checkConfinedAndRedacted(t *testing.T, c *snodo.Client, tool, prefix, outside string, sent func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, p := range []string{filepath.Join(outside, "secret.txt"), prefix + "/../outside/secret.txt", "../outside/secret.txt"} {
		_, err := c.CallTool(ctx, tool, map[string]string{"path": p})
		var je *snodo.Error
		if !errors.As(err, &je) || je.Code != intercept.CodeDenied || !strings.Contains(je.Message, "is outside "+prefix) {
			t.Fatalf("%s: %v, want a denial by confine-paths", p, err)
		}
	}
	if s := sent(); strings.Contains(s, "outside") {
		t.Fatalf("a denied request reached the server:\n%s", s)
	}
	res, err := c.CallTool(ctx, tool, map[string]string{"path": "notes.txt"})
	if err != nil || res.IsError {
		t.Fatalf("%+v %v", res, err)
	}
	if text := textOf(res); strings.Contains(text, plantedSecret) || !strings.Contains(text, "token: [REDACTED]") {
		t.Fatalf("result %q: the secret was not redacted", text)
	}
	if s := sent(); !strings.Contains(s, filepath.Join(prefix, "notes.txt")) || strings.Contains(s, `"notes.txt"`) {
		t.Fatalf("the relative path was not sent rewritten:\n%s", s)
	}
}

// The interceptor examples through the library, against
// @modelcontextprotocol/server-filesystem (legacy era, stdio, every line
// the server got recorded by the tee) and a Go SDK server with a
// read_text_file tool (2026-07-28, Streamable HTTP, every body recorded).
func TestInterceptorsConfineAndRedact(t *testing.T) {
	fs, err := filepath.Abs(filesystemBin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fs); err != nil {
		t.Fatalf("@modelcontextprotocol/server-filesystem is not installed at %s: run `bash .ci/deps.d/20-npm-interop.sh`", fs)
	}
	modules := t.TempDir()
	buildInterceptors(t, modules)
	t.Run("legacy server-filesystem", func(t *testing.T) {
		prefix, outside := filesFixture(t)
		// No roots handler: the server keeps the directory of its
		// command line.
		opts := &snodo.Options{Era: snodo.EraLegacy, Interceptors: interceptorModules(t, modules, prefix)}
		srv := startServer(t, "", fs, prefix)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		c, err := snodo.Connect(ctx, srv.conn, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		checkConfinedAndRedacted(t, c, "read_text_file", prefix, outside, func() string {
			b, _ := os.ReadFile(srv.log)
			var client []string
			for _, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(line, "C ") {
					client = append(client, line)
				}
			}
			return strings.Join(client, "\n")
		})
	})
	t.Run("modern Go SDK", func(t *testing.T) {
		prefix, outside := filesFixture(t)
		srv := startHTTPServer(t, []string{"2026-07-28"}, true, func(s *mcp.Server) {
			type args struct {
				Path string `json:"path"`
			}
			mcp.AddTool(s, &mcp.Tool{Name: "read_text_file", Description: "Reads a file, anywhere."}, func(_ context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
				b, err := os.ReadFile(a.Path)
				if err != nil {
					return nil, nil, err
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
			})
		})
		c, _ := connectHTTP(t, srv.URL, interceptorModules(t, modules, prefix)...)
		defer c.Close()
		if c.Server().Era != snodo.EraModern {
			t.Fatalf("era %v", c.Server().Era)
		}
		checkConfinedAndRedacted(t, c, "read_text_file", prefix, outside, func() string {
			var bodies []string
			for _, ex := range srv.exchanges() {
				bodies = append(bodies, ex.body)
			}
			return strings.Join(bodies, "\n")
		})
	})
}
