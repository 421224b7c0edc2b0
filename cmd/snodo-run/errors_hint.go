package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/redact"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/runtime"
	"github.com/snodo/snodo/transport"
)

// Errors that say what to do: each names the flag or setting to change.

// checkServerDir fails when the server's working directory does not exist
// or is not a directory, naming where it was set: the operating system
// would report it as the server's command missing.
func checkServerDir(cmd *cobra.Command, v *viper.Viper, s *settings, serverArgv []string) error {
	dir := s.runner.Server.Dir
	if dir == "" || (cmd.Parent() != nil && cmd.Parent().Name() == "handlers") {
		return nil
	}
	fi, err := os.Stat(dir)
	if err == nil && fi.IsDir() {
		return nil
	}
	what := "does not exist"
	if err == nil {
		what = "is not a directory"
	} else if !errors.Is(err, os.ErrNotExist) {
		what = "cannot be used: " + errors.Unwrap(err).Error()
	}
	var from string
	switch {
	case v.GetString(keyCd) != "" && cmd.Flags().Changed("cd"):
		from = "--cd"
	case v.GetString(keyCd) != "" && os.Getenv(envName(keyCd)) != "":
		from = envName(keyCd)
	case v.GetString(keyCd) != "":
		from = "cd in the config file " + s.configFile
	case v.GetString(keyServerName) != "" && len(serverArgv) == 0:
		from = "mcpServers." + v.GetString(keyServerName) + ".cwd in the config file " + s.configFile
	case os.Getenv(envName(keyServerCd)) != "":
		from = envName(keyServerCd)
	default:
		from = "server.cd in the config file " + s.configFile
	}
	return configErr("the server's working directory %s %s (set by %s)", dir, what, from)
}

// errNoServer is the error of a command that talks to a server when none
// is given.
func errNoServer() error {
	return usageErr("no server: give its command after --, or --url URL (a remote server), or --server NAME (mcpServers in the config file), or server.command or server.url in the config file")
}

// connectError makes a failure to connect say what to do about it.
func (a *app) connectError(err error) error {
	if srv := a.settings.runner.Server; srv.Remote() {
		if hint := remoteHint(err, srv.URL); hint != nil {
			return hint
		}
		var se *transport.StatusError
		if srv.Transport == runtime.TransportHTTP && errors.As(err, &se) && (se.Status == http.StatusBadRequest || se.Status == http.StatusNotFound || se.Status == http.StatusMethodNotAllowed) {
			return hinted(err, "the server refused the Streamable HTTP initialize; a server that speaks only the older HTTP+SSE transport (2024-11-05) answers so: drop --transport http (and type http of an mcpServers entry) to let snodo-run fall back to it, or give --transport sse")
		}
	}
	switch {
	case errors.Is(err, runtime.ErrConnectTimeout):
		return &cliError{code: exitTimeout, kind: "transport",
			err: fmt.Errorf("%w; give the server longer with --connect-timeout (now %v)", err, a.settings.runner.ConnectTimeout)}
	case forcedModern(a.settings.runner.Protocol) && refusedDiscover(err):
		const fix = "it speaks only the legacy era, the initialize handshake (2024-11-05 … 2025-11-25), and --protocol %s allows only 2026-07-28; use --protocol legacy, or auto to let snodo-run choose"
		e := fmt.Errorf("the server does not implement server/discover (%w): "+fix, err, a.settings.runner.Protocol)
		if legacy := listedLegacy(err); legacy != nil {
			e = &hintedError{msg: fmt.Sprintf("the server supports only the versions %v: "+fix, legacy, a.settings.runner.Protocol), err: err}
		}
		return &cliError{code: exitConnection, kind: "protocol", err: e}
	}
	return err
}

// listedLegacy is the server's list of versions when err is the -32022
// of a server that lists legacy versions Snodo speaks and no modern one
// (the Go SDK's server configured for legacy versions), else nil.
func listedLegacy(err error) []string {
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Kind != jsonrpc.KindProtocol || je.Code != jsonrpc.CodeUnsupportedProtocolVersion {
		return nil
	}
	var data struct {
		Supported []string `json:"supported"`
	}
	if json.Unmarshal(je.Data, &data) != nil || !slices.ContainsFunc(data.Supported, func(v string) bool {
		return slices.Contains(snodo.SupportedVersions(), v) && !strings.HasPrefix(v, "2026-")
	}) {
		return nil
	}
	return data.Supported
}

