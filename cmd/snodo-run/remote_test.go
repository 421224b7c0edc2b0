package main

import (
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/snodo/snodo/internal/interop/gosdkserver"
)

// remoteServer is the interop server of the official Go SDK v1.8.0 behind
// its Streamable HTTP handler, in this test process, recording the headers
// each request came with. With token set, a request without
// "Authorization: Bearer token" is answered 401, as a server requiring
// authorization does, and one with "Bearer revoked" 403.
type remoteServer struct {
	*httptest.Server
	token string

	mu      sync.Mutex
	headers []http.Header
}

func newRemoteServer(t *testing.T, versions []string, token string) *remoteServer {
	t.Helper()
	rs := &remoteServer{token: token}
	h := gosdkserver.HTTPHandler(versions)
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.headers = append(rs.headers, r.Header.Clone())
		rs.mu.Unlock()
		if rs.token != "" && r.Header.Get("Authorization") == "Bearer revoked" {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		if rs.token != "" && r.Header.Get("Authorization") != "Bearer "+rs.token {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(rs.Close)
	return rs
}

// url is the server's MCP endpoint.
func (rs *remoteServer) url() string { return rs.URL + "/mcp" }

// sawHeader reports whether every request carried the header.
func (rs *remoteServer) sawHeader(t *testing.T, name, value string) {
	t.Helper()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.headers) == 0 {
		t.Fatal("the server got no request")
	}
	for i, h := range rs.headers {
		if h.Get(name) != value {
			t.Errorf("request %d: %s %q, want %q", i, name, h.Get(name), value)
		}
	}
}

// "snodo-run --url http://127.0.0.1:PORT/mcp tools list works against the
// Go SDK server", in both eras, and a Wasm handler answers the server's
// elicitation over HTTP as over stdio.
func TestURLAgainstGoSDKServerInBothEras(t *testing.T) {
	for _, tc := range []struct {
		era      string
		versions []string
	}{
		{"legacy", []string{"2025-11-25", "2025-06-18"}},
		{"modern", nil},
	} {
		t.Run(tc.era, func(t *testing.T) {
			rs := newRemoteServer(t, tc.versions, "")
			r := ok(t, cli(t, "--url", rs.url(), "tools", "list", "-o", "text"))
			contains(t, "tools list", r.stdout, "ask", "count", "grow")
			d := ok(t, cli(t, "--url", rs.url(), "discover")).json(t)
			if d["era"] != tc.era {
				t.Errorf("discover: era %v, want %s", d["era"], tc.era)
			}
			r = ok(t, cli(t, "--url", rs.url(), "--header", "X-Api-Key: k-1", "--handler", elicitWasm,
				"--handler-config", `{"values":{"name":"Ada"}}`, "tools", "call", "ask", "-o", "text"))
			contains(t, "tools call ask", r.stdout, "hello Ada (accept)")
			rs.mu.Lock()
			rs.headers = rs.headers[len(rs.headers)-1:]
			rs.mu.Unlock()
			rs.sawHeader(t, "X-Api-Key", "k-1")
		})
	}
}

// The other commands that talk to a server take --url too: resources,
// prompts, call, shell, proxy.
func TestURLWithOtherCommands(t *testing.T) {
	rs := newRemoteServer(t, nil, "")
	r := ok(t, cli(t, "--url", rs.url(), "resources", "read", "interop://counter", "-o", "text"))
	contains(t, "resources read", r.stdout, "1")
	ok(t, cli(t, "--url", rs.url(), "prompts", "list"))
	r = ok(t, cli(t, "--url", rs.url(), "call", "tools/list"))
	contains(t, "call tools/list", r.stdout, `"ask"`)
	r = ok(t, cliWith(t, runOpts{stdin: "tools call count steps=2 delay_ms=0\n"}, "--url", rs.url(), "shell"))
	contains(t, "shell", r.stdout, "counted to 2")
	// The host waits for its answers before it closes the proxy's stdin,
	// whose end cancels what is in flight.
	h := startHost(t, "--url", rs.url(), "proxy")
	h.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	if m := h.next("initialize"); string(m["id"]) != "1" {
		t.Fatalf("proxy: %v, want the initialize answer", m)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if m := h.next("tools/list"); string(m["id"]) != "2" || !strings.Contains(string(m["result"]), `"ask"`) {
		t.Errorf("proxy: %v, want the tools/list answer", m)
	}
	_ = h.in.Close()
	h.exit("after the host's EOF")
}

// listen over HTTP, in the shell's one connection: in the legacy era the
// list change comes on the session's GET stream, in 2026-07-28 on the
// subscriptions/listen stream.
func TestURLShellListenInBothEras(t *testing.T) {
	for _, tc := range []struct {
		era      string
		versions []string
	}{
		{"legacy", []string{"2025-11-25"}},
		{"modern", nil},
	} {
		t.Run(tc.era, func(t *testing.T) {
			rs := newRemoteServer(t, tc.versions, "")
			script := "listen --tools --count 1\ntools call grow\nwait\ntools list\n"
			r := ok(t, cliWith(t, runOpts{stdin: script}, "--url", rs.url(), "shell"))
			contains(t, "shell", r.stdout, `{"method":"notifications/tools/list_changed"`, `"name":"extra-1"`)
		})
	}
}

// A server that requires authorization: the 401 says what to pass; with
// the header (flag, environment, config file) it works.
func TestURLAuthorization(t *testing.T) {
	rs := newRemoteServer(t, nil, "t0ken")
	e := exits(t, cli(t, "--url", rs.url(), "tools", "list"), exitConnection, "transport")
	contains(t, "error", e.Message, "the server requires authorization: pass --header 'Authorization: Bearer")
	ok(t, cli(t, "--url", rs.url(), "--header", "Authorization: Bearer t0ken", "tools", "list"))
	e = exits(t, cli(t, "--url", rs.url(), "--header", "Authorization: Bearer revoked", "tools", "list"), exitConnection, "transport")
	contains(t, "403", e.Message, "the server refuses these credentials")
	// SNODO_HEADER holds a header a line (values have spaces).
	ok(t, cliWith(t, runOpts{env: []string{"SNODO_SERVER_URL=" + rs.url(), "SNODO_HEADER=Authorization: Bearer t0ken\nX-Other: two words"}}, "tools", "list"))
	rs.mu.Lock()
	last := rs.headers[len(rs.headers)-1]
	rs.mu.Unlock()
	if last.Get("X-Other") != "two words" {
		t.Errorf("SNODO_HEADER's second line: X-Other %q", last.Get("X-Other"))
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "snodo.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("server:\n  url: %s\n  headers: {Authorization: \"Bearer t0ken\"}\n", rs.url())), 0o644)
	ok(t, cli(t, "--config", cfg, "tools", "list"))
	// A wrong token from the config file is replaced by --header.
	os.WriteFile(cfg, []byte(fmt.Sprintf("server:\n  url: %s\n  headers: {Authorization: \"Bearer wrong\"}\n", rs.url())), 0o644)
	exits(t, cli(t, "--config", cfg, "tools", "list"), exitConnection, "transport")
	ok(t, cli(t, "--config", cfg, "--header", "authorization: Bearer t0ken", "tools", "list"))
	// The header list of the config file, as --header.
	os.WriteFile(cfg, []byte(fmt.Sprintf("server:\n  url: %s\nheader: [\"Authorization: Bearer t0ken\"]\n", rs.url())), 0o644)
	ok(t, cli(t, "--config", cfg, "tools", "list"))
	// A command after -- beats server.url of the config file; SNODO_SERVER_URL
	// and a command are a contradiction.
	r := ok(t, cli(t, "--config", cfg, "tools", "list", "-o", "text", "--", demo))
	contains(t, "command over server.url", r.stdout, "register")
	e = exits(t, cliWith(t, runOpts{env: []string{"SNODO_SERVER_URL=" + rs.url()}}, "tools", "list", "--", demo), exitUsage, "usage")
	contains(t, "env and command", e.Message, "give either SNODO_SERVER_URL")
	// A misspelt key is refused, with the right one suggested.
	os.WriteFile(cfg, []byte(fmt.Sprintf("server:\n  url: %s\n  hedaers: {Authorization: \"Bearer t0ken\"}\n", rs.url())), 0o644)
	e = exits(t, cli(t, "--config", cfg, "tools", "list"), exitUsage, "config")
	contains(t, "misspelt", e.Message, "unknown key server.hedaers (did you mean server.headers?)")
}

// mcpServers entries with a url, as desktop hosts write them: "type" http
// or the other names hosts use, "headers", and "disabled" honoured.
func TestMCPServersRemoteEntries(t *testing.T) {
	rs := newRemoteServer(t, nil, "t0ken")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mcp.json")
	body := fmt.Sprintf(`{"mcpServers": {
  "plain":     {"url": %[1]q, "headers": {"Authorization": "Bearer t0ken"}},
  "http":      {"type": "http", "url": %[1]q, "headers": {"Authorization": "Bearer t0ken"}},
  "cline":     {"type": "streamableHttp", "url": %[1]q, "headers": {"Authorization": "Bearer t0ken"}},
  "dashed":    {"type": "streamable-http", "serverUrl": %[1]q, "headers": {"Authorization": "Bearer t0ken"}},
  "off":       {"type": "http", "url": %[1]q, "disabled": true},
  "both":      {"url": %[1]q, "command": "demo"},
  "noauth":    {"type": "http", "url": %[1]q},
  "badtype":   {"type": "websocket", "url": %[1]q},
  "nourl":     {"type": "http"},
  "userinfo":  {"url": "http://ada:pw@127.0.0.1:1/mcp"},
  "injection": {"url": %[1]q, "headers": {"Authorization": "Bearer a\r\nX-Evil: 1"}}
}}`, rs.url())
	os.WriteFile(cfg, []byte(body), 0o644)
	for _, name := range []string{"plain", "http", "cline", "dashed"} {
		r := ok(t, cli(t, "--config", cfg, "--server", name, "tools", "list", "-o", "text"))
		contains(t, name, r.stdout, "ask")
	}
	for _, tc := range []struct{ name, want string }{
		{"off", `mcpServers.off is disabled`},
		{"both", `both a url and a command`},
		{"badtype", `has type "websocket"`},
		{"nourl", `has type http and no url`},
		{"userinfo", `holds credentials`},
		{"injection", `control character`},
	} {
		e := exits(t, cli(t, "--config", cfg, "--server", tc.name, "tools", "list"), exitUsage, "")
		contains(t, tc.name, e.Message, tc.want)
		if strings.Contains(e.Message, "X-Evil") || strings.Contains(e.Message, ":pw@") {
			t.Errorf("%s: the error shows a secret: %s", tc.name, e.Message)
		}
	}
	e := exits(t, cli(t, "--config", cfg, "--server", "noauth", "tools", "list"), exitConnection, "transport")
	contains(t, "noauth", e.Message, "requires authorization")
	// --header adds to an entry's headers.
	ok(t, cli(t, "--config", cfg, "--server", "noauth", "--header", "Authorization: Bearer t0ken", "tools", "list"))
}

// Bad input gets a clear error, and nothing reaches a server.
func TestURLBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--url", "ftp://example.com/mcp", "tools", "list"}, "scheme must be http or https"},
		{[]string{"--url", "localhost:8080/mcp", "tools", "list"}, "scheme must be http or https"},
		{[]string{"--url", "http://127.0.0.1:1/mcp", "tools", "list", "--", "demo"}, "either --url"},
		{[]string{"--url", "http://127.0.0.1:1/mcp", "--header", "NoColon", "tools", "list"}, "'Name: value'"},
		{[]string{"--url", "http://127.0.0.1:1/mcp", "--header", "Bearer s3cr3t-token", "tools", "list"}, "one has no colon"},
		{[]string{"--url", "http://127.0.0.1:1/mcp", "--header", "Mcp-Session-Id: x", "tools", "list"}, "set by the HTTP transport"},
		{[]string{"--url", "http://127.0.0.1:1/mcp", "--env", "A=1", "tools", "list"}, "apply to a server process"},
		{[]string{"--header", "Authorization: Bearer x", "tools", "list", "--", "demo"}, "applies to a remote server"},
	} {
		e := exits(t, cli(t, tc.args...), exitUsage, "")
		contains(t, strings.Join(tc.args, " "), e.Message, tc.want)
		if strings.Contains(e.Message, "s3cr3t") {
			t.Errorf("the error shows what may be a token: %s", e.Message)
		}
	}
}

