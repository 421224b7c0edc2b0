package transport

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// HeaderCarrier is implemented by a transport that carries headers with
// each message (Streamable HTTP). The client computes the headers it owns —
// the session ID of an initialize-era connection, the Mcp-Param-{Name}
// headers of annotated tool arguments — only for a transport whose
// CarriesHeaders reports true, so a transport without headers (stdio) pays
// nothing for them.
type HeaderCarrier interface {
	CarriesHeaders() bool
}

// Header names of the Streamable HTTP transport.
const (
	HeaderProtocolVersion = "MCP-Protocol-Version"
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
	// HeaderParamPrefix starts the name of the header that mirrors a tool
	// argument annotated with x-mcp-header (2026-07-28).
	HeaderParamPrefix = "Mcp-Param-"
)

// Markers of a Base64-encoded header value (2026-07-28, streamable-http.mdx
// "Value Encoding").
const (
	base64Prefix = "=?base64?"
	base64Suffix = "?="
)

// EncodeHeaderValue returns s as an MCP header value: s itself when it is
// visible ASCII with inner spaces only, otherwise — non-ASCII, control
// characters (tab included), leading or trailing whitespace, or a value
// that itself looks like the sentinel — "=?base64?…?=" around the standard
// Base64 of its UTF-8 bytes. The empty string stays empty.
func EncodeHeaderValue(s string) string {
	if !needsBase64(s) {
		return s
	}
	return base64Prefix + base64.StdEncoding.EncodeToString([]byte(s)) + base64Suffix
}

// DecodeHeaderValue reverses EncodeHeaderValue. A value in the sentinel
// form whose Base64 is invalid is an error.
func DecodeHeaderValue(v string) (string, error) {
	inner, ok := strings.CutPrefix(v, base64Prefix)
	if !ok {
		return v, nil
	}
	inner, ok = strings.CutSuffix(inner, base64Suffix)
	if !ok {
		return v, nil
	}
	b, err := base64.StdEncoding.DecodeString(inner)
	if err != nil {
		return "", fmt.Errorf("invalid Base64 in header value: %w", err)
	}
	return string(b), nil
}

func needsBase64(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return true
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return true
		}
	}
	return strings.HasPrefix(s, base64Prefix) && strings.HasSuffix(s, base64Suffix)
}

// IsToken reports whether s is an HTTP field-name token (RFC 9110 5.1:
// 1*tchar), as an x-mcp-header name must be.
func IsToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// StatusError is the cause of a transport error for an HTTP response whose
// status says the request failed and whose body is not a JSON-RPC error
// response: 401 and 403 (authorization), a 404 for an expired session, a
// 400, 404 or 405 from a server that does not speak the 2026-07-28
// revision, and any other failure status.
type StatusError struct {
	// Status is the HTTP status code, such as 401.
	Status int
	// WWWAuthenticate is the response's WWW-Authenticate header, for 401
	// and 403 (an OAuth layer reads its resource_metadata and scope).
	WWWAuthenticate string
	// Body is the start of the response body, capped and with control
	// characters escaped: text from the server, for people only.
	Body string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("HTTP status %d", e.Status)
	if e.WWWAuthenticate != "" {
		msg += fmt.Sprintf(" (WWW-Authenticate: %s)", e.WWWAuthenticate)
	}
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}
