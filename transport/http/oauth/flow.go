package oauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// discovery is what the flow learns about the MCP server and its
// authorization server.
type discovery struct {
	resource        string // RFC 8707 resource indicator
	scopesSupported []string
	issuer          string
	meta            *serverMetadata
}

// discover runs Protected Resource Metadata discovery, then authorization
// server metadata discovery.
func (t *Transport) discover(ctx context.Context, server *url.URL, fromChallenge string) (*discovery, error) {
	d := &discovery{}
	prm, err := fetchResourceMetadata(ctx, t.client, fromChallenge, server)
	switch {
	case err == nil:
		d.resource = prm.Resource
		d.scopesSupported = prm.ScopesSupported
		d.issuer = prm.AuthorizationServers[0]
		// RFC 9728 §7.6: the client chooses; prefer the server a
		// pre-registered client belongs to.
		if t.cfg.ClientIssuer != "" && slices.Contains(prm.AuthorizationServers, t.cfg.ClientIssuer) {
			d.issuer = t.cfg.ClientIssuer
		}
	case errors.Is(err, ErrNoMetadata) && fromChallenge == "":
		// 2025-03-26 servers have no Protected Resource Metadata: the MCP
		// server's origin is the authorization server.
		d.resource = canonicalResource(server)
		d.issuer = (&url.URL{Scheme: strings.ToLower(server.Scheme), Host: strings.ToLower(server.Host)}).String()
	default:
		return nil, err
	}
	if d.meta, err = fetchServerMetadata(ctx, t.client, d.issuer); err != nil {
		return nil, err
	}
	return d, nil
}

