package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// MaxMetadataBytes bounds every metadata document, registration response and
// token response read by this package.
const MaxMetadataBytes = 64 << 10

// maxRedirects bounds the redirects followed when fetching metadata.
const maxRedirects = 3

// protectedResource is the part of RFC 9728 Protected Resource Metadata that
// Snodo uses.
type protectedResource struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// serverMetadata is the part of RFC 8414 (or OpenID Connect Discovery)
// authorization server metadata that Snodo uses.
type serverMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	IssParameterSupported             bool     `json:"authorization_response_iss_parameter_supported"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported"`
}

// isLoopbackHost reports whether host (without port) names the loopback
// interface: "localhost", 127.0.0.0/8 or ::1.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkEndpoint parses raw and requires an absolute https URL, or http on a
// loopback host, with no fragment and no user information.
func checkEndpoint(what, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("oauth: %s %q is not a URL", what, clean(raw))
	}
	if u.Host == "" || u.Fragment != "" || u.User != nil || u.Opaque != "" {
		return nil, fmt.Errorf("oauth: %s %q must be an absolute URL without fragment or user information", what, clean(raw))
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !isLoopbackHost(u.Hostname()) {
			return nil, fmt.Errorf("%w: %s %q", ErrInsecureURL, what, clean(raw))
		}
	default:
		return nil, fmt.Errorf("%w: %s %q", ErrInsecureURL, what, clean(raw))
	}
	return u, nil
}

// metadataClient returns a copy of c that refuses redirects which downgrade
// from https or exceed maxRedirects, and, for a request that is not a GET
// (a token or registration request), a redirect to another origin: its
// body and Authorization header carry the client secret, the code and its
// verifier or the refresh token, which net/http would send there (it drops
// Authorization only for another host name, not for another port).
func metadataClient(c *http.Client) *http.Client {
	cc := *c
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("oauth: more than %d redirects", maxRedirects)
		}
		if _, err := checkEndpoint("redirect", req.URL.String()); err != nil {
			return err
		}
		if via[len(via)-1].URL.Scheme == "https" && req.URL.Scheme != "https" {
			return fmt.Errorf("%w: redirect from https to %s", ErrInsecureURL, req.URL.Scheme)
		}
		first := via[0].URL
		if via[0].Method != http.MethodGet && (!strings.EqualFold(first.Scheme, req.URL.Scheme) || !strings.EqualFold(hostPort(first), hostPort(req.URL))) {
			return fmt.Errorf("oauth: %s %q redirected to another origin, %q: not followed, so that the request's credentials are not sent there", via[0].Method, redactURL(first.String()), redactURL(req.URL.String()))
		}
		return nil
	}
	return &cc
}

// errNotFound marks a metadata URL that answered 404 (or another 4xx), so
// that the next candidate is tried.
var errNotFound = errors.New("not found")

// getJSON fetches raw with GET and decodes a JSON object of at most
// MaxMetadataBytes into v.
func getJSON(ctx context.Context, c *http.Client, op, raw string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return &Error{Op: op, URL: redactURL(raw), Err: err}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := metadataClient(c).Do(req)
	if err != nil {
		return &Error{Op: op, URL: redactURL(raw), Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return &Error{Op: op, URL: redactURL(raw), Status: resp.StatusCode, Err: errNotFound}
	}
	if resp.StatusCode != http.StatusOK {
		return &Error{Op: op, URL: redactURL(raw), Status: resp.StatusCode}
	}
	return decodeJSON(resp, op, raw, v)
}

// decodeJSON reads resp's body, bounded by MaxMetadataBytes, as JSON into v.
func decodeJSON(resp *http.Response, op, raw string, v any) error {
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return &Error{Op: op, URL: redactURL(raw), Status: resp.StatusCode,
				Err: fmt.Errorf("content type %q is not JSON", clean(ct))}
		}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxMetadataBytes+1))
	if err != nil {
		return &Error{Op: op, URL: redactURL(raw), Status: resp.StatusCode, Err: err}
	}
	if len(body) > MaxMetadataBytes {
		return &Error{Op: op, URL: redactURL(raw), Status: resp.StatusCode,
			Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, MaxMetadataBytes)}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return &Error{Op: op, URL: redactURL(raw), Status: resp.StatusCode,
			Err: fmt.Errorf("invalid JSON: %s", clean(err.Error()))}
	}
	return nil
}

// resourceMetadataURLs lists where Protected Resource Metadata is looked for
// (MCP authorization, "Protected Resource Metadata Discovery Requirements"):
// the challenge's resource_metadata if present, else the path-based then the
// root well-known URI.
func resourceMetadataURLs(fromChallenge string, server *url.URL) []string {
	if fromChallenge != "" {
		return []string{fromChallenge}
	}
	root := &url.URL{Scheme: server.Scheme, Host: server.Host, Path: "/.well-known/oauth-protected-resource"}
	var out []string
	if p := strings.TrimSuffix(server.EscapedPath(), "/"); p != "" {
		u := *root
		u.Path += server.Path
		u.Path = strings.TrimSuffix(u.Path, "/")
		out = append(out, u.String())
	}
	return append(out, root.String())
}

