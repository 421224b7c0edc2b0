// Package redact hides what may be a secret in a URL before the URL is
// shown in an error or a log line: an MCP endpoint is often given with its
// credentials in the query (https://mcp.example.com/mcp?api_key=…).
//
// Every error and log line of Snodo that prints a configured URL, or a URL
// a server redirected to, goes through URL (or Error for the *url.Error of
// net/http).
package redact

import (
	"net/url"
	"strings"
)

// Mask replaces a query value or a fragment.
const Mask = "REDACTED"

// passwordMask replaces the password of user information, as
// url.URL.Redacted does.
const passwordMask = "xxxxx"

// URL returns raw for display with every query value replaced by Mask,
// keeping the keys so that the URL can still be told apart
// (?api_key=REDACTED&region=REDACTED); a query part without "=" is replaced
// whole, the fragment too, and the password of user information becomes
// xxxxx (user:xxxxx@host, as url.URL.Redacted). The scheme, host, port and
// path are kept. It works on the text alone, so a string that does not
// parse as a URL is redacted the same way.
func URL(raw string) string {
	s, frag := raw, ""
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s, frag = s[:i], "#"
		if i+1 < len(raw) {
			frag += Mask
		}
	}
	query := ""
	if i := strings.IndexByte(s, '?'); i >= 0 {
		query = "?" + redactQuery(s[i+1:])
		s = s[:i]
	}
	return redactUserinfo(s) + query + frag
}

func redactQuery(q string) string {
	if q == "" {
		return ""
	}
	parts := strings.Split(q, "&")
	for i, p := range parts {
		switch key, value, ok := strings.Cut(p, "="); {
		case p == "":
		case !ok:
			parts[i] = Mask
		case value != "":
			parts[i] = key + "=" + Mask
		}
	}
	return strings.Join(parts, "&")
}

// redactUserinfo masks the password of the user information of s, a URL
// without query or fragment.
func redactUserinfo(s string) string {
	start := strings.Index(s, "//")
	if start < 0 {
		return s
	}
	start += 2
	end := len(s)
	if i := strings.IndexByte(s[start:], '/'); i >= 0 {
		end = start + i
	}
	at := strings.LastIndexByte(s[start:end], '@')
	if at < 0 {
		return s
	}
	at += start
	colon := strings.IndexByte(s[start:at], ':')
	if colon < 0 {
		return s
	}
	colon += start
	return s[:colon+1] + passwordMask + s[at:]
}

// Error returns err with the URL of a *url.Error redacted: net/http's
// Client returns its every failure as one, naming the request's URL or the
// target of a redirect. Op and the cause are kept, so errors.Is, errors.As
// and the Timeout method work as before. Any other error is returned as it
// is.
func Error(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return &url.Error{Op: ue.Op, URL: URL(ue.URL), Err: ue.Err}
	}
	return err
}