// authorize obtains a new grant for the MCP server at server, given the
// parameters of the Bearer challenge that asked for it and the grant the
// failing request used (nil if none).
func (t *Transport) authorize(ctx context.Context, key string, server *url.URL, ch map[string]string, old *Grant) (*Grant, error) {
	d, err := t.discover(ctx, server, ch["resource_metadata"])
	if err != nil {
		return nil, err
	}
	if old != nil && old.Issuer != d.issuer {
		// Client Registration, "Authorization Server Binding": credentials
		// from another authorization server are never reused.
		old = nil
	}
	if t.cfg.ClientID != "" && t.cfg.ClientIssuer != "" && t.cfg.ClientIssuer != d.issuer {
		return nil, fmt.Errorf("oauth: the MCP server uses authorization server %q, but the pre-registered client belongs to %q", clean(d.issuer), t.cfg.ClientIssuer)
	}

	// Scope Selection Strategy: the challenge's scope, else all of the
	// resource's scopes_supported; plus configured scopes and, on
	// re-authorization, every scope requested before (Step-Up Authorization
	// Flow).
	scopes := strings.Fields(ch["scope"])
	if len(scopes) == 0 {
		scopes = slices.Clone(d.scopesSupported)
	}
	scopes = union(scopes, t.cfg.Scopes)
	if old != nil {
		scopes = union(old.Scopes, scopes)
	}

	g := &Grant{Server: key, Resource: d.resource, Issuer: d.issuer, Scopes: scopes}
	if t.cfg.GrantType == GrantClientCredentials {
		g.ClientID = t.cfg.ClientID
		return t.clientCredentials(ctx, d, g)
	}

	// Refresh tokens (SEP-2207): ask for offline_access when the
	// authorization server offers it.
	if slices.Contains(d.meta.ScopesSupported, "offline_access") && !slices.Contains(scopes, "offline_access") {
		scopes = append(scopes, "offline_access")
	}
	// A token that was rejected may just be stale: try its refresh token
	// before asking the user again, unless more scope is needed.
	if old != nil && old.RefreshToken != "" && !isStepUp(ch) {
		if ng, err := t.refresh(ctx, d.meta, old); err == nil {
			return ng, nil
		}
	}

	if d.meta.AuthorizationEndpoint == "" {
		return nil, fmt.Errorf("oauth: authorization server %q has no authorization_endpoint", clean(d.issuer))
	}
	if !d.meta.supportsS256() {
		return nil, fmt.Errorf("%w: %q", ErrPKCEUnsupported, clean(d.issuer))
	}
	cl, err := t.resolveClient(ctx, d.meta, old)
	if err != nil {
		return nil, err
	}
	g.ClientID, g.Registered = cl.id, cl.registered
	if cl.registered {
		g.ClientSecret, g.AuthMethod, g.RedirectURL = cl.secret, cl.method, t.cfg.RedirectURL
	}
	method, err := chooseAuthMethod(cl.method, cl.secret != "", d.meta.TokenEndpointAuthMethodsSupported)
	if err != nil {
		return nil, err
	}
	secret := cl.secret
	if method == authNone {
		secret = "" // a public client sends no secret, even if it was given one
	}
	oc := &oauth2.Config{
		ClientID:     cl.id,
		ClientSecret: secret,
		Endpoint:     oauth2.Endpoint{AuthURL: d.meta.AuthorizationEndpoint, TokenURL: d.meta.TokenEndpoint, AuthStyle: authStyle(method)},
		RedirectURL:  t.cfg.RedirectURL,
		Scopes:       scopes,
	}
	state, err := randomString()
	if err != nil {
		return nil, err
	}
	// The verifier stays in this frame: it leaves the process only in the
	// token request.
	verifier := oauth2.GenerateVerifier()
	authURL := oc.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", d.resource))
	resp, err := t.cfg.Authorizer.Authorize(ctx, AuthorizationRequest{URL: authURL, RedirectURL: t.cfg.RedirectURL, State: state})
	if err != nil {
		return nil, fmt.Errorf("oauth: authorization: %w", err)
	}
	if resp == nil {
		return nil, errors.New("oauth: authorization: the authorizer returned no response")
	}
	if err := checkResponse(resp, state, d.issuer, d.meta.IssParameterSupported); err != nil {
		return nil, err
	}
	tok, err := oc.Exchange(t.oauthContext(ctx), resp.Code,
		oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", d.resource))
	if err != nil {
		return nil, tokenError(d.meta.TokenEndpoint, err)
	}
	if err := setToken(g, tok); err != nil {
		return nil, err
	}
	g.Scopes = scopes
	return g, nil
}

// isStepUp reports whether the challenge asks for more scope (RFC 6750 §3.1).
func isStepUp(ch map[string]string) bool { return ch["error"] == "insufficient_scope" }

// checkResponse validates an authorization response before its code is used:
// the issuer first (RFC 9207 §2.4; on a mismatch nothing else in the response
// is looked at, not even its error), then the state, then the error.
func checkResponse(r *AuthorizationResponse, state, issuer string, issSupported bool) error {
	switch {
	case r.Iss != "" && r.Iss != issuer:
		return fmt.Errorf("%w: authorization response came from %q, expected %q", ErrIssuerMismatch, clean(r.Iss), clean(issuer))
	case r.Iss == "" && issSupported:
		return fmt.Errorf("%w: authorization response has no iss but the server advertises it", ErrIssuerMismatch)
	}
	if r.State != state {
		return ErrStateMismatch
	}
	if r.Error != "" {
		return &Error{Op: "authorization", Code: clean(r.Error), Description: clean(r.ErrorDescription), Err: ErrAccessDenied}
	}
	if r.Code == "" {
		return errors.New("oauth: authorization response has no code")
	}
	return nil
}

// resolveClient returns the client identity to use with the authorization server,
// in the priority order of Client Registration: pre-registered, Client ID
// Metadata Document, a stored registration, Dynamic Client Registration.
func (t *Transport) resolveClient(ctx context.Context, m *serverMetadata, old *Grant) (*client, error) {
	if t.cfg.ClientID != "" {
		return &client{id: t.cfg.ClientID, secret: t.cfg.ClientSecret}, nil
	}
	if t.cfg.ClientIDMetadataURL != "" && m.ClientIDMetadataDocumentSupported {
		return &client{id: t.cfg.ClientIDMetadataURL, method: authNone}, nil
	}
	if old != nil && old.Registered && old.ClientID != "" && old.RedirectURL == t.cfg.RedirectURL {
		return &client{id: old.ClientID, secret: old.ClientSecret, method: old.AuthMethod, registered: true}, nil
	}
	if m.RegistrationEndpoint == "" {
		return nil, fmt.Errorf("%w: authorization server %q has no registration_endpoint; configure a client ID", ErrNoClient, clean(m.Issuer))
	}
	return register(ctx, t.client, m.RegistrationEndpoint, t.cfg.RedirectURL, t.cfg.ClientName, m.TokenEndpointAuthMethodsSupported)
}

// clientCredentials obtains a token with the client_credentials grant.
func (t *Transport) clientCredentials(ctx context.Context, d *discovery, g *Grant) (*Grant, error) {
	method, err := chooseAuthMethod("", true, d.meta.TokenEndpointAuthMethodsSupported)
	if err != nil {
		return nil, err
	}
	cc := &clientcredentials.Config{
		ClientID:       t.cfg.ClientID,
		ClientSecret:   t.cfg.ClientSecret,
		TokenURL:       d.meta.TokenEndpoint,
		Scopes:         g.Scopes,
		EndpointParams: url.Values{"resource": {d.resource}},
		AuthStyle:      authStyle(method),
	}
	tok, err := cc.Token(t.oauthContext(ctx))
	if err != nil {
		return nil, tokenError(d.meta.TokenEndpoint, err)
	}
	if err := setToken(g, tok); err != nil {
		return nil, err
	}
	return g, nil
}

// refresh exchanges old's refresh token for a new token at the token
// endpoint of m. The resource parameter is sent as on every token request
// (RFC 8707 §2), which x/oauth2's refresher does not do, so the request is
// made here.
func (t *Transport) refresh(ctx context.Context, m *serverMetadata, old *Grant) (*Grant, error) {
	id, secret, method := old.ClientID, old.ClientSecret, old.AuthMethod
	switch {
	case id == "":
		return nil, errors.New("oauth: refresh: no client ID")
	case old.Registered:
	case id == t.cfg.ClientID:
		secret, method = t.cfg.ClientSecret, ""
	default: // a Client ID Metadata Document URL: a public client
		secret, method = "", authNone
	}
	method, err := chooseAuthMethod(method, secret != "", m.TokenEndpointAuthMethodsSupported)
	if err != nil {
		return nil, err
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {old.RefreshToken}, "resource": {old.Resource}}
	tok, err := postToken(ctx, t.client, m.TokenEndpoint, form, id, secret, method)
	if err != nil {
		return nil, err
	}
	g := old.clone()
	if tok.RefreshToken == "" {
		tok.RefreshToken = old.RefreshToken // RFC 6749 §6: the old one stays valid
	}
	if err := setToken(g, tok); err != nil {
		return nil, err
	}
	return g, nil
}

// setToken copies tok into g after checking it is a usable bearer token.
func setToken(g *Grant, tok *oauth2.Token) error {
	if tok.AccessToken == "" || len(tok.AccessToken) > MaxMetadataBytes/4 || len(tok.RefreshToken) > MaxMetadataBytes/4 {
		return errors.New("oauth: token response has a missing or oversized token")
	}
	if !strings.EqualFold(tok.Type(), "Bearer") {
		return fmt.Errorf("oauth: token type %q is not supported (want Bearer)", clean(tok.Type()))
	}
	if strings.ContainsAny(tok.AccessToken, "\r\n\x00") {
		return errors.New("oauth: access token contains control characters")
	}
	g.AccessToken, g.RefreshToken, g.Expiry = tok.AccessToken, tok.RefreshToken, tok.Expiry
	return nil
}

// oauthContext makes x/oauth2 use the metadata client.
func (t *Transport) oauthContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, metadataClient(t.client))
}

func authStyle(method string) oauth2.AuthStyle {
	if method == authBasic {
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleInParams // client_secret_post, or none (no secret)
}

// tokenError turns an x/oauth2 error into an *Error without the raw body.
func tokenError(endpoint string, err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		e := &Error{Op: "token request", URL: redactURL(endpoint), Code: clean(re.ErrorCode), Description: clean(re.ErrorDescription)}
		if re.Response != nil {
			e.Status = re.Response.StatusCode
		}
		return e
	}
	return &Error{Op: "token request", URL: redactURL(endpoint), Err: errors.New(clean(err.Error()))}
}

// randomString returns 32 random bytes, base64url-encoded.
func randomString() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// union returns a followed by the elements of b not in a.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// expired reports whether g's access token has expired or will within skew.
func (g *Grant) expired(now time.Time) bool {
	const skew = 10 * time.Second
	return !g.Expiry.IsZero() && now.Add(skew).After(g.Expiry)
}