// refusedDiscover reports whether err, the failure of the server/discover
// that a modern-only connection starts with, is how a server that speaks
// only the legacy era answers it: over stdio -32601 (method not found);
// over Streamable HTTP, a server that wants initialize first answers 400,
// 404 or 405 (the Go SDK's), or a JSON-RPC error such as the TypeScript
// SDK's -32000 "Bad Request: Server not initialized" or the Python SDK's
// -32600 for a request without a session; or -32022 with only legacy
// versions in its list. These are the answers that the automatic era
// choice takes for a legacy server too.
func refusedDiscover(err error) bool {
	var je *jsonrpc.Error
	if listedLegacy(err) != nil {
		return true
	}
	if errors.As(err, &je) && je.Kind == jsonrpc.KindServer {
		switch je.Code {
		case jsonrpc.CodeMethodNotFound, jsonrpc.CodeConnectionClosed, jsonrpc.CodeInvalidRequest:
			return true
		}
		return false
	}
	var se *transport.StatusError
	return errors.As(err, &se) && (se.Status == http.StatusBadRequest || se.Status == http.StatusNotFound || se.Status == http.StatusMethodNotAllowed)
}

// forcedModern reports whether protocol allows the modern era only.
func forcedModern(protocol string) bool {
	return protocol == "modern" || strings.HasPrefix(protocol, "2026-")
}

// closeTimeout bounds stopping the runner: the shutdown grace steps (stdin
// closed, SIGTERM, SIGKILL) and what follows, and at most --connect-timeout
// beyond the two grace steps.
func (a *app) closeTimeout() time.Duration {
	rc := a.settings.runner
	return closeTimeout(rc.ShutdownGrace, rc.ConnectTimeout)
}

func closeTimeout(grace, connect time.Duration) time.Duration {
	d := 4*grace + 5*time.Second
	if connect > 0 {
		d = min(d, 2*grace+connect)
	}
	return d
}

// checkFlags refuses flag values that would otherwise be dropped without a
// word: an empty --handler.
func checkFlags(cmd *cobra.Command) error {
	if f := cmd.Flags().Lookup("handler"); f != nil && f.Changed {
		// The slice as given: GetStringArray reads [""] as none.
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, h := range sv.GetSlice() {
				if strings.TrimSpace(h) == "" {
					return usageErr("--handler wants [METHOD=]FILE.wasm, not an empty value")
				}
			}
		}
	}
	return nil
}

// interruptedError is the one message of a run a signal ended: the signal,
// and what became of the request in flight.
func interruptedError(ctx context.Context) error {
	what := "a signal"
	var sc signalCause
	if errors.As(context.Cause(ctx), &sc) {
		what = sc.sig.String()
	}
	return fmt.Errorf("interrupted (%s): the request in flight was cancelled on the server", what)
}

// interruptedCall is the error of handlers check or test when a signal
// stopped the module's call (no server is involved): the signal, its exit
// code, and how the call ended.
func interruptedCall(ctx context.Context, err error) error {
	code, what := exitInterrupt, "a signal"
	var sc signalCause
	if errors.As(context.Cause(ctx), &sc) {
		code, what = signalExitCode(sc.sig), sc.sig.String()
	}
	return &cliError{code: code, kind: "interrupted", err: fmt.Errorf("interrupted (%s): %w", what, err)}
}

// remoteHint explains a failure to reach or to be let in by a remote
// server, with what to do about it; nil when err is none of those. The URL
// is shown redacted: its query may hold a credential.
func remoteHint(err error, url string) error {
	url = redact.URL(url)
	var (
		dnsErr  *net.DNSError
		certErr *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		record  tls.RecordHeaderError
		status  *transport.StatusError
	)
	switch {
	case errors.As(err, &status) && status.Status == http.StatusUnauthorized:
		return hinted(err, "the server requires authorization: pass --header 'Authorization: Bearer …' (or set headers in the config file)")
	case errors.As(err, &status) && status.Status == http.StatusForbidden:
		return hinted(err, "the server refuses these credentials: check the --header values (a token's scope, its expiry)")
	case errors.As(err, &dnsErr):
		return hinted(err, "the host %s is not found: check the URL %s", dnsErr.Name, url)
	case errors.Is(err, syscall.ECONNREFUSED):
		return hinted(err, "nothing listens there: check the URL %s (host, port) and that the server runs", url)
	case errors.As(err, &certErr), errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid):
		return hinted(err, "TLS: the server's certificate is not trusted for this host: check the URL's host name; for a private CA, add it to the system's trust store or point SSL_CERT_FILE at it")
	case errors.As(err, &record), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return hinted(err, "TLS: the server did not answer TLS: the URL may need http:// rather than https://")
	}
	return nil
}

// hinted is a connection failure (exit 3) with what to do about it: the
// transport's message (which names the cause), then the hint.
func hinted(err error, format string, args ...any) error {
	msg := err.Error()
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		msg = je.Message
	}
	return &cliError{code: exitConnection, kind: "transport", err: &hintedError{msg: msg + "; " + fmt.Sprintf(format, args...), err: err}}
}

type hintedError struct {
	msg string
	err error
}

func (e *hintedError) Error() string { return e.msg }
func (e *hintedError) Unwrap() error { return e.err }