// Failures to reach the server say what to check: nothing listening, a
// certificate not trusted, TLS asked of a plain HTTP server.
func TestURLConnectionErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	e := exits(t, cli(t, "--url", "http://"+addr+"/mcp", "tools", "list"), exitConnection, "transport")
	contains(t, "refused", e.Message, "nothing listens there")

	// .invalid never resolves (RFC 2606).
	e = exits(t, cli(t, "--url", "http://snodo-test.invalid/mcp", "tools", "list"), exitConnection, "transport")
	contains(t, "unknown host", e.Message, "the host snodo-test.invalid is not found")

	tlsSrv := httptest.NewTLSServer(gosdkserver.HTTPHandler(nil))
	defer tlsSrv.Close()
	e = exits(t, cli(t, "--url", tlsSrv.URL+"/mcp", "tools", "list"), exitConnection, "transport")
	contains(t, "untrusted certificate", e.Message, "TLS: the server's certificate is not trusted")

	rs := newRemoteServer(t, nil, "")
	e = exits(t, cli(t, "--url", strings.Replace(rs.url(), "http://", "https://", 1), "tools", "list"), exitConnection, "transport")
	contains(t, "https to http", e.Message, "did not answer TLS")
}

// A credential in the --url query (?api_key=…) is not shown by any error
// or log line (-v): the URL appears with its query values redacted, its
// keys kept.
func TestURLQuerySecretIsRedacted(t *testing.T) {
	const secret = "s3cr3t"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/mcp?api_key=" + secret
	l.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer failing.Close()
	stop := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer hanging.Close()
	defer close(stop)
	for _, tc := range []struct {
		what string
		args []string
		code int
		want string
	}{
		{"connection refused", []string{"-v", "--url", refused, "tools", "list"}, exitConnection, "nothing listens there: check the URL http://" + l.Addr().String() + "/mcp?api_key=REDACTED"},
		{"connection refused, with a header", []string{"-v", "--url", refused, "--header", "X-Other: 1", "tools", "list"}, exitConnection, "api_key=REDACTED"},
		{"HTTP 500", []string{"-v", "--url", failing.URL + "/mcp?api_key=" + secret, "tools", "list"}, exitConnection, "HTTP 500"},
		{"connect timeout", []string{"-v", "--connect-timeout", "500ms", "--header", "Authorization: Bearer t", "--url", hanging.URL + "/mcp?api_key=" + secret, "tools", "list"}, exitTimeout, "api_key=REDACTED"},
		{"--env", []string{"--url", refused, "--env", "A=1", "tools", "list"}, exitUsage, "api_key=REDACTED is a remote server"},
		{"not a URL", []string{"--url", "http://[::1/mcp?api_key=" + secret, "tools", "list"}, exitUsage, "api_key=REDACTED"},
	} {
		r := cli(t, tc.args...)
		e := exits(t, r, tc.code, "")
		contains(t, tc.what, e.Message, tc.want)
		if strings.Contains(r.stderr, secret) || strings.Contains(r.stdout, secret) {
			t.Errorf("%s: the output shows the secret:\n%s", tc.what, r.stderr)
		}
	}
}

