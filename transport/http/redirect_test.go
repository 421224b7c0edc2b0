package http_test

import (
	"context"
	"errors"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	mcphttp "github.com/snodo/snodo/transport/http"
)

// secretHeader is configured on the transport in the redirect tests: it
// must never reach another origin.
var secretHeader = nethttp.Header{"Authorization": {"Bearer s3cr3t"}, "X-Api-Key": {"s3cr3t"}}

// mustNotBeReached fails the test if the server got any request, and names
// the secret if one carried it.
func mustNotBeReached(t *testing.T, what string, s *server) {
	t.Helper()
	for _, r := range s.requests() {
		t.Errorf("%s: the other origin got a %s request (Authorization %q, X-Api-Key %q)", what, r.Method, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
	}
}

// A 307 to another origin is not followed: the request fails with an
// error naming the target, redacted, and the configured headers never
// reach it — whether the client is the transport's own or one given in
// Config.HTTPClient, whatever that client's redirect policy.
func TestRedirectToAnotherOriginIsNotFollowed(t *testing.T) {
	other := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		writeJSON(w, 200, result(reqOf(rec).ID, `{}`))
	})
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		nethttp.Redirect(w, r, other.URL+"/mcp?api_key=target-s3cr3t", nethttp.StatusTemporaryRedirect)
	})
	followAll := &nethttp.Client{CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error { return nil }}
	defer followAll.CloseIdleConnections()
	for _, tc := range []struct {
		what   string
		client *nethttp.Client
	}{
		{"own client", nil},
		{"client that follows every redirect", followAll},
	} {
		tr := newTransport(t, mcphttp.Config{URL: srv.URL + "/mcp", Header: secretHeader, HTTPClient: tc.client})
		_, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "tools/list"}, transport.RequestOptions{Dialect: modernHeaders})
		mustNotBeReached(t, tc.what, other)
		if !errors.Is(err, mcphttp.ErrCrossOriginRedirect) {
			t.Errorf("%s: err %v, want ErrCrossOriginRedirect", tc.what, err)
		} else if !strings.Contains(err.Error(), strings.TrimPrefix(other.URL, "http://")+"/mcp?api_key=REDACTED") || strings.Contains(err.Error(), "target-s3cr3t") {
			t.Errorf("%s: the error does not name the target, redacted: %v", tc.what, err)
		}
	}
}

// A 308 from https to plain http is not followed, even when the client
// trusts the https server and has no redirect policy of its own.
func TestRedirectFromHTTPSToHTTPIsNotFollowed(t *testing.T) {
	plain := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		writeJSON(w, 200, result(reqOf(rec).ID, `{}`))
	})
	tls := httptest.NewTLSServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		nethttp.Redirect(w, r, plain.URL+"/mcp", nethttp.StatusPermanentRedirect)
	}))
	defer tls.Close()
	tr := newTransport(t, mcphttp.Config{URL: tls.URL + "/mcp", Header: secretHeader, HTTPClient: tls.Client()})
	_, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "tools/list"}, transport.RequestOptions{})
	mustNotBeReached(t, "https to http", plain)
	if !errors.Is(err, mcphttp.ErrCrossOriginRedirect) || !strings.Contains(err.Error(), "from https to http") {
		t.Errorf("err %v, want ErrCrossOriginRedirect from https to http", err)
	}
}

// fakeOrigins is a RoundTripper that answers every URL from a table: a
// redirect, or a response; it records the requests.
type fakeOrigins struct {
	mu       sync.Mutex
	redirect map[string]string // URL → Location
	seen     []*nethttp.Request
}

func (f *fakeOrigins) RoundTrip(req *nethttp.Request) (*nethttp.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	f.mu.Lock()
	f.seen = append(f.seen, req)
	loc, ok := f.redirect[req.URL.String()]
	f.mu.Unlock()
	resp := &nethttp.Response{StatusCode: 200, Header: nethttp.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{}}`)), Request: req}
	if ok {
		resp.StatusCode = nethttp.StatusPermanentRedirect
		resp.Header = nethttp.Header{"Location": {loc}}
		resp.Body = io.NopCloser(strings.NewReader(""))
	}
	return resp, nil
}

// The origin is scheme, host and port, a default port made explicit and
// case ignored: http on the https port of the same host is another origin;
// HTTPS://MCP.example:443 is https://mcp.example.
func TestRedirectOrigins(t *testing.T) {
	f := &fakeOrigins{redirect: map[string]string{
		"https://mcp.example:8443/mcp": "http://mcp.example:8443/mcp",
		"https://mcp.example/old":      "HTTPS://MCP.example:443/mcp",
		"http://mcp.example/old":       "http://mcp.example:8080/mcp",
	}}
	client := &nethttp.Client{Transport: f, CheckRedirect: mcphttp.CheckRedirect}
	for _, tc := range []struct {
		url    string
		follow bool
	}{
		{"https://mcp.example:8443/mcp", false},
		{"https://mcp.example/old", true},
		{"http://mcp.example/old", false},
	} {
		f.mu.Lock()
		f.seen = nil
		f.mu.Unlock()
		tr := newTransport(t, mcphttp.Config{URL: tc.url, Header: secretHeader, HTTPClient: client})
		_, err := tr.Request(context.Background(), &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "m"}, transport.RequestOptions{})
		f.mu.Lock()
		seen := f.seen
		f.mu.Unlock()
		if tc.follow {
			if err != nil || len(seen) != 2 || seen[1].Header.Get("X-Api-Key") != "s3cr3t" {
				t.Errorf("%s: err %v, %d requests: a same-origin redirect is followed with the headers", tc.url, err, len(seen))
			}
			continue
		}
		if !errors.Is(err, mcphttp.ErrCrossOriginRedirect) || len(seen) != 1 {
			t.Errorf("%s: err %v, %d requests: the redirect is followed", tc.url, err, len(seen))
		}
	}
}

// A redirect within the origin is followed, the configured headers with
// it.
func TestSameOriginRedirectKeepsHeaders(t *testing.T) {
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		if r.URL.Path == "/old" {
			nethttp.Redirect(w, r, "/mcp", nethttp.StatusPermanentRedirect)
			return
		}
		writeJSON(w, 200, result(reqOf(rec).ID, `{}`))
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL + "/old", Header: secretHeader})
	if _, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "m"}, transport.RequestOptions{}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	if len(reqs) != 2 || reqs[1].Header.Get("X-Api-Key") != "s3cr3t" || reqs[1].Header.Get("Authorization") != "Bearer s3cr3t" {
		t.Errorf("%d requests; the redirected one lacks the configured headers", len(reqs))
	}
}
