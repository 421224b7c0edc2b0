package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/snodo/snodo/internal/redact"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	shttp "github.com/snodo/snodo/transport/http"
)

// CheckURL reports whether raw is a URL a remote server can have: absolute,
// http or https, with a host, and without user information (credentials in
// a URL end up in logs and error messages; send them as a header, such as
// Authorization, with Server.Header).
func CheckURL(raw string) error {
	// The URL is shown redacted: its query may hold a credential.
	shown := redact.URL(raw)
	if strings.TrimSpace(raw) != raw || raw == "" {
		return fmt.Errorf("server URL %q: not a URL", shown)
	}
	if !strings.Contains(raw, "://") {
		return fmt.Errorf("server URL %q: the scheme must be http or https, as in http://127.0.0.1:8080/mcp", shown)
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the URL; the cause is enough.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("server URL %q: %v", shown, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("server URL %q: the scheme must be http or https", shown)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("server URL %q: no host", shown)
	case u.User != nil:
		return fmt.Errorf("server URL %s: it holds credentials (user:password@); send them in a header instead, such as Authorization", shown)
	}
	return nil
}

// transportHeaders are the headers the Streamable HTTP transport sets
// itself, per request or per session: a configured value would contradict
// it.
var transportHeaders = []string{
	"Accept", "Content-Type", "Content-Length", "Transfer-Encoding", "Connection", "Host",
	"Mcp-Session-Id", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", "Last-Event-Id",
}

// CheckHeader reports whether a header may be sent to a remote server:
// name an HTTP token, value without control characters other than tab,
// and not one of the headers the transport sets itself (Accept,
// Content-Type, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name,
// Last-Event-ID, and the framing headers).
func CheckHeader(name, value string) error {
	if name == "" {
		return errors.New("header with an empty name")
	}
	for _, r := range name {
		if r > 0x7e || r <= 0x20 || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return fmt.Errorf("header name %q: not an HTTP token (letters, digits and !#$%%&'*+-.^_`|~ only)", name)
		}
	}
	for _, r := range value {
		if (r < 0x20 && r != '\t') || r == 0x7f {
			// The value is not shown: it may be a secret.
			return fmt.Errorf("header %s: the value holds a control character (line breaks are refused)", name)
		}
	}
	for _, h := range transportHeaders {
		if strings.EqualFold(name, h) {
			return fmt.Errorf("header %s is set by the HTTP transport itself and cannot be configured", http.CanonicalHeaderKey(name))
		}
	}
	return nil
}

// checkRemote checks a remote server's configuration.
func checkRemote(srv Server, protocol string) error {
	if srv.Command != "" || len(srv.Args) > 0 || len(srv.Env) > 0 || srv.Dir != "" {
		return errors.New("the server has both a URL and a command (or its args, env or working directory): give one or the other")
	}
	if err := CheckURL(srv.URL); err != nil {
		return err
	}
	switch srv.Transport {
	case TransportAuto, TransportHTTP:
	case TransportSSE:
		if modernProtocol(protocol) {
			return fmt.Errorf("the HTTP+SSE transport (2024-11-05) carries only the initialize handshake of the legacy era, not protocol %s: use Streamable HTTP, or protocol auto or legacy", protocol)
		}
	default:
		return fmt.Errorf("server transport must be http or sse (or empty: Streamable HTTP, falling back to HTTP+SSE), not %q", srv.Transport)
	}
	for name, values := range srv.Header {
		for _, v := range values {
			if err := CheckHeader(name, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// modernProtocol reports whether Config.Protocol asks for the 2026-07-28
// era, which only Streamable HTTP carries.
func modernProtocol(p string) bool {
	return p == "modern" || (p != "auto" && p != "legacy" && p >= "2026-07-28")
}

// httpConfig is the transport configuration of the remote server.
func (r *Runner) httpConfig() shttp.Config {
	return shttp.Config{
		URL:             r.cfg.Server.URL,
		HTTPClient:      r.cfg.Server.HTTPClient,
		Header:          r.cfg.Server.Header.Clone(),
		MaxMessageBytes: r.cfg.MaxLineBytes,
	}
}

// startRemote makes the Streamable HTTP transport of a remote server. No
// request is sent before the client connects. The HTTP+SSE transport is
// opened by connect, under its deadline: opening it is a request.
func (r *Runner) startRemote() error {
	if r.cfg.Server.Transport != TransportSSE {
		t, err := shttp.New(r.httpConfig())
		if err != nil {
			return &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeConnectionClosed,
				Message: fmt.Sprintf("cannot reach the server at %s", redact.URL(r.cfg.Server.URL)), Cause: err}
		}
		r.remote = t
	}
	// Header values are never logged: they are typically credentials.
	names := make([]string, 0, len(r.cfg.Server.Header))
	for name := range r.cfg.Server.Header {
		names = append(names, name)
	}
	slices.Sort(names)
	r.log.Debug("remote server", "url", redact.URL(r.cfg.Server.URL), "transport", cmp.Or(r.cfg.Server.Transport, "auto"), "headers", names)
	if len(names) > 0 && cleartext(r.cfg.Server.URL) {
		r.log.Warn("the configured headers go to the server unencrypted (http:// to a host that is not a loopback address): anyone on the way can read them; use https://", "url", redact.URL(r.cfg.Server.URL), "headers", names)
	}
	return nil
}

// dialSSE opens the HTTP+SSE transport of the remote server.
func (r *Runner) dialSSE(ctx context.Context) error {
	t, err := shttp.DialSSE(ctx, r.httpConfig())
	if err != nil {
		return err
	}
	r.remote = t
	r.log.Debug("HTTP+SSE stream open", "url", redact.URL(r.cfg.Server.URL), "endpoint", t.Endpoint())
	return nil
}

// sseFallback reports whether err, the failure of connecting over
// Streamable HTTP, is the answer of a server that speaks only HTTP+SSE:
// the initialize POST refused with 400, 404 or 405 without a JSON-RPC
// error body (basic/transports, "Backwards Compatibility"), with
// Server.Transport auto and a protocol the legacy era allows.
func (r *Runner) sseFallback(err error) (status int, ok bool) {
	if r.cfg.Server.Transport != TransportAuto || modernProtocol(r.cfg.Protocol) {
		return 0, false
	}
	if _, isHTTP := r.remote.(*shttp.Transport); !isHTTP {
		return 0, false
	}
	var se *transport.StatusError
	if !errors.As(err, &se) {
		return 0, false
	}
	switch se.Status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
		return se.Status, true
	}
	return 0, false
}

// cleartext reports whether a request to raw crosses the network
// unencrypted: http:// to a host other than localhost or a loopback
// address.
func cleartext(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// serverName names the server in messages: its command, or its URL
// redacted.
func (r *Runner) serverName() string {
	if r.cfg.Server.Remote() {
		return redact.URL(r.cfg.Server.URL)
	}
	return r.cfg.Server.Command
}
