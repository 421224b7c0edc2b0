package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snodo/snodo/internal/fakeserver"
	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/internal/gateway/front"
	"github.com/snodo/snodo/internal/gateway/hub"
	"github.com/snodo/snodo/internal/gateway/policy"
	"github.com/snodo/snodo/internal/gateway/telemetry"
)

// e2eBound bounds every wait of the gateway's end-to-end tests; it only
// keeps a lost answer from hanging the run, and is never a verdict.
const e2eBound = 2 * time.Minute

// e2eGateway is `snodo-run gateway` run as a process with three real
// servers behind it: the Go SDK demo server (its elicitations answered by
// the elicit-policy Wasm module), npm server-everything (its elicitations
// forwarded to the host), and npm server-filesystem rooted in a temporary
// directory, behind the confine-paths and redact-secrets interceptors and
// a recorder of every line it is sent.
type e2eGateway struct {
	url     string // http://127.0.0.1:PORT/mcp
	cmd     *exec.Cmd
	stderr  *syncBuffer
	audit   string // the audit log
	record  string // what server-filesystem was sent
	block   string // while this file exists, the demo server cannot start
	prefix  string // the directory confine-paths confines to
	outside string // a sibling of prefix, which server-filesystem could read
}

// The identities of the e2e gateway: alice may do everything, bob may not
// call everything__echo, carol may send two requests and then one a
// thousand seconds.
var e2eTokens = map[string]string{"alice": "alice-token", "bob": "bob-token", "carol": "carol-token"}

func e2eNpm(t *testing.T, bin string) string {
	t.Helper()
	p, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed: run `bash .ci/deps.d/20-npm-interop.sh`", p)
	}
	return p
}

func startE2EGateway(t *testing.T) *e2eGateway {
	t.Helper()
	everything, fs := e2eNpm(t, everythingBin), e2eNpm(t, filesystemBin)
	prefix, outside := filesDirs(t)
	base := filepath.Dir(prefix)
	// A symlink inside the prefix that leads out of it.
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(prefix, "link.txt")); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	g := &e2eGateway{audit: filepath.Join(dir, "audit.jsonl"), record: filepath.Join(dir, "fs-record.log"),
		block: filepath.Join(dir, "block-demo"), prefix: prefix, outside: outside, stderr: &syncBuffer{}}
	identities := map[string]any{}
	for who, tok := range e2eTokens {
		identities[who] = map[string]any{"tokenSha256": policy.HashToken(tok)}
	}
	identities["bob"].(map[string]any)["denyTools"] = []string{"everything__echo"}
	identities["carol"].(map[string]any)["rateLimit"] = map[string]any{"perSecond": 0.001, "burst": 2}
	config := map[string]any{
		"audit": map[string]any{"file": g.audit},
		"mcpServers": map[string]any{
			"demo": map[string]any{
				"command": "/bin/sh",
				"args": []string{"-c", `if [ -e "$0" ]; then echo "demo: blocked by the test" >&2; exit 3; fi; exec "$1"`,
					g.block, demo},
				"handlers": []string{elicitWasm},
			},
			"everything": map[string]any{"command": everything},
			"fs": map[string]any{
				"command":      fakeserver.Executable(),
				"args":         []string{fs, base},
				"env":          map[string]string{fakeserver.ScenarioEnv: "record", recordEnv: g.record},
				"interceptors": []string{confineWasm, redactWasm},
			},
		},
		"modules": map[string]any{
			"elicit-policy": map[string]any{"config": map[string]any{"values": map[string]any{"name": "wasm-policy"}}},
			"confine-paths": map[string]any{
				"config": map[string]any{"prefix": prefix, "mount": "/data"},
				"grants": map[string]any{"mounts": []any{map[string]any{"host": prefix, "guest": "/data", "read_only": true}}},
			},
		},
		"identities": identities,
	}
	raw, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "gateway.json")
	if err := os.WriteFile(cfg, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	g.cmd = exec.Command(binary, "gateway", "--config", cfg, "--listen", "127.0.0.1:0")
	g.cmd.Stderr = g.stderr
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = g.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		// SIGTERM: the gateway ends its sessions and stops its servers.
		_ = g.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(e2eBound):
			_ = g.cmd.Process.Kill()
			<-exited
			t.Errorf("the gateway did not end on SIGTERM:\n%s", g.stderr)
		}
		if t.Failed() {
			t.Logf("gateway stderr:\n%s", g.stderr)
		}
	})
	serving := regexp.MustCompile(`msg="gateway serving" url=(http://127\.0\.0\.1:\d+/mcp)`)
	g.waitFor(t, exited, "the gateway to serve", func() bool {
		if m := serving.FindStringSubmatch(g.stderr.String()); m != nil {
			g.url = m[1]
			return true
		}
		return false
	})
	ready := strings.TrimSuffix(g.url, "/mcp") + "/readyz"
	g.waitFor(t, exited, "/readyz", func() bool {
		resp, err := http.Get(ready)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode == http.StatusOK
	})
	return g
}

