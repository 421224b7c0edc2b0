package http_test

import (
	"context"
	"encoding/json"
	"errors"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	mcphttp "github.com/snodo/snodo/transport/http"
)

// A JSON response: the POST carries the contract's headers, the response
// headers reach OnResponseHeaders in lowercase.
func TestRequestJSON(t *testing.T) {
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		w.Header().Set("Mcp-Session-Id", "s-1")
		writeJSON(w, 200, result(reqOf(rec).ID, `{"ok":true}`))
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL, Header: nethttp.Header{"Authorization": {"Bearer x"}}})
	var got []transport.Header
	resp, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "tools/list", Params: json.RawMessage(`{}`)}, transport.RequestOptions{
		Dialect:           legacyHeaders,
		Headers:           []transport.Header{{Name: "Mcp-Session-Id", Value: "abc"}},
		OnResponseHeaders: func(h []transport.Header) { got = h },
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Result) != `{"ok":true}` || !resp.ID.IsValid() {
		t.Fatalf("response %+v", resp)
	}
	rec := srv.requests()[0]
	for name, want := range map[string]string{
		"Accept":               "application/json, text/event-stream",
		"Content-Type":         "application/json",
		"Mcp-Protocol-Version": "2025-11-25",
		"Mcp-Session-Id":       "abc",
		"Authorization":        "Bearer x",
	} {
		if v := rec.Header.Get(name); v != want {
			t.Errorf("%s = %q, want %q", name, v, want)
		}
	}
	found := false
	for _, h := range got {
		found = found || (h.Name == "mcp-session-id" && h.Value == "s-1")
	}
	if !found {
		t.Errorf("response headers %v lack mcp-session-id", got)
	}
}

// An SSE response: notifications before the response, comments and
// priming events skipped, progress routed to the request.
func TestRequestSSEWithProgress(t *testing.T) {
	var logged []string
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		req := reqOf(rec)
		send := sse(w)
		send("id: 1\ndata: \n\n")
		send(": keep-alive\n\n")
		send("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"tok\",\"progress\":1}}\n\n")
		send("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\r\ndata: \"params\":{\"level\":\"info\",\"data\":\"hi\"}}\r\n\r\n")
		send("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"tok\",\"progress\":2}}\n\n")
		send("data: %s\n\n", result(req.ID, `{"done":true}`))
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL, OnNotification: func(n *jsonrpc.Notification) { logged = append(logged, n.Method) }})
	var progress []string
	resp, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "tools/call", Params: json.RawMessage(`{"_meta":{"progressToken":"tok"}}`)}, transport.RequestOptions{
		OnProgress: func(p json.RawMessage) error { progress = append(progress, string(p)); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Result) != `{"done":true}` {
		t.Fatalf("result %s", resp.Result)
	}
	if len(progress) != 2 {
		t.Errorf("progress %v", progress)
	}
	if len(logged) != 1 || logged[0] != "notifications/message" {
		t.Errorf("notifications %v", logged)
	}
}

// A 4xx whose body is a JSON-RPC error is the response; without one it is
// a -32000 error wrapping the status.
func TestRequestErrorStatus(t *testing.T) {
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		switch reqOf(rec).Method {
		case "json":
			writeJSON(w, 404, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`)
		case "auth":
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://x/.well-known"`)
			nethttp.Error(w, "no\x1b[31m", nethttp.StatusUnauthorized)
		default:
			nethttp.Error(w, "<html>"+string(make([]byte, 5000))+"</html>", nethttp.StatusMethodNotAllowed)
		}
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	ctx := context.Background()
	resp, err := tr.Request(ctx, &jsonrpc.Request{Method: "json"}, transport.RequestOptions{})
	if err != nil || resp.Error == nil || resp.Error.Code != jsonrpc.CodeMethodNotFound {
		t.Fatalf("json error body: %+v %v", resp, err)
	}
	_, err = tr.Request(ctx, &jsonrpc.Request{Method: "auth"}, transport.RequestOptions{})
	var se *transport.StatusError
	if !errors.Is(err, transport.ErrConnection) || !errors.As(err, &se) || se.Status != 401 || se.WWWAuthenticate == "" {
		t.Fatalf("401: %v", err)
	}
	if containsByte(err.Error(), 0x1b) {
		t.Errorf("escape character in the error: %q", err.Error())
	}
	_, err = tr.Request(ctx, &jsonrpc.Request{Method: "other"}, transport.RequestOptions{})
	if !errors.As(err, &se) || se.Status != 405 || len(err.Error()) > 1000 {
		t.Fatalf("405: %d bytes: %v", len(err.Error()), err)
	}
}

