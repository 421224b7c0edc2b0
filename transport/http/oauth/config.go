package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Grant types a [Config] can use.
const (
	// GrantAuthorizationCode is the authorization code grant with PKCE, on
	// behalf of a user whose consent an [Authorizer] obtains. The default.
	GrantAuthorizationCode = "authorization_code"
	// GrantClientCredentials is the client_credentials grant, for a client
	// acting on its own behalf with pre-registered credentials (the MCP
	// "oauth-client-credentials" extension). No user is involved.
	GrantClientCredentials = "client_credentials"
)

// Config configures OAuth authorization for one MCP server.
type Config struct {
	// GrantType is GrantAuthorizationCode (the default when empty) or
	// GrantClientCredentials.
	GrantType string

	// ClientID and ClientSecret are pre-registered client credentials. When
	// ClientID is set it is used with every authorization server, unless
	// ClientIssuer restricts it. ClientSecret is empty for public clients.
	ClientID     string
	ClientSecret string
	// ClientIssuer, if set, is the issuer the pre-registered client belongs
	// to; authorizing with another authorization server fails instead of
	// sending these credentials to it.
	ClientIssuer string

	// ClientIDMetadataURL is the https URL of this client's Client ID
	// Metadata Document. It is used as the client ID with authorization
	// servers that advertise client_id_metadata_document_supported.
	ClientIDMetadataURL string

	// ClientName is the client_name sent in Dynamic Client Registration
	// (default "Snodo").
	ClientName string

	// RedirectURL is the redirect URI of the authorization code grant; it
	// must be http on a loopback address or https. Required for
	// GrantAuthorizationCode (LoopbackAuthorizer.RedirectURL gives one).
	RedirectURL string

	// Scopes are requested in addition to those the MCP server asks for in
	// its challenge or Protected Resource Metadata.
	Scopes []string

	// Authorizer obtains the user's consent. Required for
	// GrantAuthorizationCode.
	Authorizer Authorizer

	// Store keeps grants; nil means a new MemoryStore.
	Store TokenStore

	// HTTPClient makes the requests to metadata, registration and token
	// endpoints. nil means a client over the RoundTripper given to
	// NewTransport, without authorization. Give a client with a restricted
	// dialer to keep a hostile MCP server from pointing Snodo at internal
	// addresses.
	HTTPClient *http.Client
}

// Authorizer obtains the user's consent: it directs the user agent to the
// authorization URL and returns what came back to the redirect URI.
type Authorizer interface {
	Authorize(ctx context.Context, req AuthorizationRequest) (*AuthorizationResponse, error)
}

// AuthorizationRequest is what an Authorizer is given.
type AuthorizationRequest struct {
	// URL is the authorization URL to open.
	URL string
	// RedirectURL is the redirect URI the response will arrive at.
	RedirectURL string
	// State is the state parameter in URL; an Authorizer may use it to
	// ignore responses meant for someone else. The transport checks it
	// again.
	State string
}

// AuthorizationResponse holds the parameters of the redirect to the
// redirect URI (RFC 6749 §4.1.2, RFC 9207).
type AuthorizationResponse struct {
	Code             string
	State            string
	Iss              string
	Error            string
	ErrorDescription string
}

// ResponseFromQuery reads an AuthorizationResponse from the query of a
// redirect URI.
func ResponseFromQuery(q url.Values) *AuthorizationResponse {
	return &AuthorizationResponse{
		Code:             q.Get("code"),
		State:            q.Get("state"),
		Iss:              q.Get("iss"),
		Error:            q.Get("error"),
		ErrorDescription: q.Get("error_description"),
	}
}

// AuthorizerFunc adapts a function to the Authorizer interface.
type AuthorizerFunc func(ctx context.Context, req AuthorizationRequest) (*AuthorizationResponse, error)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, req AuthorizationRequest) (*AuthorizationResponse, error) {
	return f(ctx, req)
}

// validate checks c and fills in defaults.
func (c *Config) validate() error {
	switch c.GrantType {
	case "":
		c.GrantType = GrantAuthorizationCode
		fallthrough
	case GrantAuthorizationCode:
		if c.Authorizer == nil {
			return errors.New("oauth: Config.Authorizer is required for the authorization code grant")
		}
		if c.RedirectURL == "" {
			return errors.New("oauth: Config.RedirectURL is required for the authorization code grant")
		}
		// Security Considerations, "Communication Security": redirect URIs
		// must be loopback or https.
		if _, err := checkEndpoint("redirect URL", c.RedirectURL); err != nil {
			return err
		}
	case GrantClientCredentials:
		if c.ClientID == "" || c.ClientSecret == "" {
			return errors.New("oauth: the client_credentials grant needs Config.ClientID and Config.ClientSecret")
		}
	default:
		return fmt.Errorf("oauth: unknown grant type %q (want %q or %q)", c.GrantType, GrantAuthorizationCode, GrantClientCredentials)
	}
	if c.ClientSecret != "" && c.ClientID == "" {
		return errors.New("oauth: Config.ClientSecret is set without Config.ClientID")
	}
	if c.ClientIDMetadataURL != "" {
		u, err := url.Parse(c.ClientIDMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" || u.Fragment != "" {
			return fmt.Errorf("oauth: Config.ClientIDMetadataURL %q must be an https URL with a path", c.ClientIDMetadataURL)
		}
	}
	for _, s := range c.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
			return fmt.Errorf("oauth: invalid scope %q in Config.Scopes", s)
		}
	}
	if c.ClientName == "" {
		c.ClientName = "Snodo"
	}
	if c.Store == nil {
		c.Store = &MemoryStore{}
	}
	return nil
}
