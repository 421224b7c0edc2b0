package http_test

import (
	"context"
	"errors"
	"net"
	nethttp "net/http"
	"strings"
	"testing"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	mcphttp "github.com/snodo/snodo/transport/http"
)

// errorTexts returns the text of err and of every error it wraps.
func errorTexts(err error) []string {
	var out []string
	for e := err; e != nil; e = errors.Unwrap(e) {
		out = append(out, e.Error())
	}
	return out
}

// noSecret fails the test if the text of err, or of an error it wraps,
// shows secret.
func noSecret(t *testing.T, what string, err error, secret string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	for _, s := range errorTexts(err) {
		if strings.Contains(s, secret) {
			t.Errorf("%s: the error shows the secret: %s", what, s)
		}
	}
}

// A credential in the URL's query (?api_key=…) is not shown by the errors
// of New or Request: net/http's *url.Error names the URL, and its query
// values are redacted (the keys stay, to tell the URL).
func TestErrorsRedactTheURLQuery(t *testing.T) {
	const secret = "s3cr3t"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	tr := newTransport(t, mcphttp.Config{URL: "http://" + addr + "/mcp?api_key=" + secret})
	_, err = tr.Request(context.Background(), &jsonrpc.Request{Method: "m"}, transport.RequestOptions{})
	noSecret(t, "connection refused", err, secret)
	if err != nil && !strings.Contains(err.Error(), "api_key=REDACTED") {
		t.Errorf("connection refused: the error does not name the URL: %v", err)
	}

	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) { w.WriteHeader(500) })
	tr = newTransport(t, mcphttp.Config{URL: srv.URL + "/mcp?api_key=" + secret})
	_, err = tr.Request(context.Background(), &jsonrpc.Request{Method: "m"}, transport.RequestOptions{})
	noSecret(t, "HTTP 500", err, secret)

	_, err = mcphttp.New(mcphttp.Config{URL: "http:///mcp?api_key=" + secret})
	noSecret(t, "New without a host", err, secret)
}