func containsByte(s string, b byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return true
		}
	}
	return false
}

// A JSON body or an SSE event past MaxMessageBytes fails the request.
func TestOversize(t *testing.T) {
	big := `{"x":"` + string(make([]byte, 2048)) + `"}`
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		req := reqOf(rec)
		if req.Method == "sse" {
			send := sse(w)
			send("data: %s\n\n", result(req.ID, `"`+string(make([]byte, 2048))+`"`))
			return
		}
		writeJSON(w, 200, result(req.ID, big))
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL, MaxMessageBytes: 1024})
	for _, m := range []string{"json", "sse"} {
		_, err := tr.Request(context.Background(), &jsonrpc.Request{Method: m}, transport.RequestOptions{Timeout: 10 * time.Second})
		if !errors.Is(err, mcphttp.ErrTooLarge) || !errors.Is(err, transport.ErrConnection) {
			t.Errorf("%s: %v", m, err)
		}
	}
}

// New validates its config.
func TestNewValidates(t *testing.T) {
	for _, cfg := range []mcphttp.Config{
		{},
		{URL: "ftp://x/mcp"},
		{URL: "http://"},
		{URL: "http://x", MaxMessageBytes: -1},
		{URL: "http://x", Header: nethttp.Header{"X": {"a\nb"}}},
	} {
		if _, err := mcphttp.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// A request whose params cannot be encoded fails without a POST.
func TestRequestNotEncodable(t *testing.T) {
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) { w.WriteHeader(500) })
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	_, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "m", Params: json.RawMessage("{\n")}, transport.RequestOptions{})
	if !errors.Is(err, jsonrpc.ErrInvalidJSON) || len(srv.requests()) != 0 {
		t.Fatalf("err %v, %d requests", err, len(srv.requests()))
	}
	// The ID is free again.
	_, err = tr.Request(context.Background(), &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "m"}, transport.RequestOptions{})
	var se *transport.StatusError
	if !errors.As(err, &se) || se.Status != 500 {
		t.Fatalf("second request: %v", err)
	}
}

// roundTripper is an authorizing http.RoundTripper as an OAuth layer is:
// it sends each request, and on 401 sends it again with a token, reading
// the body again through GetBody.
type roundTripper struct{}

func (rt *roundTripper) RoundTrip(req *nethttp.Request) (*nethttp.Response, error) {
	resp, err := nethttp.DefaultTransport.RoundTrip(req)
	if err != nil || resp.StatusCode != nethttp.StatusUnauthorized {
		return resp, err
	}
	resp.Body.Close()
	if req.GetBody == nil {
		return nil, errors.New("the request body is not replayable")
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	again := req.Clone(req.Context())
	again.Body = body
	again.Header.Set("Authorization", "Bearer fresh")
	return nethttp.DefaultTransport.RoundTrip(again)
}

// Config.HTTPClient carries the requests, and request bodies are
// replayable.
func TestHTTPClientReplaysBodies(t *testing.T) {
	var bodies []string
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		bodies = append(bodies, string(rec.Body))
		if r.Header.Get("Authorization") != "Bearer fresh" {
			w.WriteHeader(nethttp.StatusUnauthorized)
			return
		}
		writeJSON(w, 200, result(reqOf(rec).ID, `{}`))
	})
	client := &nethttp.Client{Transport: &roundTripper{}}
	defer client.CloseIdleConnections()
	tr := newTransport(t, mcphttp.Config{URL: srv.URL, HTTPClient: client})
	if _, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "tools/list", Params: json.RawMessage(`{"a":1}`)}, transport.RequestOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 2 || bodies[0] != bodies[1] || !strings.Contains(bodies[1], `"a":1`) {
		t.Errorf("bodies %q", bodies)
	}
}