// fetchResourceMetadata finds and validates the Protected Resource Metadata
// of server. It returns ErrNoMetadata (wrapped) when no URL had any.
func fetchResourceMetadata(ctx context.Context, c *http.Client, fromChallenge string, server *url.URL) (*protectedResource, error) {
	if fromChallenge != "" {
		if _, err := checkEndpoint("resource_metadata", fromChallenge); err != nil {
			return nil, err
		}
	}
	var last error
	for _, u := range resourceMetadataURLs(fromChallenge, server) {
		var prm protectedResource
		err := getJSON(ctx, c, "protected resource metadata", u, &prm)
		if errors.Is(err, errNotFound) {
			last = err
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := prm.validate(server); err != nil {
			return nil, &Error{Op: "protected resource metadata", URL: redactURL(u), Err: err}
		}
		return &prm, nil
	}
	return nil, fmt.Errorf("%w: no protected resource metadata for %q: %w", ErrNoMetadata, redactURL(server.String()), last)
}

func (m *protectedResource) validate(server *url.URL) error {
	if m.Resource == "" {
		return errors.New("missing resource")
	}
	res, err := url.Parse(m.Resource)
	if err != nil || !covers(res, server) {
		return fmt.Errorf("%w: %q does not cover %q", ErrResourceMismatch, clean(m.Resource), redactURL(server.String()))
	}
	if len(m.AuthorizationServers) == 0 {
		return errors.New("no authorization_servers")
	}
	for _, as := range m.AuthorizationServers {
		if _, err := checkEndpoint("authorization server", as); err != nil {
			return err
		}
	}
	return nil
}

// covers reports whether the resource identifier res covers the MCP server
// URL: same scheme, host and port, and a path that is a prefix of the
// server's path on a segment boundary.
func covers(res, server *url.URL) bool {
	if !strings.EqualFold(res.Scheme, server.Scheme) || !strings.EqualFold(hostPort(res), hostPort(server)) {
		return false
	}
	if res.RawQuery != "" || res.Fragment != "" {
		return false
	}
	rp := strings.TrimSuffix(res.Path, "/")
	sp := strings.TrimSuffix(server.Path, "/")
	return rp == "" || sp == rp || strings.HasPrefix(sp, rp+"/")
}

// hostPort returns u's host with the scheme's default port made explicit.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// canonicalResource returns the canonical URI of the MCP server at u
// (MCP authorization, "Canonical Server URI"): lower-case scheme and host,
// no query, fragment or trailing slash.
func canonicalResource(u *url.URL) string {
	c := url.URL{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Host), Path: strings.TrimSuffix(u.Path, "/"), RawPath: strings.TrimSuffix(u.RawPath, "/")}
	return c.String()
}

// serverMetadataURLs lists the well-known URIs for issuer in the order of
// MCP "Authorization Server Metadata Discovery".
func serverMetadataURLs(issuer *url.URL) []string {
	base := url.URL{Scheme: issuer.Scheme, Host: issuer.Host}
	p := strings.TrimSuffix(issuer.Path, "/")
	at := func(path string) string { u := base; u.Path = path; return u.String() }
	if p == "" {
		return []string{
			at("/.well-known/oauth-authorization-server"),
			at("/.well-known/openid-configuration"),
		}
	}
	return []string{
		at("/.well-known/oauth-authorization-server" + p),
		at("/.well-known/openid-configuration" + p),
		at(p + "/.well-known/openid-configuration"),
	}
}

// fetchServerMetadata finds and validates the metadata of the authorization
// server identified by issuer.
func fetchServerMetadata(ctx context.Context, c *http.Client, issuer string) (*serverMetadata, error) {
	iu, err := checkEndpoint("authorization server", issuer)
	if err != nil {
		return nil, err
	}
	if iu.RawQuery != "" {
		return nil, fmt.Errorf("oauth: authorization server %q has a query", clean(issuer))
	}
	var last error
	for _, u := range serverMetadataURLs(iu) {
		var m serverMetadata
		err := getJSON(ctx, c, "authorization server metadata", u, &m)
		if errors.Is(err, errNotFound) {
			last = err
			continue
		}
		if err != nil {
			return nil, err
		}
		// RFC 8414 §3.3: the issuer must be identical to the identifier the
		// well-known URL was built from; otherwise the document is not used.
		if m.Issuer != issuer {
			return nil, &Error{Op: "authorization server metadata", URL: redactURL(u),
				Err: fmt.Errorf("%w: document says %q, expected %q", ErrIssuerMismatch, clean(m.Issuer), clean(issuer))}
		}
		if err := m.validate(); err != nil {
			return nil, &Error{Op: "authorization server metadata", URL: redactURL(u), Err: err}
		}
		return &m, nil
	}
	return nil, fmt.Errorf("%w: no authorization server metadata for %q: %w", ErrNoMetadata, clean(issuer), last)
}

func (m *serverMetadata) validate() error {
	if m.TokenEndpoint == "" {
		return errors.New("missing token_endpoint")
	}
	if _, err := checkEndpoint("token_endpoint", m.TokenEndpoint); err != nil {
		return err
	}
	if m.AuthorizationEndpoint != "" {
		if _, err := checkEndpoint("authorization_endpoint", m.AuthorizationEndpoint); err != nil {
			return err
		}
	}
	if m.RegistrationEndpoint != "" {
		if _, err := checkEndpoint("registration_endpoint", m.RegistrationEndpoint); err != nil {
			return err
		}
	}
	return nil
}

// supportsS256 reports whether PKCE with S256 is advertised; MCP clients must
// refuse to proceed otherwise (Security Considerations, "Authorization Code
// Protection").
func (m *serverMetadata) supportsS256() bool {
	return slices.Contains(m.CodeChallengeMethodsSupported, "S256")
}
