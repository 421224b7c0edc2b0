package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/runner"
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
	var je *jsonrpc.Error
	if srv := a.settings.runner.Server; srv.Remote() {
		if hint := remoteHint(err, srv.URL); hint != nil {
			return hint
		}
	}
	switch {
	case errors.Is(err, runner.ErrConnectTimeout):
		return &cliError{code: exitTimeout, kind: "transport",
			err: fmt.Errorf("%w; give the server longer with --connect-timeout (now %v)", err, a.settings.runner.ConnectTimeout)}
	case errors.As(err, &je) && je.Kind == jsonrpc.KindServer && je.Code == jsonrpc.CodeMethodNotFound && forcedModern(a.settings.runner.Protocol):
		return &cliError{code: exitConnection, kind: "protocol",
			err: fmt.Errorf("the server does not implement server/discover (%w): it speaks only the legacy era, the initialize handshake (2024-11-05 … 2025-11-25), and --protocol %s allows only 2026-07-28; use --protocol legacy, or auto to let snodo-run choose", err, a.settings.runner.Protocol)}
	}
	return err
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
	d := 4*rc.ShutdownGrace + 5*time.Second
	if ct := rc.ConnectTimeout; ct > 0 {
		d = min(d, 2*rc.ShutdownGrace+ct)
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

// remoteHint explains a failure to reach or to be let in by a remote
// server, with what to do about it; nil when err is none of those.
func remoteHint(err error, url string) error {
	var (
		dnsErr  *net.DNSError
		certErr *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		record  tls.RecordHeaderError
		status  interface{ StatusCode() int }
	)
	switch {
	case errors.As(err, &status) && status.StatusCode() == http.StatusUnauthorized, statusIn(err, http.StatusUnauthorized):
		return &cliError{code: exitConnection, kind: "transport",
			err: fmt.Errorf("%w; the server requires authorization: pass --header 'Authorization: Bearer …' (or set headers in the config file)", err)}
	case errors.As(err, &status) && status.StatusCode() == http.StatusForbidden, statusIn(err, http.StatusForbidden):
		return &cliError{code: exitConnection, kind: "transport",
			err: fmt.Errorf("%w; the server refuses these credentials: check the --header values (a token's scope, its expiry)", err)}
	case errors.As(err, &dnsErr):
		return &cliError{code: exitConnection, kind: "transport",
			err: fmt.Errorf("%w; the host %s is not found: check the URL %s", err, dnsErr.Name, url)}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &cliError{code: exitConnection, kind: "transport",
			err: fmt.Errorf("%w; nothing listens there: check the URL %s (host, port) and that the server runs", err, url)}
	case errors.As(err, &certErr), errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid):
		return &cliError{code: exitConnection, kind: "transport",
			err: fmt.Errorf("%w; TLS: the server's certificate is not trusted for this host: check the URL's host name; for a private CA, add it to the system's trust store or point SSL_CERT_FILE at it", err)}
	case errors.As(err, &record):
		return &cliError{code: exitConnection, kind: "transport",
			err: fmt.Errorf("%w; TLS: the server did not answer TLS: the URL may need http:// rather than https://", err)}
	}
	return nil
}

// statusIn reports whether err's message reports an HTTP status code (as
// "401 Unauthorized", the net/http status text) for a transport error
// that does not expose the status.
func statusIn(err error, code int) bool {
	return strings.Contains(err.Error(), fmt.Sprintf("%d %s", code, http.StatusText(code)))
}
