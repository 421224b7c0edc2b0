package oauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// tokenResponse is an RFC 6749 §5.1 token response, or §5.2 error.
type tokenResponse struct {
	AccessToken      string          `json:"access_token"`
	TokenType        string          `json:"token_type"`
	RefreshToken     string          `json:"refresh_token"`
	ExpiresIn        json.RawMessage `json:"expires_in"`
	Error            string          `json:"error"`
	ErrorDescription string          `json:"error_description"`
}

// postToken makes a token request with form, authenticating the client
// with method.
func postToken(ctx context.Context, c *http.Client, endpoint string, form url.Values, id, secret, method string) (*oauth2.Token, error) {
	const op = "token request"
	switch method {
	case authPost:
		form.Set("client_id", id)
		form.Set("client_secret", secret)
	case authNone:
		form.Set("client_id", id)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, &Error{Op: op, URL: redactURL(endpoint), Err: err}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if method == authBasic {
		// RFC 6749 §2.3.1: form-encode the ID and secret first.
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	}
	resp, err := metadataClient(c).Do(req)
	if err != nil {
		return nil, &Error{Op: op, URL: redactURL(endpoint), Err: err}
	}
	defer resp.Body.Close()
	var r tokenResponse
	derr := decodeJSON(resp, op, endpoint, &r)
	if resp.StatusCode != http.StatusOK || r.Error != "" {
		e := &Error{Op: op, URL: redactURL(endpoint), Status: resp.StatusCode}
		if derr == nil {
			e.Code, e.Description = clean(r.Error), clean(r.ErrorDescription)
		}
		return nil, e
	}
	if derr != nil {
		return nil, derr
	}
	tok := &oauth2.Token{AccessToken: r.AccessToken, TokenType: r.TokenType, RefreshToken: r.RefreshToken}
	var secs json.Number
	if len(r.ExpiresIn) > 0 && json.Unmarshal(r.ExpiresIn, &secs) == nil {
		if n, err := secs.Int64(); err == nil && n > 0 && n < 10*365*24*3600 {
			tok.Expiry = time.Now().Add(time.Duration(n) * time.Second)
		}
	}
	return tok, nil
}
