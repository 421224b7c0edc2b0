package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/snodo/snodo/internal/redact"
	"github.com/snodo/snodo/runtime"
	mcphttp "github.com/snodo/snodo/transport/http"
	"github.com/snodo/snodo/transport/http/oauth"
)

// defaultAuthTimeout is the default of --auth-timeout.
const defaultAuthTimeout = 5 * time.Minute

// errAuthTimeout is the cause of an authorization that --auth-timeout ended.
var errAuthTimeout = errors.New("auth timeout")

// withOAuth gives a remote server for which no Authorization header is
// configured an HTTP client that answers a 401 with the MCP authorization
// flow (docs/AUTH.md): the authorization URL is printed on stderr (stdout
// carries only the command's output, such as -o json), the browser's
// redirect comes back to 127.0.0.1, and the grant is kept in snodo/oauth
// under the user's cache directory for the next run. A server that
// publishes no OAuth metadata gets its 401 back, as without OAuth.
//
// When no usable grant is held for the server, the authorization is
// obtained before connecting (authorizeFirst), under --auth-timeout, so
// that the time the user takes to log in does not count against
// --connect-timeout or the handshake's request timeouts.
//
// release closes the redirect listener and the client's idle connections.
func (a *app) withOAuth(cfg runtime.Config) (_ runtime.Config, release func(), err error) {
	srv := cfg.Server
	if !srv.Remote() || srv.HTTPClient != nil || srv.Header.Get("Authorization") != "" {
		return cfg, func() {}, nil
	}
	var store oauth.TokenStore
	if fs, err := oauth.NewFileStore(""); err == nil {
		store = fs
	} // else no cache directory (no $HOME): grants last for this run only
	authTimeout := a.settings.authTimeout
	la, err := oauth.NewLoopbackAuthorizer(oauth.LoopbackOptions{Out: a.stderr, Timeout: authTimeout})
	if err != nil {
		return cfg, nil, configErr("%v", err)
	}
	consent := &consentWatch{Authorizer: la}
	base := http.DefaultTransport.(*http.Transport).Clone()
	// The transport's redirect policy, for the ping of authorizeFirst too:
	// no redirect to another origin, which would carry the headers there.
	client, err := oauth.NewClient(&http.Client{Transport: base, CheckRedirect: mcphttp.CheckRedirect}, oauth.Config{
		Authorizer:  consent,
		RedirectURL: la.RedirectURL(),
		Store:       store,
		ClientName:  "snodo-run",
	})
	if err != nil {
		la.Close()
		return cfg, nil, configErr("%v", err)
	}
	release = func() {
		la.Close()
		base.CloseIdleConnections()
	}
	if err := a.authorizeFirst(client, srv.URL, srv.Header, consent); err != nil {
		release()
		return cfg, nil, err
	}
	cfg.Server.HTTPClient = client
	return cfg, release, nil
}

// consentWatch is an Authorizer that records whether the user was asked.
type consentWatch struct {
	oauth.Authorizer
	asked atomic.Bool
}

func (c *consentWatch) Authorize(ctx context.Context, req oauth.AuthorizationRequest) (*oauth.AuthorizationResponse, error) {
	c.asked.Store(true)
	return c.Authorizer.Authorize(ctx, req)
}

// preflightBody is the request authorizeFirst sends: a ping, which asks
// nothing of a server that needs no authorization.
var preflightBody = []byte(`{"jsonrpc":"2.0","id":0,"method":"ping"}`)

// authorizeFirst obtains the grant for the server at url before the
// handshake when none usable is held (none stored, or expired and not
// refreshable): it sends one ping through client under --auth-timeout
// alone. A server that asks for authorization answers it with 401, and the
// flow, the user's consent included, runs then. What the server answers is
// dropped: the handshake follows and reports any other failure as usual.
// An authorization that fails or runs out of time is the error.
func (a *app) authorizeFirst(client *http.Client, url string, header http.Header, consent *consentWatch) error {
	tr, ok := client.Transport.(*oauth.Transport)
	if !ok {
		return nil
	}
	timeout := a.settings.authTimeout
	ctx, cancel := context.WithTimeoutCause(a.ctx, timeout, errAuthTimeout)
	defer cancel()
	if held, err := tr.Authorized(ctx, url); held || err != nil {
		// An error (a grant file that cannot be read) shows when connecting.
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(preflightBody))
	if err != nil {
		return nil
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return nil
	}
	switch {
	case !consent.asked.Load():
		return nil // not an authorization failure: connecting reports it
	case errors.Is(context.Cause(ctx), errAuthTimeout):
		return &cliError{code: exitTimeout, kind: "transport",
			err: fmt.Errorf("authorizing with %s: not completed within %v; allow longer with --auth-timeout", redact.URL(url), timeout)}
	case a.ctx.Err() != nil:
		return context.Cause(a.ctx)
	}
	// The URL, and net/http's error naming it, are shown redacted.
	return &cliError{code: exitConnection, kind: "transport", err: fmt.Errorf("authorizing with %s: %w", redact.URL(url), redact.Error(err))}
}
