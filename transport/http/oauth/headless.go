package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// HeadlessAuthorizer is an Authorizer for authorization servers that
// approve without a person: it requests the authorization URL with GET and
// reads the authorization response from the Location of the redirect,
// without following it. The MCP conformance suite's authorization server
// answers this way.
//
// Note: never use it with an authorization server that expects a person
// to log in; it would only ever see the login page.
type HeadlessAuthorizer struct {
	// Client makes the request; nil means http.DefaultClient's transport.
	// Its redirect policy is not used.
	Client *http.Client
}

// Authorize implements Authorizer.
func (h HeadlessAuthorizer) Authorize(ctx context.Context, req AuthorizationRequest) (*AuthorizationResponse, error) {
	if _, err := checkEndpoint("authorization URL", req.URL); err != nil {
		return nil, err
	}
	c := http.Client{}
	if h.Client != nil {
		c = *h.Client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(r)
	if err != nil {
		return nil, &Error{Op: "authorization request", URL: redactURL(req.URL), Err: err}
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return nil, &Error{Op: "authorization request", URL: redactURL(req.URL), Status: resp.StatusCode, Err: errors.New("expected a redirect to the redirect URI")}
	}
	loc, err := resp.Location()
	if err != nil {
		return nil, &Error{Op: "authorization request", URL: redactURL(req.URL), Status: resp.StatusCode, Err: err}
	}
	if !sameEndpoint(loc, req.RedirectURL) {
		return nil, fmt.Errorf("oauth: authorization server redirected to %q, not to the redirect URI", redactURL(loc.String()))
	}
	return ResponseFromQuery(loc.Query()), nil
}

// sameEndpoint reports whether u is the redirect URI, ignoring its query.
func sameEndpoint(u *url.URL, redirect string) bool {
	r, err := url.Parse(redirect)
	if err != nil {
		return false
	}
	return strings.EqualFold(u.Scheme, r.Scheme) && strings.EqualFold(hostPort(u), hostPort(r)) && u.Path == r.Path
}
