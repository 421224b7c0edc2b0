package oauth

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/snodo/snodo/internal/safetext"
)

// Sentinel errors; the errors returned by this package wrap them so that
// callers can test with errors.Is.
var (
	// ErrBodyNotReplayable reports that a request must be retried with a new
	// token but its body cannot be read again (http.Request.GetBody is nil).
	ErrBodyNotReplayable = errors.New("oauth: request body cannot be replayed for the retry (set http.Request.GetBody)")
	// ErrStateMismatch reports an authorization response whose state is not
	// the one sent in the authorization request.
	ErrStateMismatch = errors.New("oauth: authorization response state does not match the request")
	// ErrIssuerMismatch reports metadata or an authorization response whose
	// issuer is not the authorization server's identifier (RFC 8414 §3.3,
	// RFC 9207 §2.4).
	ErrIssuerMismatch = errors.New("oauth: issuer mismatch")
	// ErrPKCEUnsupported reports an authorization server whose metadata does
	// not list S256 in code_challenge_methods_supported.
	ErrPKCEUnsupported = errors.New("oauth: authorization server does not support PKCE with S256")
	// ErrInsecureURL reports an endpoint that is not https and not on a
	// loopback address.
	ErrInsecureURL = errors.New("oauth: URL must use https (http is allowed only for loopback addresses)")
	// ErrTooLarge reports a response body larger than its bound.
	ErrTooLarge = errors.New("oauth: response too large")
	// ErrResourceMismatch reports Protected Resource Metadata whose resource
	// does not cover the MCP server's URL (RFC 9728 §3.3).
	ErrResourceMismatch = errors.New("oauth: protected resource metadata names a different resource")
	// ErrNoMetadata reports that no metadata document was found at any of the
	// URLs the specification lists.
	ErrNoMetadata = errors.New("oauth: metadata not found")
	// ErrNoClient reports that there is no way to obtain a client ID: no
	// pre-registered client, no supported Client ID Metadata Document and no
	// registration endpoint.
	ErrNoClient = errors.New("oauth: no client registration available")
	// ErrAccessDenied reports an authorization response carrying an OAuth
	// error (for example the user refused consent).
	ErrAccessDenied = errors.New("oauth: authorization refused")
)

// Error describes a failed exchange with an authorization or resource server.
// Text that came from the server (Code, Description) is truncated and
// stripped of control characters before it is stored here.
type Error struct {
	// Op names the step that failed, e.g. "token request".
	Op string
	// URL is the endpoint that was called, without its query.
	URL string
	// Status is the HTTP status code, or 0 when there was no response.
	Status int
	// Code is the OAuth error code (RFC 6749 §5.2), if the server sent one.
	Code string
	// Description is the server's error_description, truncated.
	Description string
	// Err is the underlying cause, if any.
	Err error
}

// Error describes the failure in one line.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("oauth: ")
	b.WriteString(e.Op)
	if e.URL != "" {
		fmt.Fprintf(&b, " %q", e.URL)
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, ": %q", e.Code)
	}
	if e.Description != "" {
		fmt.Fprintf(&b, " (%q)", e.Description)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// maxErrorText bounds any server-supplied text kept in an error.
const maxErrorText = 200

// clean returns s with control, bidi and invisible characters and invalid
// UTF-8 escaped (safetext.Escape), cut to about maxErrorText bytes, so
// that server text can be shown safely.
func clean(s string) string {
	if len(s) > 4*maxErrorText {
		s = s[:4*maxErrorText] // a rune cut here is escaped as U+FFFD
	}
	s = safetext.Escape(s, false)
	if len(s) <= maxErrorText {
		return s
	}
	cut := maxErrorText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// redactURL returns u without query or fragment, cleaned for display.
func redactURL(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	return clean(u)
}
