package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// proxyHost is the official Go SDK client, as a host, connected to
// `snodo-run … proxy -- demo`.
type proxyHost struct {
	t        *testing.T
	session  *mcp.ClientSession
	mark     string
	progress chan *mcp.ProgressNotificationParams
	elicited chan string
	updated  chan string
	// completed receives the elicitationId of each
	// notifications/elicitation/complete.
	completed chan string
}

// hostEras are the host's protocol versions: the SDK's default speaks
// 2026-07-28 (server/discover first); a legacy version makes it open with
// initialize.
var hostEras = map[string]string{"legacy": "2025-11-25", "modern": ""}

func startProxyHost(t *testing.T, hostEra string, args ...string) *proxyHost {
	t.Helper()
	h := &proxyHost{t: t, mark: newMark(),
		progress: make(chan *mcp.ProgressNotificationParams, 100), elicited: make(chan string, 10),
		updated: make(chan string, 100), completed: make(chan string, 10)}
	cmd := exec.Command(binary, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "SNODO_CACHE_DIR="+cacheDir, markEnv+"="+h.mark)
	client := mcp.NewClient(&mcp.Implementation{Name: "proxy-test-host", Version: "1.0.0"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			select {
			case h.completed <- req.Params.ElicitationID:
			default:
			}
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			h.elicited <- req.Params.Message
			if req.Params.Mode == "url" {
				return &mcp.ElicitResult{Action: "accept"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Linus", "age": 7, "plan": "pro", "newsletter": true}}, nil
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case h.updated <- req.Params.URI:
			default:
			}
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			select {
			case h.progress <- req.Params:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var opts *mcp.ClientSessionOptions
	if v := hostEras[hostEra]; v != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: v}
	}
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, opts)
	if err != nil {
		t.Fatalf("connecting to snodo-run %v: %v", args, err)
	}
	h.session = s
	want := "2026-07-28"
	if hostEra == "legacy" {
		want = "2025-11-25"
	}
	if got := s.InitializeResult().ProtocolVersion; got != want {
		t.Errorf("host %s: protocol version %q, want %q", hostEra, got, want)
	}
	if name := s.InitializeResult().ServerInfo; name == nil || name.Name != "snodo-demo" {
		t.Errorf("server info %+v, want the demo server's", name)
	}
	return h
}

// close ends the session (EOF on the proxy's stdin) and checks that the
// proxy and the server are gone.
func (h *proxyHost) close() {
	h.t.Helper()
	if err := h.session.Close(); err != nil {
		h.t.Errorf("closing the session: %v", err)
	}
	assertNoneLeft(h.t, h.mark)
}

func (h *proxyHost) call(name string, args map[string]any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return h.session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// The Go SDK client as the host, the demo server behind snodo-run proxy,
// in every combination of eras: tools pass through, the guard denies a
// tool and hides it, an elicitation no module answers reaches the host's
// handler, progress reaches the host, and the audit log records it all.
func TestProxyForwardsBetweenGoSDKHostAndDemoInEveryEra(t *testing.T) {
	for _, hostEra := range []string{"legacy", "modern"} {
		for _, serverEra := range eras {
			t.Run("host "+hostEra+", server "+serverEra, func(t *testing.T) {
				audit := filepath.Join(t.TempDir(), "audit.jsonl")
				h := startProxyHost(t, hostEra, "--deny-tool", "fail", "--deny-tool", "toggle*",
					"proxy", "--audit", audit, "--", demo, "--era", serverEra)
				defer func() {
					if h != nil {
						h.close()
					}
				}()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()

				tools, err := h.session.ListTools(ctx, nil)
				if err != nil {
					t.Fatalf("tools/list: %v", err)
				}
				var names []string
				for _, tool := range tools.Tools {
					names = append(names, tool.Name)
				}
				got := strings.Join(names, " ")
				if !strings.Contains(got, "echo") || !strings.Contains(got, "register") {
					t.Errorf("tools/list lacks the demo's tools: %s", got)
				}
				if strings.Contains(got, "fail") || strings.Contains(got, "toggle_bonus") {
					t.Errorf("tools/list shows denied tools: %s", got)
				}

				r, err := h.call("echo", map[string]any{"text": "through the proxy"})
				if err != nil || resultText(r) != "through the proxy" {
					t.Fatalf("echo: %v %+v", err, r)
				}

				if r, err := h.call("fail", nil); err == nil {
					t.Errorf("denied tool fail was called: %+v", r)
				} else if !strings.Contains(err.Error(), `tool "fail" is not allowed by the guard`) {
					t.Errorf("denied tool: error %v", err)
				}

				r, err = h.call("register", nil)
				if err != nil {
					t.Fatalf("register: %v", err)
				}
				if got := resultText(r); got != "registered Linus (age 7, plan pro, newsletter true)" {
					t.Errorf("register, answered by the host: %q", got)
				}
				select {
				case msg := <-h.elicited:
					if msg != "Please register for the demo." {
						t.Errorf("the host was asked %q", msg)
					}
				default:
					t.Errorf("the host's elicitation handler was not called")
				}

				params := &mcp.CallToolParams{Name: "count", Arguments: map[string]any{"steps": 3, "delay_ms": 5}}
				params.SetProgressToken("host-token")
				r, err = h.session.CallTool(ctx, params)
				if err != nil || resultText(r) != "counted to 3" {
					t.Fatalf("count: %v %+v", err, r)
				}
				select {
				case p := <-h.progress:
					if p.ProgressToken != "host-token" || p.Total != 3 {
						t.Errorf("progress %+v: want the host's token and total 3", p)
					}
				case <-ctx.Done():
					t.Fatalf("no progress notification reached the host")
				}

				h.close()
				h = nil
				records := readAudit(t, audit)
				find := func(dir, method, tool string) map[string]any {
					for _, rec := range records {
						if rec["direction"] == dir && rec["method"] == method && (tool == "" || rec["tool"] == tool) {
							return rec
						}
					}
					t.Errorf("audit log has no %s %s %s record:\n%v", dir, method, tool, records)
					return map[string]any{}
				}
				if rec := find("host-to-server", "tools/call", "fail"); rec["decision"] != "deny" || rec["errorCode"] != float64(-32602) {
					t.Errorf("denied call audited as %v", rec)
				}
				if rec := find("host-to-server", "tools/call", "echo"); rec["decision"] != "allow" || rec["errorCode"] != nil {
					t.Errorf("echo audited as %v", rec)
				}
				// A 2026-07-28 host got the elicitation in an input_required
				// result, and retried.
				if rec := find("host-to-server", "tools/call", "register"); (rec["inputRequired"] == true) != (hostEra == "modern") {
					t.Errorf("register audited as %v", rec)
				}
				if rec := find("server-to-host", "elicitation/create", ""); rec["decision"] != "allow" {
					t.Errorf("forwarded elicitation audited as %v", rec)
				}
				for _, rec := range records {
					if _, err := time.Parse(time.RFC3339Nano, rec["time"].(string)); err != nil {
						t.Errorf("audit time %v: %v", rec["time"], err)
					}
					if _, ok := rec["durationMs"].(float64); !ok {
						t.Errorf("audit record without durationMs: %v", rec)
					}
				}
			})
		}
	}
}

// An elicitation a Wasm module answers never reaches the host.
func TestProxyAnswersElicitationWithWasmModule(t *testing.T) {
	for _, hostEra := range []string{"legacy", "modern"} {
		for _, serverEra := range eras {
			t.Run("host "+hostEra+", server "+serverEra, func(t *testing.T) {
				audit := filepath.Join(t.TempDir(), "audit.jsonl")
				h := startProxyHost(t, hostEra, "--handler", elicitWasm, "--handler-config", `{"values":{"name":"Grace","plan":"pro"}}`,
					"proxy", "--audit", audit, "--", demo, "--era", serverEra)
				defer func() {
					if h != nil {
						h.close()
					}
				}()
				r, err := h.call("register", nil)
				if err != nil {
					t.Fatalf("register: %v", err)
				}
				if got := resultText(r); got != "registered Grace (age 36, plan pro, newsletter false)" {
					t.Errorf("register, answered by the module: %q", got)
				}
				select {
				case msg := <-h.elicited:
					t.Errorf("the host was asked %q, though a module answers elicitation", msg)
				default:
				}
				h.close()
				h = nil
				// The module's answer is audited like a forwarded request,
				// without its content.
				raw, err := os.ReadFile(audit)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(raw), "Grace") {
					t.Errorf("the audit log holds the module's answer:\n%s", raw)
				}
				found := false
				for _, rec := range readAudit(t, audit) {
					if rec["method"] != "elicitation/create" {
						continue
					}
					found = true
					if rec["direction"] != "server-to-module" || rec["decision"] != "allow" || rec["errorCode"] != nil ||
						!strings.Contains(fmt.Sprint(rec["module"]), "elicit") {
						t.Errorf("the module's answer audited as %v", rec)
					}
				}
				if !found {
					t.Errorf("the elicitation the module answered is not in the audit log:\n%s", raw)
				}
			})
		}
	}
}

func readAudit(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("audit line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, rec)
	}
	return out
}

// The host's notifications/cancelled cancels the forwarded call: the
// proxy does not answer it, and the audit log says it was cancelled.
func TestProxyHostCancelsForwardedCall(t *testing.T) {
	for _, hostEra := range []string{"legacy", "modern"} {
		for _, serverEra := range eras {
			t.Run("host "+hostEra+", server "+serverEra, func(t *testing.T) {
				audit := filepath.Join(t.TempDir(), "audit.jsonl")
				h := startProxyHost(t, hostEra, "proxy", "--audit", audit, "--", demo, "--era", serverEra)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				params := &mcp.CallToolParams{Name: "count", Arguments: map[string]any{"steps": 1000, "delay_ms": 10}}
				params.SetProgressToken("cancel-me")
				done := make(chan error, 1)
				go func() {
					_, err := h.session.CallTool(ctx, params)
					done <- err
				}()
				<-h.progress // the call is running on the server
				cancel()
				if err := <-done; err == nil {
					t.Errorf("the cancelled call succeeded")
				}
				// A later call is served: the proxy went on.
				if r, err := h.call("echo", map[string]any{"text": "after"}); err != nil || resultText(r) != "after" {
					t.Errorf("echo after the cancellation: %v %+v", err, r)
				}
				h.close()
				for _, rec := range readAudit(t, audit) {
					if rec["tool"] == "count" {
						if rec["cancelled"] != true {
							t.Errorf("cancelled call audited as %v", rec)
						}
						return
					}
				}
				t.Errorf("the cancelled call is not in the audit log")
			})
		}
	}
}

// A host subscribes to demo://counter (resources/subscribe from a legacy
// host, subscriptions/listen from a 2026-07-28 one, which the proxy opens
// on the server in either server era): the server's update reaches the
// host; after unsubscribing, the proxy goes on serving. The demo touches
// demo://counter over and over (--churn), since the Go SDK's Subscribe
// does not wait for the acknowledgement of its subscriptions/listen. A
// legacy host's resources/subscribe is passed through, which a 2026-07-28
// server does not have.
func TestProxyCarriesResourceSubscriptions(t *testing.T) {
	for _, hostEra := range []string{"legacy", "modern"} {
		for _, serverEra := range eras {
			if hostEra == "legacy" && serverEra == "modern" {
				continue
			}
			t.Run("host "+hostEra+", server "+serverEra, func(t *testing.T) {
				audit := filepath.Join(t.TempDir(), "audit.jsonl")
				h := startProxyHost(t, hostEra, "proxy", "--audit", audit, "--", demo, "--era", serverEra, "--churn", "20ms")
				defer func() {
					if h != nil {
						h.close()
					}
				}()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				if err := h.session.Subscribe(ctx, &mcp.SubscribeParams{URI: "demo://counter"}); err != nil {
					t.Fatalf("subscribe: %v", err)
				}
				select {
				case uri := <-h.updated:
					if uri != "demo://counter" {
						t.Errorf("update for %q", uri)
					}
				case <-ctx.Done():
					t.Fatalf("no resource update reached the host")
				}
				if err := h.session.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "demo://counter"}); err != nil {
					t.Fatalf("unsubscribe: %v", err)
				}
				if r, err := h.call("echo", map[string]any{"text": "after"}); err != nil || resultText(r) != "after" {
					t.Errorf("echo after unsubscribing: %v %+v", err, r)
				}
				h.close()
				h = nil
				if hostEra == "modern" {
					found := false
					for _, rec := range readAudit(t, audit) {
						if rec["method"] == "subscriptions/listen" {
							found = true
							if rec["cancelled"] != true {
								t.Errorf("the listen the host cancelled is audited as %v", rec)
							}
						}
					}
					if !found {
						t.Errorf("subscriptions/listen is not in the audit log")
					}
				}
			})
		}
	}
}

