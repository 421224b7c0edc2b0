package redact

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://mcp.example.com/mcp", "https://mcp.example.com/mcp"},
		{"https://mcp.example.com/mcp?api_key=s3cr3t", "https://mcp.example.com/mcp?api_key=REDACTED"},
		{"http://127.0.0.1:8080/mcp?api_key=s3cr3t&region=eu&debug=", "http://127.0.0.1:8080/mcp?api_key=REDACTED&region=REDACTED&debug="},
		{"https://h/mcp?s3cr3t", "https://h/mcp?REDACTED"},
		{"https://h/mcp?a=1;token=s3cr3t&&b=s3cr3t", "https://h/mcp?a=REDACTED&&b=REDACTED"},
		{"https://h/mcp?", "https://h/mcp?"},
		{"https://h/mcp#access_token=s3cr3t", "https://h/mcp#REDACTED"},
		{"https://h/mcp#", "https://h/mcp#"},
		{"https://ada:s3cr3t@h:8443/mcp?k=s3cr3t", "https://ada:xxxxx@h:8443/mcp?k=REDACTED"},
		{"https://ada@h/mcp", "https://ada@h/mcp"},
		{"https://a:b@c:s3cr3t@h/mcp", "https://a:xxxxx@h/mcp"},
		{"https://h/p@th:x", "https://h/p@th:x"},
		// Text that does not parse as a URL is redacted too.
		{"http://[::1/mcp?api_key=s3cr3t", "http://[::1/mcp?api_key=REDACTED"},
		{"h:8080/mcp?api_key=s3cr3t%zz", "h:8080/mcp?api_key=REDACTED"},
		{"", ""},
	} {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestError(t *testing.T) {
	cause := context.DeadlineExceeded
	err := Error(&url.Error{Op: "Post", URL: "http://h/mcp?api_key=s3cr3t", Err: cause})
	if strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "api_key=REDACTED") {
		t.Errorf("Error: %v", err)
	}
	var ue *url.Error
	if !errors.As(err, &ue) || !ue.Timeout() || !errors.Is(err, cause) {
		t.Errorf("the redacted error lost its kind: %#v", err)
	}
	other := errors.New("other")
	if Error(other) != other || Error(nil) != nil {
		t.Error("an error that is not a *url.Error is not returned as it is")
	}
}
