package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/interop/gosdkserver"
	"github.com/snodo/snodo/jsonrpc"
)

// recordingHandler serves h and records each request's method and
// headers, so that a test sees what went over the wire.
type recordingHandler struct {
	h       http.Handler
	mu      sync.Mutex
	methods []string // HTTP method and Content-Type of each response, "POST text/event-stream"
	headers []http.Header
	bodies  []string // of the requests
}

func (rh *recordingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	rh.mu.Lock()
	rh.headers = append(rh.headers, r.Header.Clone())
	rh.bodies = append(rh.bodies, string(body))
	rh.mu.Unlock()
	rw := &typeRecorder{ResponseWriter: w}
	rh.h.ServeHTTP(rw, r)
	rh.mu.Lock()
	rh.methods = append(rh.methods, r.Method+" "+rw.Header().Get("Content-Type"))
	rh.mu.Unlock()
}

type typeRecorder struct{ http.ResponseWriter }

func (t *typeRecorder) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// "Wasm handlers answer elicitation over HTTP exactly as over stdio": the
// same Go-compiled module and Config as TestOneWasmHandlerAnswersDemoElicitationInBothEras,
// against the official Go SDK's Streamable HTTP handler. In the legacy era
// the elicitation is a server request on the tools/call's SSE stream; in
// 2026-07-28 it is an input_required round.
func TestRemoteServerWasmHandlerAnswersElicitationInBothEras(t *testing.T) {
	examples(t)
	for _, tc := range []struct {
		era      string
		versions []string
		want     snodo.Era
	}{
		{"legacy", []string{"2025-11-25", "2025-06-18"}, snodo.EraLegacy},
		{"modern", nil, snodo.EraModern},
	} {
		t.Run(tc.era, func(t *testing.T) {
			rec := &recordingHandler{h: gosdkserver.HTTPHandler(tc.versions)}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			ctx := context.Background()
			rt, err := Start(ctx, Config{
				Server: Server{URL: srv.URL, Header: http.Header{"X-Api-Key": {"k-123"}}},
				Handlers: []HandlerModule{{ModuleConfig: ModuleConfig{Path: elicitWasm,
					Config: json.RawMessage(`{"values":{"name":"Grace"}}`)}}},
				// Not applicable to a remote server: ignored, not failed.
				Subreaper: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			closed := false
			defer func() {
				if !closed {
					_ = rt.Close(ctx)
				}
			}()
			if got := rt.Client().Server().Era; got != tc.want {
				t.Fatalf("era %v, want %v", got, tc.want)
			}
			res, err := rt.Client().CallTool(ctx, "ask", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := textOf(res); got != "hello Grace (accept)" {
				t.Fatalf("ask: %q", got)
			}
			if rt.Pid() != 0 || rt.StderrTail() != "" {
				t.Errorf("remote server: Pid %d, stderr tail %q; want 0 and empty", rt.Pid(), rt.StderrTail())
			}
			if err := rt.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
			closed = true
			if rt.ExitState() != nil {
				t.Errorf("ExitState %v for a remote server", rt.ExitState())
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			for i, h := range rec.headers {
				if h.Get("X-Api-Key") != "k-123" {
					t.Errorf("request %d (%s) without the configured header: %v", i, rec.methods[i], h)
				}
			}
			// How the form went: legacy, a server request on the call's SSE
			// stream answered by a POST of the response; 2026-07-28, a
			// retry of the call with inputResponses.
			answered, retried := false, false
			for _, b := range rec.bodies {
				answered = answered || (strings.Contains(b, `"result"`) && strings.Contains(b, `"action":"accept"`) && !strings.Contains(b, `"method"`))
				retried = retried || (strings.Contains(b, `"method":"tools/call"`) && strings.Contains(b, `"inputResponses"`))
			}
			if tc.era == "legacy" && (!answered || retried || !slicesContain(rec.methods, "POST text/event-stream")) {
				t.Errorf("legacy: elicitation answered by POST %v, retried %v, responses %v", answered, retried, rec.methods)
			}
			if tc.era == "modern" && (!retried || answered) {
				t.Errorf("modern: input_required retry %v, server request answered %v", retried, answered)
			}
		})
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestStartRefusesBadRemoteServers(t *testing.T) {
	for _, tc := range []struct {
		name string
		srv  Server
		want string
	}{
		{"url and command", Server{URL: "http://127.0.0.1:1/mcp", Command: "demo"}, "both a URL and a command"},
		{"url and env", Server{URL: "http://127.0.0.1:1/mcp", Env: []EnvVar{{Name: "A", Value: "1"}}}, "both a URL and a command"},
		{"no scheme", Server{URL: "127.0.0.1:8080/mcp"}, "scheme must be http or https"},
		{"ftp", Server{URL: "ftp://example.com/mcp"}, "scheme must be http or https"},
		{"no host", Server{URL: "http:///mcp"}, "no host"},
		{"credentials", Server{URL: "https://ada:s3cret@example.com/mcp"}, "holds credentials"},
		{"space", Server{URL: " http://example.com/mcp"}, "not a URL"},
		{"bad escape", Server{URL: "http://example.com/%zz"}, "invalid URL escape"},
		{"header name", Server{URL: "http://example.com/mcp", Header: http.Header{"Bad Name": {"x"}}}, "not an HTTP token"},
		{"header CRLF", Server{URL: "http://example.com/mcp", Header: http.Header{"Authorization": {"Bearer a\r\nX-Injected: 1"}}}, "control character"},
		{"transport header", Server{URL: "http://example.com/mcp", Header: http.Header{"Mcp-Session-Id": {"stolen"}}}, "set by the HTTP transport"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Start(context.Background(), Config{Server: tc.srv})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "X-Injected") {
				t.Errorf("the error shows a secret: %v", err)
			}
		})
	}
}

// A server that is not there: Start fails with a connection error, and
// nothing is left running.
func TestStartRemoteUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	_, err = Start(context.Background(), Config{Server: Server{URL: "http://" + addr + "/mcp"}, Protocol: "modern"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeConnectionClosed {
		t.Fatalf("error %v, want a -32000 connection error", err)
	}
}

// Credentials configured for a plain http:// URL to a host that is not a
// loopback address are sent anyway (the user asked for it), with a
// warning; to a loopback address, or over https, without one.
func TestRemoteHeadersInClearTextWarn(t *testing.T) {
	for _, tc := range []struct {
		url  string
		warn bool
	}{
		{"http://192.0.2.1:1/mcp", true},
		{"http://mcp.example.invalid/mcp", true},
		{"http://127.0.0.1:1/mcp", false},
		{"http://[::1]:1/mcp", false},
		{"http://localhost:1/mcp", false},
		{"https://192.0.2.1:1/mcp", false},
		// A credential in the query is redacted from every log line.
		{"http://192.0.2.1:1/mcp?api_key=s3cret", true},
	} {
		var logs strings.Builder
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // no request is needed: the warning comes before the first
		_, err := Start(ctx, Config{
			Server: Server{URL: tc.url, Header: http.Header{"Authorization": {"Bearer s3cret"}}},
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		})
		if err == nil {
			t.Fatalf("%s: Start with a cancelled context succeeded", tc.url)
		}
		if got := strings.Contains(logs.String(), "unencrypted"); got != tc.warn {
			t.Errorf("%s: warned %v, want %v; logs: %s", tc.url, got, tc.warn, logs.String())
		}
		if strings.Contains(logs.String(), "s3cret") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: a secret reached the log or the error: %s\n%v", tc.url, logs.String(), err)
		}
	}
}
