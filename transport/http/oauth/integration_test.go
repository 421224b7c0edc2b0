package oauth

import (
	"context"
	"net/http"
	"testing"

	"github.com/snodo/snodo"
	mcphttp "github.com/snodo/snodo/transport/http"
)

// Snodo's client over the Streamable HTTP transport, with the transport's
// HTTP client from NewClient: the 401 of the first request is answered
// beneath the transport, and the session proceeds with the token.
func TestClientOverHTTPTransport(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	rs.mcp = true
	rs.scopeInHeader = "mcp:tools"
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	hc, err := NewClient(&http.Client{Transport: base}, Config{
		Authorizer:  HeadlessAuthorizer{Client: &http.Client{Transport: base}},
		RedirectURL: testRedirect,
	})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := mcphttp.New(mcphttp.Config{URL: rs.url(), HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	client, err := snodo.Connect(ctx, tr, nil)
	if err != nil {
		tr.Close()
		t.Fatal(err)
	}
	defer client.Close()
	var names []string
	for tool, err := range client.Tools(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if len(names) != 1 || names[0] != "protected-tool" {
		t.Errorf("tools %q", names)
	}
	if as.count("auth") != 1 || as.lastAuth().Get("scope") != "mcp:tools" {
		t.Errorf("%d authorizations, scope %q", as.count("auth"), as.lastAuth().Get("scope"))
	}
}
