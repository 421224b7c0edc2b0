package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
)

// Token endpoint client authentication methods Snodo can use (RFC 7591 §2).
const (
	authNone   = "none"
	authBasic  = "client_secret_basic"
	authPost   = "client_secret_post"
	maxIDBytes = 4 << 10
)

// client is the identity used with one authorization server.
type client struct {
	id, secret, method string
	registered         bool // obtained by Dynamic Client Registration
}

// registrationRequest is the RFC 7591 client metadata Snodo sends.
type registrationRequest struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	ApplicationType         string   `json:"application_type"`
}

type registrationResponse struct {
	ClientID                string `json:"client_id"`
	ClientSecret            string `json:"client_secret"`
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method"`
	Error                   string `json:"error"`
	ErrorDescription        string `json:"error_description"`
}

// register performs Dynamic Client Registration (RFC 7591).
func register(ctx context.Context, c *http.Client, endpoint, redirectURL, name string, supported []string) (*client, error) {
	const op = "client registration"
	// A public client (no secret) where the token endpoint takes one, else
	// a confidential one the way the token endpoint wants it.
	method := authNone
	if len(supported) > 0 && !slices.Contains(supported, authNone) {
		if slices.Contains(supported, authBasic) {
			method = authBasic
		} else if slices.Contains(supported, authPost) {
			method = authPost
		}
	}
	appType := "web"
	if u, err := url.Parse(redirectURL); err == nil && isLoopbackHost(u.Hostname()) {
		// Client Registration, "Application Type and Redirect URI
		// Constraints": loopback redirects belong to native applications.
		appType = "native"
	}
	body, err := json.Marshal(registrationRequest{
		RedirectURIs:            []string{redirectURL},
		ClientName:              name,
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: method,
		ApplicationType:         appType,
	})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &Error{Op: op, URL: redactURL(endpoint), Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := metadataClient(c).Do(req)
	if err != nil {
		return nil, &Error{Op: op, URL: redactURL(endpoint), Err: err}
	}
	defer resp.Body.Close()
	var r registrationResponse
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		e := &Error{Op: op, URL: redactURL(endpoint), Status: resp.StatusCode}
		if decodeJSON(resp, op, endpoint, &r) == nil {
			e.Code, e.Description = clean(r.Error), clean(r.ErrorDescription)
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, e
	}
	if err := decodeJSON(resp, op, endpoint, &r); err != nil {
		return nil, err
	}
	if r.ClientID == "" || len(r.ClientID) > maxIDBytes || len(r.ClientSecret) > maxIDBytes {
		return nil, &Error{Op: op, URL: redactURL(endpoint), Status: resp.StatusCode, Err: fmt.Errorf("missing or oversized client_id or client_secret")}
	}
	return &client{id: r.ClientID, secret: r.ClientSecret, method: r.TokenEndpointAuthMethod, registered: true}, nil
}

// chooseAuthMethod picks how to authenticate at the token endpoint: the
// method the registration names if any, else none for a client without a
// secret, else the first of client_secret_basic and client_secret_post the
// server supports (client_secret_basic when it does not say, RFC 8414 §2).
func chooseAuthMethod(registered string, hasSecret bool, supported []string) (string, error) {
	switch registered {
	case authNone, authBasic, authPost:
		if registered != authNone && !hasSecret {
			return "", fmt.Errorf("oauth: registration names %q but gave no client secret", registered)
		}
		return registered, nil
	case "":
	default:
		return "", fmt.Errorf("oauth: token endpoint authentication method %q is not supported", clean(registered))
	}
	if !hasSecret {
		return authNone, nil
	}
	if len(supported) == 0 {
		return authBasic, nil
	}
	for _, m := range []string{authBasic, authPost, authNone} {
		if slices.Contains(supported, m) {
			return m, nil
		}
	}
	return "", fmt.Errorf("oauth: the authorization server supports none of %q, %q, %q at its token endpoint", authBasic, authPost, authNone)
}