// A --url server that redirects to another origin (307 to another port,
// 308 from https to http) is not followed: the run fails naming the
// target, and the --header credentials never reach it — neither the
// request of the OAuth check before connecting (no Authorization header)
// nor the MCP requests. A redirect within the origin keeps working.
func TestURLRedirectToAnotherOriginIsNotFollowed(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		leaked = append(leaked, fmt.Sprintf("%s %s: Authorization %q, X-Api-Key %q", r.Method, r.URL, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")))
		mu.Unlock()
		http.Error(w, "moved here", http.StatusInternalServerError)
	}))
	defer other.Close()
	redirectTo := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			http.Redirect(w, r, other.URL+"/mcp", status)
		}
	}
	plain := httptest.NewServer(redirectTo(http.StatusTemporaryRedirect))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(redirectTo(http.StatusPermanentRedirect))
	defer tlsSrv.Close()
	// snodo-run trusts the TLS server's certificate by SSL_CERT_FILE.
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw})
	if err := os.WriteFile(caFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	trustTLS := runOpts{env: []string{"SSL_CERT_FILE=" + caFile}}
	for _, url := range []string{plain.URL + "/mcp", tlsSrv.URL + "/mcp"} {
		for _, header := range []string{"X-Api-Key: s3cr3t", "Authorization: Bearer s3cr3t"} {
			e := exits(t, cliWith(t, trustTLS, "--url", url, "--header", header, "tools", "list"), exitConnection, "transport")
			contains(t, url+" "+header, e.Message, "redirect", strings.TrimPrefix(other.URL, "http://")+"/mcp")
		}
	}
	mu.Lock()
	for _, l := range leaked {
		t.Errorf("the other origin got a request: %s", l)
	}
	mu.Unlock()

	mux := http.NewServeMux()
	mux.Handle("/mcp", gosdkserver.HTTPHandler(nil))
	mux.Handle("/old", http.RedirectHandler("/mcp", http.StatusPermanentRedirect))
	same := httptest.NewServer(mux)
	defer same.Close()
	ok(t, cli(t, "--url", same.URL+"/old", "--header", "X-Api-Key: k-1", "tools", "list"))
}