// waitFor polls cond until it holds, failing the test if the gateway
// exits or e2eBound passes first.
func (g *e2eGateway) waitFor(t *testing.T, exited <-chan struct{}, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(e2eBound)
	for !cond() {
		select {
		case <-exited:
			t.Fatalf("the gateway exited while the test waited for %s:\n%s", what, g.stderr)
		case <-deadline:
			t.Fatalf("waited %v for %s:\n%s", e2eBound, what, g.stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// serverPid is the pid of the gateway's descendant process running exe
// (a child, or a grandchild when the runtime starts it through a wrapper
// such as its pid-namespace init).
func (g *e2eGateway) serverPid(t *testing.T, exe string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			children[ppid] = append(children[ppid], pid)
		}
	}
	for queue := children[g.cmd.Process.Pid]; len(queue) > 0; queue = queue[1:] {
		pid := queue[0]
		if p, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe")); p == exe {
			return pid
		}
		queue = append(queue, children[pid]...)
	}
	t.Fatalf("no process under the gateway (pid %d) runs %s", g.cmd.Process.Pid, exe)
	return 0
}

// auditLines are the gateway's audit records so far.
func (g *e2eGateway) auditLines(t *testing.T) []gateway.AuditRecord {
	t.Helper()
	b, err := os.ReadFile(g.audit)
	if err != nil {
		t.Fatal(err)
	}
	var recs []gateway.AuditRecord
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r gateway.AuditRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// httpGet returns the body of a GET of url, failing the test unless it is
// a 200.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", url, resp.StatusCode, err, b)
	}
	return string(b)
}

// rpcError is a JSON-RPC error a host got.
type rpcError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// e2eHost is a real MCP host connected to the gateway, one session (or,
// in 2026-07-28, one client) per identity.
type e2eHost interface {
	// list returns the names of every page of tools/list.
	list(t *testing.T, who string) []string
	// call calls a tool: the text of its result's content, whether the
	// result is an error result, or the JSON-RPC error.
	call(t *testing.T, who, name string, args map[string]any) (text string, isError bool, err *rpcError)
	// elicitations are the messages of the elicitations the host answered.
	elicitations(t *testing.T, who string) []string
	close(t *testing.T)
}

// e2eBearer adds a bearer token to every request of the SDK's transport.
type e2eBearer struct {
	token string
	next  http.RoundTripper
}

