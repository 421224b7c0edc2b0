package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const testRedirect = "http://127.0.0.1:9/callback"

// newTestClient returns a client authorizing through tr over a dedicated
// transport whose idle connections are closed when the test ends.
func newTestClient(t *testing.T, cfg Config) (*http.Client, *Transport) {
	t.Helper()
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	if cfg.Authorizer == nil && cfg.GrantType != GrantClientCredentials {
		cfg.Authorizer = HeadlessAuthorizer{Client: &http.Client{Transport: base}}
	}
	if cfg.RedirectURL == "" && cfg.GrantType != GrantClientCredentials {
		cfg.RedirectURL = testRedirect
	}
	tr, err := NewTransport(base, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: tr}, tr
}

// post sends body to u and returns the status and the response body.
func post(t *testing.T, c *http.Client, u, body string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func mustOK(t *testing.T, c *http.Client, u, body string) {
	t.Helper()
	status, got, err := post(t, c, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if status != 200 || got != body {
		t.Fatalf("got %d %q, want 200 %q", status, got, body)
	}
}

// The default path: PRM from the WWW-Authenticate header, RFC 8414 metadata
// at the root, Dynamic Client Registration, PKCE checked by the server, the
// resource parameter in both requests, and the request replayed with the
// token.
func TestAuthorizeWithHeaderPRMAndRegistration(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	c, _ := newTestClient(t, Config{})

	mustOK(t, c, rs.url(), `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)

	if rs.requested("/.well-known/oauth-protected-resource") {
		t.Error("root PRM requested although the header named the path-based one")
	}
	if as.count("reg") != 1 || as.count("auth") != 1 || as.count("token") != 1 {
		t.Errorf("registrations, authorizations, token requests = %d, %d, %d; want 1 each", as.count("reg"), as.count("auth"), as.count("token"))
	}
	a, tok := as.lastAuth(), as.lastToken()
	if a.Get("resource") != rs.url() || tok.Get("resource") != rs.url() {
		t.Errorf("resource in authorization %q and token request %q, want %q", a.Get("resource"), tok.Get("resource"), rs.url())
	}
	if a.Get("redirect_uri") != testRedirect || a.Get("client_id") != "dcr-client-1" {
		t.Errorf("authorization request %v", a)
	}
	if len(as.regMethods) != 1 || as.regMethods[0] != "none" {
		t.Errorf("registration asked for %v, want a public client", as.regMethods)
	}
	if a.Has("scope") {
		t.Errorf("scope %q sent although neither the challenge nor PRM named one", a.Get("scope"))
	}
	if tok.Has("client_secret") || tok.Has("basic_user") {
		t.Errorf("public client sent a secret: %v", tok)
	}
	// The next request reuses the token: no new flow.
	mustOK(t, c, rs.url(), "second")
	if as.count("auth") != 1 {
		t.Errorf("second request started another authorization")
	}
	if got := rs.auths[len(rs.auths)-1]; !strings.HasPrefix(got, "Bearer at-") {
		t.Errorf("Authorization header %q", got)
	}
}

// PRM well-known fallbacks: path-based first, then the root.
func TestResourceMetadataWellKnownFallbacks(t *testing.T) {
	for _, prm := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		t.Run(prm, func(t *testing.T) {
			as := newFakeAS(t)
			rs := newFakeRS(t, as)
			rs.prmInHeader = false
			rs.prmPath = prm
			c, _ := newTestClient(t, Config{})
			mustOK(t, c, rs.url(), "x")
			if !rs.requested("/.well-known/oauth-protected-resource/mcp") {
				t.Error("path-based PRM not tried")
			}
			wantRoot := prm == "/.well-known/oauth-protected-resource"
			if rs.requested("/.well-known/oauth-protected-resource") != wantRoot {
				t.Errorf("root PRM requested = %v, want %v", !wantRoot, wantRoot)
			}
			if got := as.lastAuth().Get("resource"); wantRoot && got != rs.srv.URL {
				t.Errorf("resource %q, want the root PRM's %q", got, rs.srv.URL)
			}
		})
	}
}

// Authorization server metadata discovery tries the URIs in the order of
// MCP "Authorization Server Metadata Discovery".
func TestServerMetadataDiscoveryOrder(t *testing.T) {
	for _, tc := range []struct {
		prefix, at string
		tried      []string
	}{
		{"", "/.well-known/oauth-authorization-server", []string{"/.well-known/oauth-authorization-server"}},
		{"", "/.well-known/openid-configuration", []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"}},
		{"/tenant1", "/.well-known/oauth-authorization-server/tenant1", []string{"/.well-known/oauth-authorization-server/tenant1"}},
		{"/tenant1", "/.well-known/openid-configuration/tenant1", []string{"/.well-known/oauth-authorization-server/tenant1", "/.well-known/openid-configuration/tenant1"}},
		{"/tenant1", "/tenant1/.well-known/openid-configuration", []string{"/.well-known/oauth-authorization-server/tenant1", "/.well-known/openid-configuration/tenant1", "/tenant1/.well-known/openid-configuration"}},
	} {
		t.Run(tc.at, func(t *testing.T) {
			as := newFakeAS(t)
			as.prefix, as.metadataPath = tc.prefix, tc.at
			rs := newFakeRS(t, as)
			c, _ := newTestClient(t, Config{})
			mustOK(t, c, rs.url(), "x")
			as.mu.Lock()
			got := slices.Clone(as.paths[:len(tc.tried)])
			as.mu.Unlock()
			if !slices.Equal(got, tc.tried) {
				t.Errorf("metadata requests %q, want %q", got, tc.tried)
			}
		})
	}
}

func TestMetadataIssuerMismatchRefused(t *testing.T) {
	as := newFakeAS(t)
	as.issuerOverride = "https://honest.example"
	rs := newFakeRS(t, as)
	c, _ := newTestClient(t, Config{})
	_, _, err := post(t, c, rs.url(), "x")
	if !errors.Is(err, ErrIssuerMismatch) {
		t.Fatalf("err = %v, want ErrIssuerMismatch", err)
	}
	if as.count("reg")+as.count("auth") != 0 {
		t.Error("client went on with metadata whose issuer differs")
	}
}

func TestPKCEUnsupportedRefused(t *testing.T) {
	as := newFakeAS(t)
	as.noPKCE = true
	rs := newFakeRS(t, as)
	c, _ := newTestClient(t, Config{})
	_, _, err := post(t, c, rs.url(), "x")
	if !errors.Is(err, ErrPKCEUnsupported) {
		t.Fatalf("err = %v, want ErrPKCEUnsupported", err)
	}
	if as.count("auth") != 0 {
		t.Error("authorization request sent without PKCE support")
	}
}

func TestPreRegisteredClientUsesBasicAuth(t *testing.T) {
	as := newFakeAS(t)
	as.noRegistration = true
	as.authMethods = []string{"client_secret_basic"}
	as.preID, as.preSec = "pre-client", "pre:secret"
	rs := newFakeRS(t, as)
	c, _ := newTestClient(t, Config{ClientID: "pre-client", ClientSecret: "pre:secret"})
	mustOK(t, c, rs.url(), "x")
	if as.count("reg") != 0 {
		t.Error("pre-registered client registered dynamically")
	}
	if got := as.lastAuth().Get("client_id"); got != "pre-client" {
		t.Errorf("client_id %q", got)
	}
}

func TestNoRegistrationPossible(t *testing.T) {
	as := newFakeAS(t)
	as.noRegistration = true
	rs := newFakeRS(t, as)
	c, _ := newTestClient(t, Config{})
	if _, _, err := post(t, c, rs.url(), "x"); !errors.Is(err, ErrNoClient) {
		t.Fatalf("err = %v, want ErrNoClient", err)
	}
}

func TestClientSecretPostFromRegistration(t *testing.T) {
	as := newFakeAS(t)
	as.authMethods = []string{"client_secret_post"}
	as.regSecret, as.regMethod = "s3cret", "client_secret_post"
	rs := newFakeRS(t, as)
	c, _ := newTestClient(t, Config{})
	mustOK(t, c, rs.url(), "x")
	if tok := as.lastToken(); tok.Get("client_secret") != "s3cret" || tok.Has("basic_user") {
		t.Errorf("token request %v, want client_secret_post", tok)
	}
	if len(as.regMethods) != 1 || as.regMethods[0] != "client_secret_post" {
		t.Errorf("registration asked for %v, want client_secret_post, the one method the server takes", as.regMethods)
	}
}

func TestClientIDMetadataDocument(t *testing.T) {
	const cimd = "https://conformance-test.local/client-metadata.json"
	as := newFakeAS(t)
	as.cimd = true
	rs := newFakeRS(t, as)
	c, _ := newTestClient(t, Config{ClientIDMetadataURL: cimd})
	mustOK(t, c, rs.url(), "x")
	if as.count("reg") != 0 || as.lastAuth().Get("client_id") != cimd {
		t.Errorf("registrations %d, client_id %q; want 0 and the metadata URL", as.count("reg"), as.lastAuth().Get("client_id"))
	}
}

// tamper wraps the headless authorizer and changes its response.
func tamper(f func(*AuthorizationResponse)) Authorizer {
	return AuthorizerFunc(func(ctx context.Context, req AuthorizationRequest) (*AuthorizationResponse, error) {
		base := &http.Transport{}
		defer base.CloseIdleConnections()
		r, err := HeadlessAuthorizer{Client: &http.Client{Transport: base}}.Authorize(ctx, req)
		if err == nil {
			f(r)
		}
		return r, err
	})
}

func TestAuthorizationResponseChecks(t *testing.T) {
	for _, tc := range []struct {
		name         string
		issSupported bool
		issRedirect  string
		change       func(*AuthorizationResponse)
		want         error
	}{
		{"state mismatch", true, "correct", func(r *AuthorizationResponse) { r.State = "forged" }, ErrStateMismatch},
		{"state missing", true, "correct", func(r *AuthorizationResponse) { r.State = "" }, ErrStateMismatch},
		{"wrong iss", true, "wrong", nil, ErrIssuerMismatch},
		{"unexpected wrong iss", false, "wrong", nil, ErrIssuerMismatch},
		{"advertised iss missing", true, "", nil, ErrIssuerMismatch},
		{"normalized iss", true, "correct", func(r *AuthorizationResponse) { r.Iss += "/" }, ErrIssuerMismatch},
		{"error response", true, "correct", func(r *AuthorizationResponse) { r.Code, r.Error = "", "access_denied" }, ErrAccessDenied},
		{"iss absent and not advertised", false, "", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := newFakeAS(t)
			as.issSupported, as.issInRedirect = tc.issSupported, tc.issRedirect
			rs := newFakeRS(t, as)
			cfg := Config{}
			if tc.change != nil {
				cfg.Authorizer = tamper(tc.change)
			}
			c, _ := newTestClient(t, cfg)
			_, _, err := post(t, c, rs.url(), "x")
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.want != nil && as.count("token") != 0 {
				t.Error("the code was sent to the token endpoint after a failed check")
			}
		})
	}
}

func TestResourceMismatchRefused(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	rs.prmResource = "https://evil.example.com/mcp"
	c, _ := newTestClient(t, Config{})
	if _, _, err := post(t, c, rs.url(), "x"); !errors.Is(err, ErrResourceMismatch) {
		t.Fatalf("err = %v, want ErrResourceMismatch", err)
	}
	if as.count("auth") != 0 {
		t.Error("authorized for a mismatched resource")
	}
}

func TestHTTPAuthorizationServerRefusedUnlessLoopback(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	rs.authServers = func() []string { return []string{"http://auth.example.com"} }
	c, _ := newTestClient(t, Config{})
	if _, _, err := post(t, c, rs.url(), "x"); !errors.Is(err, ErrInsecureURL) {
		t.Fatalf("err = %v, want ErrInsecureURL", err)
	}
}

func TestCheckEndpoint(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://as.example.com":          true,
		"https://as.example.com/t1":       true,
		"http://127.0.0.1:8080/x":         true,
		"http://localhost/x":              true,
		"http://[::1]:9/x":                true,
		"http://as.example.com":           false,
		"http://127.0.0.1.evil.com/":      false,
		"ftp://as.example.com":            false,
		"https://as.example.com/#frag":    false,
		"https://user:pw@as.example.com/": false,
		"as.example.com":                  false,
		"https://as.example.com/\x1b[2J":  false,
	} {
		if _, err := checkEndpoint("test", raw); (err == nil) != ok {
			t.Errorf("checkEndpoint(%q) = %v, want ok=%v", raw, err, ok)
		}
	}
}

func TestOversizeMetadataRefused(t *testing.T) {
	t.Run("protected resource", func(t *testing.T) {
		as := newFakeAS(t)
		rs := newFakeRS(t, as)
		rs.prmOversize = true
		c, _ := newTestClient(t, Config{})
		if _, _, err := post(t, c, rs.url(), "x"); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("err = %v, want ErrTooLarge", err)
		}
	})
	t.Run("authorization server", func(t *testing.T) {
		as := newFakeAS(t)
		as.oversize = true
		rs := newFakeRS(t, as)
		c, _ := newTestClient(t, Config{})
		if _, _, err := post(t, c, rs.url(), "x"); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("err = %v, want ErrTooLarge", err)
		}
	})
}

func TestScopeSelection(t *testing.T) {
	t.Run("from challenge", func(t *testing.T) {
		as := newFakeAS(t)
		rs := newFakeRS(t, as)
		rs.scopeInHeader = "mcp:basic"
		rs.prmScopes = []string{"mcp:other"}
		c, _ := newTestClient(t, Config{})
		mustOK(t, c, rs.url(), "x")
		if got := as.lastAuth().Get("scope"); got != "mcp:basic" {
			t.Errorf("scope %q, want the challenge's", got)
		}
	})
	t.Run("from scopes_supported", func(t *testing.T) {
		as := newFakeAS(t)
		rs := newFakeRS(t, as)
		rs.prmScopes = []string{"mcp:basic", "mcp:read"}
		c, _ := newTestClient(t, Config{})
		mustOK(t, c, rs.url(), "x")
		if got := as.lastAuth().Get("scope"); got != "mcp:basic mcp:read" {
			t.Errorf("scope %q, want all of scopes_supported", got)
		}
	})
	t.Run("offline_access when the server offers it", func(t *testing.T) {
		as := newFakeAS(t)
		as.scopesSupported = []string{"mcp:basic", "offline_access"}
		rs := newFakeRS(t, as)
		rs.scopeInHeader = "mcp:basic"
		c, _ := newTestClient(t, Config{})
		mustOK(t, c, rs.url(), "x")
		if got := as.lastAuth().Get("scope"); got != "mcp:basic offline_access" {
			t.Errorf("scope %q", got)
		}
	})
}

// A 403 insufficient_scope asks for the union of the scopes requested before
// and the challenged ones; a 403 for scopes already requested is returned to
// the caller without another authorization.
func TestStepUpAuthorization(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	rs.scopeInHeader = "mcp:basic"
	rs.need = func(r *http.Request) []string {
		switch r.Header.Get("X-Op") {
		case "write":
			return []string{"mcp:write"}
		case "admin":
			return []string{"mcp:admin"}
		}
		return []string{"mcp:basic"}
	}
	c, _ := newTestClient(t, Config{})
	mustOK(t, c, rs.url(), "read")

	req, _ := http.NewRequest(http.MethodPost, rs.url(), strings.NewReader("write"))
	req.Header.Set("X-Op", "write")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("step-up request: status %d", resp.StatusCode)
	}
	if got := as.lastAuth().Get("scope"); got != "mcp:basic mcp:write" {
		t.Errorf("step-up scope %q, want the union", got)
	}

	// The server keeps refusing: at most one more authorization.
	rs.need = func(*http.Request) []string { return []string{"mcp:admin"} }
	as.mu.Lock()
	as.deny = []string{"mcp:admin"}
	as.mu.Unlock()
	before := as.count("auth")
	for range 3 {
		status, _, err := post(t, c, rs.url(), "admin")
		if err != nil {
			t.Fatal(err)
		}
		if status != 403 {
			t.Fatalf("status %d, want the 403 back", status)
		}
	}
	if n := as.count("auth") - before; n != 1 {
		t.Errorf("%d authorizations for a scope that is never granted, want 1", n)
	}
}

func TestConcurrentUnauthorizedRequestsShareOneFlow(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	c, _ := newTestClient(t, Config{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			body := fmt.Sprint("req-", i)
			status, got, err := post(t, c, rs.url(), body)
			if err == nil && (status != 200 || got != body) {
				err = fmt.Errorf("got %d %q", status, got)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if as.count("auth") != 1 || as.count("reg") != 1 {
		t.Errorf("%d authorizations and %d registrations, want 1 each", as.count("auth"), as.count("reg"))
	}
}

// A request sent before an authorization completed, and refused after it,
// is retried with the new token instead of authorizing again.
func TestLateUnauthorizedUsesNewGrant(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	arrived, gate := make(chan struct{}), make(chan struct{})
	var once sync.Once
	rs.hold = func(body string) {
		if body == "late" {
			once.Do(func() { close(arrived); <-gate })
		}
	}
	c, _ := newTestClient(t, Config{})
	late := make(chan error, 1)
	go func() {
		status, _, err := post(t, c, rs.url(), "late")
		if err == nil && status != 200 {
			err = fmt.Errorf("status %d", status)
		}
		late <- err
	}()
	<-arrived
	mustOK(t, c, rs.url(), "first")
	close(gate)
	if err := <-late; err != nil {
		t.Fatal(err)
	}
	if as.count("auth") != 1 {
		t.Errorf("%d authorizations, want 1", as.count("auth"))
	}
}

func TestNonReplayableBody(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	c, _ := newTestClient(t, Config{})
	req, _ := http.NewRequest(http.MethodPost, rs.url(), io.NopCloser(strings.NewReader("once")))
	if req.GetBody != nil {
		t.Fatal("test request is replayable")
	}
	_, err := c.Do(req)
	if !errors.Is(err, ErrBodyNotReplayable) {
		t.Fatalf("err = %v, want ErrBodyNotReplayable", err)
	}
	// The authorization was obtained: sending again works without a new flow.
	mustOK(t, c, rs.url(), "again")
	if as.count("auth") != 1 {
		t.Errorf("%d authorizations, want 1", as.count("auth"))
	}
}

func TestRefresh(t *testing.T) {
	t.Run("expired token", func(t *testing.T) {
		as := newFakeAS(t)
		as.expiresIn = 3600
		rs := newFakeRS(t, as)
		c, tr := newTestClient(t, Config{})
		mustOK(t, c, rs.url(), "x")
		tr.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
		mustOK(t, c, rs.url(), "y")
		tok := as.lastToken()
		if tok.Get("grant_type") != "refresh_token" || tok.Get("resource") != rs.url() || tok.Get("client_id") != "dcr-client-1" {
			t.Errorf("refresh request %v", tok)
		}
		if as.count("auth") != 1 {
			t.Error("expired token led to a new authorization instead of a refresh")
		}
	})
	t.Run("rejected token", func(t *testing.T) {
		as := newFakeAS(t)
		rs := newFakeRS(t, as)
		c, _ := newTestClient(t, Config{})
		mustOK(t, c, rs.url(), "x")
		as.revoke(strings.TrimPrefix(rs.auths[len(rs.auths)-1], "Bearer "))
		mustOK(t, c, rs.url(), "y")
		if as.lastToken().Get("grant_type") != "refresh_token" || as.count("auth") != 1 {
			t.Errorf("rejected token: last grant %q, %d authorizations", as.lastToken().Get("grant_type"), as.count("auth"))
		}
	})
}

func TestClientCredentials(t *testing.T) {
	as := newFakeAS(t)
	as.authMethods = []string{"client_secret_basic"}
	rs := newFakeRS(t, as)
	c, _ := newTestClient(t, Config{GrantType: GrantClientCredentials, ClientID: "svc", ClientSecret: "pw"})
	mustOK(t, c, rs.url(), "x")
	tok := as.lastToken()
	if tok.Get("grant_type") != "client_credentials" || tok.Get("basic_user") != "svc" || tok.Get("resource") != rs.url() {
		t.Errorf("token request %v", tok)
	}
	if as.count("auth") != 0 {
		t.Error("client_credentials went through the authorization endpoint")
	}
}

// A grant from another authorization server is not reused: its client is
// registered anew with the new server.
func TestAuthorizationServerMigration(t *testing.T) {
	as1, as2 := newFakeAS(t), newFakeAS(t)
	rs := newFakeRS(t, as1)
	current := as1
	rs.authServers = func() []string { return []string{current.issuer()} }
	c, _ := newTestClient(t, Config{})
	mustOK(t, c, rs.url(), "x")
	current, rs.as = as2, as2
	mustOK(t, c, rs.url(), "y")
	if as2.count("reg") != 1 || as2.lastAuth().Get("client_id") != "dcr-client-1" {
		t.Errorf("as2: %d registrations", as2.count("reg"))
	}
	if as2.lastToken().Has("refresh_token") {
		t.Error("as1's refresh token was sent to as2")
	}
}

func TestTokenErrorIsBoundedAndEscaped(t *testing.T) {
	e := tokenError("https://as.example/token?secret=1", &Error{})
	if strings.Contains(e.Error(), "secret=1") {
		t.Errorf("query in error: %v", e)
	}
	long := strings.Repeat("\x1b[31mA", 10000)
	msg := (&Error{Op: "token request", Code: clean(long), Description: clean(long)}).Error()
	if len(msg) > 4*maxErrorText+100 || strings.ContainsRune(msg, 0x1b) {
		t.Errorf("error not bounded or escaped: %d bytes", len(msg))
	}
}

func TestConfigValidation(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no authorizer":        {RedirectURL: testRedirect},
		"no redirect":          {Authorizer: HeadlessAuthorizer{}},
		"http redirect":        {Authorizer: HeadlessAuthorizer{}, RedirectURL: "http://example.com/cb"},
		"cc without secret":    {GrantType: GrantClientCredentials, ClientID: "x"},
		"unknown grant":        {GrantType: "password"},
		"secret without id":    {Authorizer: HeadlessAuthorizer{}, RedirectURL: testRedirect, ClientSecret: "s"},
		"http metadata URL":    {Authorizer: HeadlessAuthorizer{}, RedirectURL: testRedirect, ClientIDMetadataURL: "http://x.example/c.json"},
		"metadata URL no path": {Authorizer: HeadlessAuthorizer{}, RedirectURL: testRedirect, ClientIDMetadataURL: "https://x.example"},
		"bad scope":            {Authorizer: HeadlessAuthorizer{}, RedirectURL: testRedirect, Scopes: []string{"a b"}},
	} {
		if _, err := NewTransport(nil, cfg); err == nil {
			t.Errorf("%s: NewTransport accepted %+v", name, cfg)
		}
	}
}

// The token goes only to the server it was obtained for.
func TestTokenNotSentToOtherServers(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	other := newFakeRS(t, as)
	other.prmPath = ""
	c, _ := newTestClient(t, Config{})
	mustOK(t, c, rs.url(), "x")
	req, _ := http.NewRequest(http.MethodGet, other.srv.URL+"/elsewhere", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	other.mu.Lock()
	defer other.mu.Unlock()
	if len(other.auths) != 1 || other.auths[0] != "" {
		t.Errorf("token sent to another server: %q", other.auths)
	}
}

// A 2025-03-26 server has no Protected Resource Metadata: its origin is the
// authorization server.
func TestNoResourceMetadataFallsBackToServerOrigin(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	rs.prmPath, rs.prmInHeader = "", false
	as.origin = rs.srv.URL
	c, _ := newTestClient(t, Config{})
	mustOK(t, c, rs.url(), "x")
	if got := as.lastAuth().Get("resource"); got != rs.url() {
		t.Errorf("resource %q, want the server URL %q", got, rs.url())
	}
}

// A resource_metadata URL from the challenge that has no document is an
// error, not a reason to guess.
func TestChallengeResourceMetadataNotFound(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	rs.prmHeaderPath = "/missing"
	c, _ := newTestClient(t, Config{})
	if _, _, err := post(t, c, rs.url(), "x"); !errors.Is(err, ErrNoMetadata) {
		t.Fatalf("err = %v, want ErrNoMetadata", err)
	}
}

// A registration that returns a secret without naming a method, at a server
// whose token endpoint takes only public clients, sends no secret.
func TestPublicClientSendsNoSecret(t *testing.T) {
	as := newFakeAS(t)
	as.regSecret = "unused-secret"
	rs := newFakeRS(t, as)
	c, _ := newTestClient(t, Config{})
	mustOK(t, c, rs.url(), "x")
	if tok := as.lastToken(); tok.Has("client_secret") || tok.Has("basic_user") {
		t.Errorf("token request %v carries a secret", tok)
	}
}

func TestChooseAuthMethod(t *testing.T) {
	for _, tc := range []struct {
		registered string
		secret     bool
		supported  []string
		want       string
	}{
		{"", false, nil, authNone},
		{"", true, nil, authBasic},
		{"", true, []string{"client_secret_post", "client_secret_basic"}, authBasic},
		{"", true, []string{"client_secret_post"}, authPost},
		{"", true, []string{"none"}, authNone},
		{"client_secret_post", true, []string{"client_secret_basic"}, authPost},
		{"private_key_jwt", true, nil, ""},
		{"client_secret_basic", false, nil, ""},
		{"", true, []string{"private_key_jwt"}, ""},
	} {
		got, err := chooseAuthMethod(tc.registered, tc.secret, tc.supported)
		if got != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("chooseAuthMethod(%q, %v, %q) = %q, %v; want %q", tc.registered, tc.secret, tc.supported, got, err, tc.want)
		}
	}
}

// A token obtained with a Client ID Metadata Document URL is refreshed as
// that public client.
func TestRefreshClientIDMetadataDocumentClient(t *testing.T) {
	const cimd = "https://conformance-test.local/client-metadata.json"
	as := newFakeAS(t)
	as.cimd = true
	as.expiresIn = 3600
	rs := newFakeRS(t, as)
	c, tr := newTestClient(t, Config{ClientIDMetadataURL: cimd})
	mustOK(t, c, rs.url(), "x")
	tr.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	mustOK(t, c, rs.url(), "y")
	if tok := as.lastToken(); tok.Get("grant_type") != "refresh_token" || tok.Get("client_id") != cimd {
		t.Errorf("refresh request %v", tok)
	}
}

// A server that refuses the token it just asked for does not make the user
// authorize again on every request.
func TestFreshTokenRefusedDoesNotLoop(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	c, _ := newTestClient(t, Config{})
	rs.hold = func(string) { // every token is refused, and cannot be refreshed
		as.mu.Lock()
		clear(as.tokens)
		clear(as.refreshes)
		as.mu.Unlock()
	}
	for range 3 {
		status, _, err := post(t, c, rs.url(), "x")
		if err != nil {
			t.Fatal(err)
		}
		if status != http.StatusUnauthorized {
			t.Fatalf("status %d, want the 401 back", status)
		}
	}
	if n := as.count("auth"); n != 1 {
		t.Errorf("%d authorizations, want 1", n)
	}
}

// A server that answers 401 but publishes no metadata anywhere does not do
// OAuth: its 401 comes back as it was sent.
func TestUnauthorizedWithoutMetadataIsReturned(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	rs.prmPath, rs.prmInHeader = "", false // and the AS is elsewhere: no metadata at the origin
	c, _ := newTestClient(t, Config{})
	status, body, err := post(t, c, rs.url(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusUnauthorized || !strings.Contains(body, "unauthorized") {
		t.Errorf("got %d %q, want the server's 401", status, body)
	}
}

// Authorized: false before any grant, true once one is held (the
// trailing slash and case of the URL do not matter), false again when the
// token has expired and cannot be refreshed, and true from a store alone.
func TestAuthorized(t *testing.T) {
	as := newFakeAS(t)
	as.expiresIn = 3600
	rs := newFakeRS(t, as)
	store := &MemoryStore{}
	c, tr := newTestClient(t, Config{Store: store})
	ctx := context.Background()
	if ok, err := tr.Authorized(ctx, rs.url()); ok || err != nil {
		t.Fatalf("before any request: Authorized = %v, %v; want false", ok, err)
	}
	mustOK(t, c, rs.url(), "x")
	if ok, err := tr.Authorized(ctx, strings.ToUpper(rs.url()[:4])+rs.url()[4:]+"/"); !ok || err != nil {
		t.Fatalf("after the flow: Authorized = %v, %v; want true", ok, err)
	}
	if as.count("auth") != 1 {
		t.Fatalf("%d authorizations, want 1", as.count("auth"))
	}

	_, fresh := newTestClient(t, Config{Store: store})
	if ok, err := fresh.Authorized(ctx, rs.url()); !ok || err != nil {
		t.Errorf("from the store: Authorized = %v, %v; want true", ok, err)
	}

	_, other := newTestClient(t, Config{Store: store})
	other.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	as.mu.Lock()
	clear(as.refreshes) // the refresh token is refused
	as.mu.Unlock()
	if ok, err := other.Authorized(ctx, rs.url()); ok || err != nil {
		t.Errorf("expired, refresh refused: Authorized = %v, %v; want false", ok, err)
	}

	// An expired token without a refresh token: false.
	past := &MemoryStore{}
	if err := past.Save(ctx, rs.url(), &Grant{Server: rs.url(), AccessToken: "old", Expiry: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	_, expired := newTestClient(t, Config{Store: past})
	if ok, err := expired.Authorized(ctx, rs.url()); ok || err != nil {
		t.Errorf("expired without refresh token: Authorized = %v, %v; want false", ok, err)
	}

	if _, err := tr.Authorized(ctx, "ftp://example.com/mcp"); err == nil {
		t.Error("Authorized accepted an ftp URL")
	}
}
