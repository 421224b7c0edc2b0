package oauth

import (
	"maps"
	"net/http"
	"strings"
	"testing"
)

func TestBearerChallenge(t *testing.T) {
	for _, tc := range []struct {
		headers []string
		want    map[string]string
	}{
		{[]string{`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read"`},
			map[string]string{"resource_metadata": "https://mcp.example.com/.well-known/oauth-protected-resource", "scope": "files:read"}},
		{[]string{`Basic realm="x", Bearer error="insufficient_scope", scope="a b"`},
			map[string]string{"error": "insufficient_scope", "scope": "a b"}},
		{[]string{`Basic realm="x"`, `bearer scope=unquoted, Error="e\"q"`},
			map[string]string{"scope": "unquoted", "error": `e"q`}},
		{[]string{`Negotiate abc==, Bearer realm="r"`}, map[string]string{"realm": "r"}},
		{[]string{`Bearer`}, map[string]string{}},
		{[]string{`Basic realm="x"`}, nil},
		{[]string{`Bearer scope="unterminated`}, map[string]string{}},
	} {
		h := http.Header{"Www-Authenticate": tc.headers}
		got := bearerChallenge(h)
		if (got == nil) != (tc.want == nil) || !maps.Equal(got, tc.want) {
			t.Errorf("%q: got %v, want %v", tc.headers, got, tc.want)
		}
	}
}

func TestChallengeParsingIsBounded(t *testing.T) {
	h := http.Header{"Www-Authenticate": {`Bearer scope="` + strings.Repeat("a", 1<<20) + `"`, `Bearer late="x"`}}
	cs := parseChallenges(h.Values("WWW-Authenticate"))
	for _, c := range cs {
		if len(c.params["scope"]) > maxChallengeBytes || c.params["late"] != "" {
			t.Fatalf("parsed beyond the bound")
		}
	}
}