func (b e2eBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// sdkGatewayHost is the official Go SDK's client over StreamableClientTransport.
type sdkGatewayHost struct {
	url, version string
	mu           sync.Mutex
	sessions     map[string]*mcp.ClientSession
	elicited     map[string][]string
}

func (h *sdkGatewayHost) session(t *testing.T, who string) *mcp.ClientSession {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if cs := h.sessions[who]; cs != nil {
		return cs
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-host", Version: "1.0.0"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			h.mu.Lock()
			h.elicited[who] = append(h.elicited[who], r.Params.Message)
			h.mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "go-host " + who, "check": true}}, nil
		},
	})
	tr := &mcp.StreamableClientTransport{Endpoint: h.url,
		HTTPClient: &http.Client{Transport: e2eBearer{e2eTokens[who], http.DefaultTransport}}}
	ctx, cancel := context.WithTimeout(context.Background(), e2eBound)
	defer cancel()
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: h.version})
	if err != nil {
		t.Fatalf("%s connects: %v", who, err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != h.version {
		t.Fatalf("%s: protocol version %q, want %q", who, v, h.version)
	}
	h.sessions[who] = cs
	return cs
}

func (h *sdkGatewayHost) list(t *testing.T, who string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eBound)
	defer cancel()
	var names []string
	for tool, err := range h.session(t, who).Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("%s lists tools: %v", who, err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func (h *sdkGatewayHost) call(t *testing.T, who, name string, args map[string]any) (string, bool, *rpcError) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eBound)
	defer cancel()
	if args == nil {
		args = map[string]any{} // a nil map would be sent as "arguments": null
	}
	res, err := h.session(t, who).CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		var we *sdkjsonrpc.Error
		if !errors.As(err, &we) {
			t.Fatalf("%s calls %s: %v (not a JSON-RPC error)", who, name, err)
		}
		return "", false, &rpcError{Code: we.Code, Message: we.Message}
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	return strings.Join(text, "\n"), res.IsError, nil
}

func (h *sdkGatewayHost) elicitations(_ *testing.T, who string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.elicited[who])
}

func (h *sdkGatewayHost) close(*testing.T) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, cs := range h.sessions {
		_ = cs.Close()
	}
	h.sessions = nil
}

// tsGatewayHost is the official TypeScript SDK's Client over its
// StreamableHTTPClientTransport (testdata/gwhost.mjs), driven line by line.
type tsGatewayHost struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *syncBuffer
}

func startTSGatewayHost(t *testing.T, url string) *tsGatewayHost {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: the TypeScript SDK host needs node 20 and bash .ci/deps.d/20-npm-interop.sh")
	}
	sdk, err := filepath.Abs("../../internal/interop/everything/node_modules/@modelcontextprotocol/sdk")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sdk, "package.json")); err != nil {
		t.Fatalf("the TypeScript SDK is not installed (run bash .ci/deps.d/20-npm-interop.sh): %v", err)
	}
	h := &tsGatewayHost{stderr: &syncBuffer{}}
	h.cmd = exec.Command(node, "testdata/gwhost.mjs", url)
	h.cmd.Env = append(os.Environ(), "TS_SDK_DIR="+sdk)
	h.cmd.Stderr = h.stderr
	if h.in, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.out = bufio.NewScanner(stdout)
	h.out.Buffer(nil, 16<<20)
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.in.Close()
		_ = h.cmd.Process.Kill()
		_ = h.cmd.Wait()
	})
	return h
}

// do sends one command and reads its answer. The host answers every
// command; node's own timeouts bound each request.
func (h *tsGatewayHost) do(t *testing.T, cmd map[string]any, out any) {
	t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := h.in.Write(append(b, '\n')); err != nil {
		t.Fatalf("the TypeScript host: %v\n%s", err, h.stderr)
	}
	if !h.out.Scan() {
		t.Fatalf("the TypeScript host ended (%v):\n%s", h.out.Err(), h.stderr)
	}
	if err := json.Unmarshal(h.out.Bytes(), out); err != nil {
		t.Fatalf("the TypeScript host printed %q: %v", h.out.Text(), err)
	}
}

func (h *tsGatewayHost) list(t *testing.T, who string) []string {
	t.Helper()
	var out struct {
		Names []string  `json:"names"`
		Error *rpcError `json:"error"`
	}
	h.do(t, map[string]any{"token": e2eTokens[who], "op": "list"}, &out)
	if out.Error != nil {
		t.Fatalf("%s lists tools: %+v", who, out.Error)
	}
	return out.Names
}

