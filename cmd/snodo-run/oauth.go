package main

import (
	"errors"
	"net/http"

	"github.com/snodo/snodo/runner"
	"github.com/snodo/snodo/transport/http/oauth"
)

// withOAuth gives a remote server for which no Authorization header is
// configured an HTTP client that answers a 401 with the MCP authorization
// flow (docs/AUTH.md): the authorization URL is printed on stderr (stdout
// carries only the command's output, such as -o json), the
// browser's redirect comes back to 127.0.0.1, and the grant is kept in
// snodo/oauth under the user's cache directory for the next run. A server
// that publishes no OAuth metadata gets its 401 back, as without OAuth.
// release closes the redirect listener and the client's idle connections.
func (a *app) withOAuth(cfg runner.Config) (_ runner.Config, release func(), err error) {
	srv := cfg.Server
	if !srv.Remote() || srv.HTTPClient != nil || srv.Header.Get("Authorization") != "" {
		return cfg, func() {}, nil
	}
	var store oauth.TokenStore
	if fs, err := oauth.NewFileStore(""); err == nil {
		store = fs
	} // else no cache directory (no $HOME): grants last for this run only
	la, err := oauth.NewLoopbackAuthorizer(oauth.LoopbackOptions{Out: a.stderr})
	if err != nil {
		return cfg, nil, configErr("%v", err)
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	client, err := oauth.NewClient(&http.Client{Transport: base, CheckRedirect: keepMethod}, oauth.Config{
		Authorizer:  la,
		RedirectURL: la.RedirectURL(),
		Store:       store,
		ClientName:  "snodo-run",
	})
	if err != nil {
		la.Close()
		return cfg, nil, configErr("%v", err)
	}
	cfg.Server.HTTPClient = client
	return cfg, func() {
		la.Close()
		base.CloseIdleConnections()
	}, nil
}

// keepMethod follows only the redirects that keep the method and body (307,
// 308), as the HTTP transport's own client does.
func keepMethod(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if req.Method != via[0].Method {
		return http.ErrUseLastResponse
	}
	return nil
}