// A server restarted between the handshake and the first request (the Go
// SDK's server, a fresh instance that no longer knows the session) answers
// 404: the run starts a new session, sends tools/list once more, succeeds,
// and says so under -v.
func TestURLSessionExpiredStartsNewSession(t *testing.T) {
	versions := []string{"2025-11-25"}
	var (
		mu        sync.Mutex
		h         = gosdkserver.HTTPHandler(versions)
		restarted bool
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		mu.Lock()
		if !restarted && strings.Contains(string(body), `"tools/list"`) {
			// The old instance's session ends with it: a DELETE, so that
			// none of its goroutines outlive the test.
			del := httptest.NewRequest(http.MethodDelete, "/mcp", nil)
			del.Header.Set("Mcp-Session-Id", r.Header.Get("Mcp-Session-Id"))
			h.ServeHTTP(httptest.NewRecorder(), del)
			restarted, h = true, gosdkserver.HTTPHandler(versions)
		}
		cur := h
		mu.Unlock()
		cur.ServeHTTP(w, r)
	}))
	defer srv.Close()
	r := ok(t, cli(t, "-v", "--url", srv.URL+"/mcp", "tools", "list", "-o", "text"))
	contains(t, "tools list", r.stdout, "ask", "count")
	contains(t, "stderr", r.stderr, "the server ended the session", "new session started")
}