func (h *tsGatewayHost) call(t *testing.T, who, name string, args map[string]any) (string, bool, *rpcError) {
	t.Helper()
	var out struct {
		Result *struct {
			Content []struct{ Type, Text string } `json:"content"`
			IsError bool                          `json:"isError"`
		} `json:"result"`
		Error *rpcError `json:"error"`
	}
	h.do(t, map[string]any{"token": e2eTokens[who], "op": "call", "name": name, "arguments": args}, &out)
	if out.Error != nil {
		// The SDK's McpError prefixes its message with "MCP error CODE: ".
		out.Error.Message = strings.TrimPrefix(out.Error.Message, fmt.Sprintf("MCP error %d: ", out.Error.Code))
		return "", false, out.Error
	}
	if out.Result == nil {
		t.Fatalf("%s calls %s: neither result nor error", who, name)
	}
	var text []string
	for _, c := range out.Result.Content {
		if c.Type == "text" {
			text = append(text, c.Text)
		}
	}
	return strings.Join(text, "\n"), out.Result.IsError, nil
}

func (h *tsGatewayHost) elicitations(t *testing.T, who string) []string {
	t.Helper()
	var out struct {
		Messages []string `json:"messages"`
	}
	h.do(t, map[string]any{"token": e2eTokens[who], "op": "elicitations"}, &out)
	return out.Messages
}

func (h *tsGatewayHost) close(t *testing.T) {
	t.Helper()
	var out struct {
		Closed bool `json:"closed"`
	}
	h.do(t, map[string]any{"op": "close"}, &out)
	if !out.Closed {
		t.Errorf("the TypeScript host did not close its sessions")
	}
}