// The default client follows a 307 with the body, and does not turn a POST
// into a GET on a 302.
func TestRedirects(t *testing.T) {
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		switch r.URL.Path {
		case "/old":
			nethttp.Redirect(w, r, "/mcp", nethttp.StatusTemporaryRedirect)
		case "/moved":
			nethttp.Redirect(w, r, "/mcp", nethttp.StatusFound)
		default:
			if r.Method != nethttp.MethodPost || reqOf(rec) == nil {
				w.WriteHeader(400)
				return
			}
			writeJSON(w, 200, result(reqOf(rec).ID, `{}`))
		}
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL + "/old"})
	if _, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "m"}, transport.RequestOptions{}); err != nil {
		t.Fatalf("307: %v", err)
	}
	tr = newTransport(t, mcphttp.Config{URL: srv.URL + "/moved"})
	_, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "m"}, transport.RequestOptions{})
	var se *transport.StatusError
	if !errors.As(err, &se) || se.Status != nethttp.StatusFound {
		t.Fatalf("302: %v", err)
	}
}

// A body that is not JSON-RPC fails the request; the error shows its
// start, escaped.
func TestGarbageBody(t *testing.T) {
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		writeJSON(w, 200, "\x1b]0;pwned\x07"+strings.Repeat("x", 10000))
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	_, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "m"}, transport.RequestOptions{})
	if !errors.Is(err, transport.ErrConnection) || containsByte(err.Error(), 0x1b) || containsByte(err.Error(), 0x07) || len(err.Error()) > 2000 {
		t.Fatalf("%d bytes: %q", len(err.Error()), err)
	}
}

// The headers of a request come from the dialect, then the extension for
// its method, then the caller's: each later source sets its own names and
// wins over an earlier one for the same name.
func TestRequestHeadersFromDialectExtensionAndCaller(t *testing.T) {
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		writeJSON(w, 200, result(reqOf(rec).ID, `{}`))
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	ext := fixedDialect{{Name: "Mcp-Name", Value: "task-7"}, {Name: "X-Routed", Value: "by-extension"}}
	_, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "tasks/get", Params: json.RawMessage(`{"taskId":"task-7"}`)}, transport.RequestOptions{
		Dialect:   modernHeaders,
		Extension: ext,
		Headers:   []transport.Header{{Name: "X-Routed", Value: "by-caller"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := srv.requests()[0]
	for name, want := range map[string]string{
		"Mcp-Protocol-Version": "2026-07-28",
		"Mcp-Name":             "task-7",
		"X-Routed":             "by-caller",
	} {
		if v := rec.Header.Get(name); v != want {
			t.Errorf("%s = %q, want %q", name, v, want)
		}
	}
}

// A server that drops the connection without answering: the error says
// why once ("POST failed: Post …: EOF"), not twice.
func TestRequestConnectionDroppedSaysCauseOnce(t *testing.T) {
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		conn, _, err := w.(nethttp.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	_, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "tools/list", Params: json.RawMessage(`{}`)}, transport.RequestOptions{Dialect: legacyHeaders})
	if !errors.Is(err, transport.ErrConnection) {
		t.Fatalf("err = %v, want a connection error", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "POST failed") || strings.Count(msg, "EOF") != 1 {
		t.Errorf("error %q: want POST failed and its cause once", msg)
	}
}