// --protocol modern against a server that speaks only the legacy era over
// Streamable HTTP ends with the message stdio gives (exit 3, kind
// protocol, what to do), whether the server answers server/discover as the
// TypeScript SDK's does (400 with a -32000 "Server not initialized" body)
// or with a bare 400.
func TestURLForcedModernAgainstLegacyServer(t *testing.T) {
	for name, answer := range map[string]func(http.ResponseWriter){
		"typescript sdk": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}`)
		},
		"bare 400": func(w http.ResponseWriter) {
			http.Error(w, "Bad Request: Mcp-Session-Id header is required", http.StatusBadRequest)
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				answer(w)
			}))
			defer srv.Close()
			e := exits(t, cli(t, "--url", srv.URL+"/mcp", "--protocol", "modern", "tools", "list"), exitConnection, "protocol")
			contains(t, "error", e.Message, "the server does not implement server/discover", "it speaks only the legacy era",
				"use --protocol legacy, or auto to let snodo-run choose")
		})
	}
	// The Go SDK's server configured for legacy versions answers -32022
	// listing them: the same message, naming the versions, which the
	// error's data lists for programs.
	rs := newRemoteServer(t, []string{"2025-11-25", "2025-06-18"}, "")
	e := exits(t, cli(t, "--url", rs.url(), "--protocol", "modern", "tools", "list"), exitConnection, "protocol")
	contains(t, "error", e.Message, "the server supports only the versions [2025-11-25 2025-06-18]", "it speaks only the legacy era",
		"use --protocol legacy, or auto to let snodo-run choose")
	contains(t, "data", string(e.Data), `"supported":["2025-11-25","2025-06-18"]`)
	if strings.Contains(e.Message, "Options.Era") {
		t.Errorf("the command line's error names the Go API: %s", e.Message)
	}
	// Over stdio, the same.
	e = exits(t, cli(t, "--protocol", "modern", "tools", "list", "--", demo, "--era", "legacy"), exitConnection, "protocol")
	contains(t, "error", e.Message, "the server does not implement server/discover", "use --protocol legacy, or auto to let snodo-run choose")
}