// TestGatewayEndToEnd runs `snodo-run gateway` with the demo server,
// server-everything and server-filesystem behind it, and real hosts in
// front: the Go SDK's client in a legacy session and in 2026-07-28, and
// the TypeScript SDK's client (v1, which speaks only the legacy
// revisions) in a legacy session. Each sees the merged lists and calls
// each server; gets one elicitation answered by a Wasm module and one
// forwarded to it (which a 2026-07-28 host cannot be asked by a legacy
// server: refused, naming why); is refused a tool its identity is denied,
// and requests over its rate limit; sees a killed server fail its own
// calls, naming it, while the others serve, until it is restarted; cannot
// read a file outside the interceptor's prefix (plainly, with "..", or
// through a symlink), which the server never receives, and gets a planted
// secret redacted; and every host request is in the audit log with its
// identity, server, tool and decision, beside the interceptors'
// decisions; /metrics holds the requests' durations.
func TestGatewayEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modern bool
		host   func(t *testing.T, url string) e2eHost
	}{
		{"GoSDK/legacy", false, func(t *testing.T, url string) e2eHost {
			return &sdkGatewayHost{url: url, version: "2025-11-25", sessions: map[string]*mcp.ClientSession{}, elicited: map[string][]string{}}
		}},
		{"GoSDK/2026-07-28", true, func(t *testing.T, url string) e2eHost {
			return &sdkGatewayHost{url: url, version: "2026-07-28", sessions: map[string]*mcp.ClientSession{}, elicited: map[string][]string{}}
		}},
		{"TypeScriptSDK/legacy", false, func(t *testing.T, url string) e2eHost { return startTSGatewayHost(t, url) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startE2EGateway(t)
			h := tc.host(t, g.url)
			calls := map[string]int{} // tools/call sent, by identity
			call := func(who, name string, args map[string]any) (string, bool, *rpcError) {
				t.Helper()
				calls[who]++
				return h.call(t, who, name, args)
			}
			mustCall := func(who, name string, args map[string]any) string {
				t.Helper()
				text, isErr, err := call(who, name, args)
				if err != nil || isErr {
					t.Fatalf("%s calls %s: %q (error result %v) %+v", who, name, text, isErr, err)
				}
				return text
			}
			refused := func(who, name string, args map[string]any, code int64, wants ...string) {
				t.Helper()
				text, isErr, err := call(who, name, args)
				if err == nil {
					t.Fatalf("%s calls %s: %q (error result %v), want error %d", who, name, text, isErr, code)
				}
				if err.Code != code {
					t.Errorf("%s calls %s: error %+v, want code %d", who, name, err, code)
				}
				for _, w := range wants {
					if !strings.Contains(err.Message, w) {
						t.Errorf("%s calls %s: error %q does not say %q", who, name, err.Message, w)
					}
				}
			}

			// The merged list holds the tools of all three servers, each
			// under its server's prefix, and each server answers a call.
			tools := h.list(t, "alice")
			perServer := map[string]int{}
			for _, n := range tools {
				server, _, ok := strings.Cut(n, gateway.NameSeparator)
				if !ok || !slices.Contains([]string{"demo", "everything", "fs"}, server) {
					t.Errorf("tool %q is not {server}__{name} of a configured server", n)
				}
				perServer[server]++
			}
			for _, want := range []string{"demo__echo", "demo__register", "everything__echo", "everything__trigger-elicitation-request", "fs__read_text_file", "fs__list_allowed_directories"} {
				if !slices.Contains(tools, want) {
					t.Errorf("the merged list lacks %s: %v", want, tools)
				}
			}
			if t.Failed() {
				t.FailNow()
			}
			if got := mustCall("alice", "demo__echo", map[string]any{"text": "via the gateway"}); got != "via the gateway" {
				t.Errorf("demo__echo: %q", got)
			}
			if got := mustCall("alice", "everything__echo", map[string]any{"message": "via the gateway"}); !strings.Contains(got, "Echo: via the gateway") {
				t.Errorf("everything__echo: %q", got)
			}
			if got := mustCall("alice", "fs__list_allowed_directories", nil); !strings.Contains(got, filepath.Dir(g.prefix)) {
				t.Errorf("fs__list_allowed_directories: %q", got)
			}

			// An elicitation the demo server asks is answered by the
			// elicit-policy module configured for it; the host is not
			// asked.
			if got := mustCall("alice", "demo__register", nil); !strings.Contains(got, "registered wasm-policy") {
				t.Errorf("demo__register: %q, want the module's answer", got)
			}
			if got := h.elicitations(t, "alice"); len(got) != 0 {
				t.Errorf("the host was asked %q, which the module answers", got)
			}
			// server-everything has no module: its elicitation is
			// forwarded to the host whose call caused it: as a request to
			// a legacy host; to a 2026-07-28 host in an input_required
			// result, the call held open on this replica until the host's
			// retry (which the Go SDK client makes by itself).
			text, isErr, rerr := call("alice", "everything__trigger-elicitation-request", nil)
			if rerr != nil || isErr || !strings.Contains(text, "Name: ") || !strings.Contains(text, "-host alice") {
				t.Errorf("everything__trigger-elicitation-request: %q (error result %v) %+v, want the host's answer", text, isErr, rerr)
			}
			if got := h.elicitations(t, "alice"); len(got) != 1 || !strings.Contains(got[0], "Please provide inputs") {
				t.Errorf("the host answered %q, want server-everything's one elicitation", got)
			}

			// Interceptors: a path outside the prefix, plainly, with
			// "..", or through a symlink inside it, is refused before the
			// server sees it; the file inside is read with its secret
			// redacted.
			for _, p := range []struct{ path, why string }{
				{filepath.Join(g.outside, "secret.txt"), "is outside"},
				{g.prefix + "/../outside/secret.txt", "is outside"},
				{filepath.Join(g.prefix, "link.txt"), "goes through a symlink"},
			} {
				refused("alice", "fs__read_text_file", map[string]any{"path": p.path}, -32030, `interceptor "confine-paths"`, p.why)
			}
			got := mustCall("alice", "fs__read_text_file", map[string]any{"path": "notes.txt"})
			if strings.Contains(got, planted) || !strings.Contains(got, "token: [REDACTED]") {
				t.Errorf("fs__read_text_file notes.txt: %q, want the secret redacted", got)
			}
			if rec, err := os.ReadFile(g.record); err != nil {
				t.Error(err)
			} else if strings.Contains(string(rec), "outside") || strings.Contains(string(rec), "link.txt") || strings.Contains(string(rec), "secret.txt") ||
				!strings.Contains(string(rec), filepath.Join(g.prefix, "notes.txt")) {
				t.Errorf("server-filesystem was sent:\n%s", rec)
			}

			// bob is denied everything__echo: not in his list, refused
			// on call.
			if bobs := h.list(t, "bob"); slices.Contains(bobs, "everything__echo") || !slices.Contains(bobs, "everything__get-sum") || !slices.Contains(bobs, "demo__echo") {
				t.Errorf("bob's list: %v", bobs)
			}
			refused("bob", "everything__echo", map[string]any{"message": "x"}, -32602,
				`tool "everything__echo" is not allowed by the gateway's policy for this identity`)

			// carol may send two requests, then is refused with -32029.
			for i := range 2 {
				mustCall("carol", "demo__echo", map[string]any{"text": strconv.Itoa(i)})
			}
			refused("carol", "demo__echo", map[string]any{"text": "3"}, -32029, `rate limited: identity "carol" is over`, "retry in")

			// A killed server: its calls fail naming it while it is down,
			// the other two serve, and it is restarted.
			if err := os.WriteFile(g.block, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			downs := strings.Count(g.stderr.String(), `msg="backend down" server=demo`)
			if err := syscall.Kill(g.serverPid(t, demo), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			g.waitFor(t, nil, "the gateway to see the demo server down", func() bool {
				return strings.Count(g.stderr.String(), `msg="backend down" server=demo`) > downs
			})
			refused("alice", "demo__echo", map[string]any{"text": "x"}, -32000, `server "demo" is down`, "the next attempt to start it is in")
			mustCall("alice", "everything__echo", map[string]any{"message": "still here"})
			mustCall("alice", "fs__read_text_file", map[string]any{"path": "notes.txt"})
			if err := os.Remove(g.block); err != nil {
				t.Fatal(err)
			}
			g.waitFor(t, nil, "the demo server to be restarted", func() bool {
				text, isErr, err := call("alice", "demo__echo", map[string]any{"text": "back"})
				if err != nil && !strings.Contains(err.Message, `server "demo" is down`) {
					t.Fatalf("demo__echo while restarting: %+v", err)
				}
				return err == nil && !isErr && text == "back"
			})
			h.close(t)

			// What the gateway measured is at /metrics, beside /healthz.
			base := strings.TrimSuffix(g.url, "/mcp")
			if body := httpGet(t, base+"/healthz"); body != "ok\n" {
				t.Errorf("/healthz: %q", body)
			}
			metrics := httpGet(t, base+"/metrics")
			for _, want := range []string{`mcp_server_operation_duration_seconds_bucket{`, `gen_ai_tool_name="demo__echo"`, `mcp_client_operation_duration_seconds_bucket{`, `snodo_gateway_server="fs"`} {
				if !strings.Contains(metrics, want) {
					t.Errorf("/metrics lacks %s", want)
				}
			}

			// The audit log: one line per host tools/call with its
			// identity, server, tool and decision; the interceptors'
			// decisions; the elicitations answered by the module and by
			// the host.
			recs := g.auditLines(t)
			hostCalls := map[string]int{}
			var lines []string
			for _, r := range recs {
				switch r.Direction {
				case "host":
					if r.Identity == "" || r.Decision == "" || r.Method == "" {
						t.Errorf("host record without identity, method or decision: %+v", r)
					}
					if r.Method == "tools/call" {
						hostCalls[r.Identity]++
						if r.Server == "" || r.Tool == "" {
							t.Errorf("tools/call record without server or tool: %+v", r)
						}
					}
				case "interceptor":
					phase, _, _ := strings.Cut(r.Reason, ":")
					lines = append(lines, fmt.Sprintf("interceptor %s %s %s %s", r.Server, r.Module, phase, r.Decision))
					continue
				}
				if r.Direction == "host" && r.Method == "tools/call" && r.Decision != "allow" {
					lines = append(lines, fmt.Sprintf("host %s %s %s %s %d", r.Identity, r.Server, r.Tool, r.Decision, r.ErrorCode))
				}
				if r.Direction == "server" && r.Method == "elicitation/create" {
					lines = append(lines, fmt.Sprintf("server %s %s %s %s %s", r.Identity, r.Server, r.Module, r.Method, r.Decision))
				}
			}
			for who, n := range calls {
				if tc.modern && who == "alice" {
					n++ // the retry of the input_required result is a tools/call of its own
				}
				if hostCalls[who] != n {
					t.Errorf("%s sent %d tools/call, the audit log has %d", who, n, hostCalls[who])
				}
			}
			forwarded := "server alice everything  elicitation/create allow"
			for _, want := range []string{
				"server alice demo elicit-policy elicitation/create allow",
				forwarded,
				"interceptor fs confine-paths request deny",
				"interceptor fs confine-paths request rewrite",
				"interceptor fs redact-secrets result replace",
				"host alice fs read_text_file deny -32030",
				"host bob everything echo deny -32602",
				"host carol demo echo rate-limited -32029",
				"host alice demo echo fail -32000",
			} {
				if !slices.Contains(lines, want) {
					t.Errorf("the audit log lacks %q:\n%s", want, strings.Join(lines, "\n"))
				}
			}
			if n := strings.Count(strings.Join(lines, "\n"), "interceptor fs confine-paths request deny"); n != 3 {
				t.Errorf("%d denials of confine-paths audited, want 3", n)
			}
		})
	}
}

// docHub is a gateway.Hub with no servers, for the front's config checks.
type docHub struct{}

func (docHub) Info() gateway.Info { return gateway.Info{} }
func (docHub) Handle(context.Context, *gateway.Request) (json.RawMessage, error) {
	return nil, errors.New("no servers")
}
func (docHub) Listen(context.Context, *gateway.Request, func(string, json.RawMessage) error) (json.RawMessage, error) {
	return nil, errors.New("no servers")
}
func (docHub) Watch(context.Context, string, *gateway.Identity, func(string, json.RawMessage) error) {
}
func (docHub) EndSession(string) {}
func (docHub) Ready() error      { return nil }

// The complete config example of docs/GATEWAY.md is accepted by every part
// of the gateway: the file's sections, the front, the policy (identities,
// jwt, limits), the telemetry section and the hub (servers and modules,
// with the modules it names in place and every server disabled, so that
// nothing is started).
func TestGatewayDocConfig(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "GATEWAY.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, example, ok := strings.Cut(string(doc), "```yaml\n# gateway.yaml\n")
	if ok {
		example, _, ok = strings.Cut(example, "```\n")
	}
	if !ok {
		t.Fatal("docs/GATEWAY.md has no ```yaml block starting with # gateway.yaml")
	}
	sections, err := gateway.ParseConfig([]byte(example), ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The example reads its stateKey from this variable.
	t.Setenv("SNODO_GATEWAY_STATE_KEY", strings.Repeat("ab", 32))
	ctx := context.Background()
	f, err := front.New(sections, docHub{}, nil, nil, nil)
	if err != nil {
		t.Fatalf("front: %v", err)
	}
	_ = f.Close()
	if _, err := policy.New(ctx, sections, policy.Options{}); err != nil {
		t.Fatalf("policy: %v", err)
	}
	var tel telemetry.Config
	if err := sections.Decode("telemetry", &tel); err != nil || tel.OTLPEndpoint == "" {
		t.Fatalf("telemetry %+v: %v", tel, err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{elicitWasm, confineWasm, redactWasm} {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "modules", filepath.Base(m)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var servers map[string]map[string]any
	if err := json.Unmarshal(sections["mcpServers"], &servers); err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		s["disabled"] = true
	}
	sections["mcpServers"], _ = json.Marshal(servers)
	// The audit file is opened by the command (gateway.OpenAudit), as
	// runGateway does; the hub writes to the Auditor it is given.
	h, err := hub.New(ctx, sections, hub.Options{Dir: dir, Auditor: gateway.NewJSONAudit(io.Discard)})
	if err != nil {
		t.Fatalf("hub: %v", err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