// A URL-mode elicitation of a legacy server reaches the host; when the
// host opened with 2025-11-25, the server's
// notifications/elicitation/complete for it follows. A 2026-07-28 host
// has no such notification and gets none.
func TestProxyCarriesURLElicitationComplete(t *testing.T) {
	for _, hostEra := range []string{"legacy", "modern"} {
		t.Run("host "+hostEra, func(t *testing.T) {
			h := startProxyHost(t, hostEra, "proxy", "--", demo, "--era", "legacy")
			r, err := h.call("connect", nil)
			if err != nil || resultText(r) != "connected" {
				t.Fatalf("connect: %v %+v", err, r)
			}
			if msg := <-h.elicited; !strings.Contains(msg, "Sign in") {
				t.Errorf("the host was asked %q", msg)
			}
			if hostEra == "legacy" {
				// The server sends the notification before its result, and
				// the proxy writes it to the host on its way.
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				select {
				case id := <-h.completed:
					if id != "demo-login-42" {
						t.Errorf("elicitation complete for %q", id)
					}
				case <-ctx.Done():
					t.Errorf("notifications/elicitation/complete did not reach the host")
				}
			}
			h.close()
			if hostEra == "modern" {
				select {
				case id := <-h.completed:
					t.Errorf("a 2026-07-28 host got notifications/elicitation/complete for %q", id)
				default:
				}
			}
		})
	}
}
