package oauth_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/snodo/snodo/transport/http/oauth"
)

// callProtected sends one JSON-RPC message to a protected MCP server,
// authorizing through the user's browser when the server asks for it.
func callProtected(ctx context.Context, serverURL string, body []byte) (*http.Response, error) {
	la, err := oauth.NewLoopbackAuthorizer(oauth.LoopbackOptions{Out: os.Stderr, OpenBrowser: true})
	if err != nil {
		return nil, err
	}
	defer la.Close()
	store, err := oauth.NewFileStore("") // snodo/oauth under the user's cache directory
	if err != nil {
		return nil, err
	}
	client, err := oauth.NewClient(nil, oauth.Config{
		Authorizer:  la,
		RedirectURL: la.RedirectURL(), // http://127.0.0.1:PORT/callback
		Store:       store,
	})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return client.Do(req) // bytes.Reader bodies can be sent again after authorizing
}

var _ = callProtected

// An MCP client for an authorization server that approves without a person,
// such as the MCP conformance suite's: the redirect is read, not followed.
func ExampleHeadlessAuthorizer() {
	client, err := oauth.NewClient(nil, oauth.Config{
		Authorizer:          oauth.HeadlessAuthorizer{},
		RedirectURL:         "http://localhost:3000/callback",
		ClientIDMetadataURL: "https://conformance-test.local/client-metadata.json",
	})
	if err != nil {
		panic(err)
	}
	_ = client // give it to the HTTP transport
}

// docs/AUTH.md shows callProtected verbatim, so that it compiles as shown.
func TestAuthDocExampleIsVerbatim(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/AUTH.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, code, ok := strings.Cut(string(doc), "```go\n")
	if ok {
		code, _, ok = strings.Cut(code, "```\n")
	}
	if !ok {
		t.Fatal("docs/AUTH.md has no Go code block")
	}
	if !strings.Contains(string(src), code) {
		t.Errorf("docs/AUTH.md's example is not in example_test.go verbatim:\n%s", code)
	}
}
