package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	mcphttp "github.com/snodo/snodo/transport/http"
)

var session = []transport.Header{{Name: "Mcp-Session-Id", Value: "sess-1"}}

// Initialize era: after notifications/initialized the transport opens the
// GET stream with the session's headers; a server request on it, and one
// on a request's stream, are answered with POSTs of the responses.
func TestServerRequestsAnsweredByPOST(t *testing.T) {
	getReq := make(chan struct{})
	answers := make(chan *jsonrpc.Response, 2)
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		switch m := rec.Msg.(type) {
		case nil:
			if r.Method != nethttp.MethodGet {
				w.WriteHeader(405)
				return
			}
			send := sse(w)
			send("id: g1\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"roots/list\",\"params\":{}}\n\n")
			close(getReq)
			<-r.Context().Done()
		case *jsonrpc.Notification:
			w.WriteHeader(202)
		case *jsonrpc.Response:
			answers <- m
			w.WriteHeader(202)
		case *jsonrpc.Request:
			send := sse(w)
			send("data: {\"jsonrpc\":\"2.0\",\"id\":\"srv-2\",\"method\":\"elicitation/create\",\"params\":{}}\n\n")
			resp := <-answers
			send("data: %s\n\n", result(m.ID, string(resp.Result)))
		}
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL, OnServerRequest: func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		return json.RawMessage(fmt.Sprintf(`{"answered":%q}`, req.Method)), nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := tr.Notify(ctx, &jsonrpc.Notification{Method: "notifications/initialized", Params: json.RawMessage(`{}`)},
		transport.NotifyOptions{Dialect: legacyHeaders, Headers: session})
	if err != nil {
		t.Fatal(err)
	}
	get := srv.waitFor(t, ctx, func(r recorded) bool { return r.Method == nethttp.MethodGet })
	if get.Header.Get("Mcp-Session-Id") != "sess-1" || get.Header.Get("Mcp-Protocol-Version") != "2025-11-25" || get.Header.Get("Accept") != "text/event-stream" {
		t.Errorf("GET headers %v", get.Header)
	}
	select {
	case a := <-answers:
		if a.ID != jsonrpc.StringID("srv-1") || string(a.Result) != `{"answered":"roots/list"}` {
			t.Errorf("answer %+v %s", a, a.Result)
		}
	case <-ctx.Done():
		t.Fatal("no answer to the GET stream's request")
	}
	post := srv.waitFor(t, ctx, func(r recorded) bool { _, ok := r.Msg.(*jsonrpc.Response); return ok })
	if post.Header.Get("Mcp-Session-Id") != "sess-1" {
		t.Errorf("answer POST headers %v", post.Header)
	}

	resp, err := tr.Request(ctx, &jsonrpc.Request{Method: "tools/call"}, transport.RequestOptions{Dialect: legacyHeaders, Headers: session})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Result) != `{"answered":"elicitation/create"}` {
		t.Errorf("result %s", resp.Result)
	}
}

// A legacy stream that breaks before its response is resumed with GET and
// Last-Event-ID after the server's retry time; the response may come on
// the resumed stream.
func TestResumeWithLastEventID(t *testing.T) {
	var pending jsonrpc.ID
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		if req := reqOf(rec); req != nil {
			pending = req.ID
			send := sse(w)
			send("id: ev-1\nretry: 150\ndata: \n\n")
			send("id: ev-2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p\",\"progress\":1}}\n\n")
			return // closes the stream before the response
		}
		if r.Method == nethttp.MethodGet {
			send := sse(w)
			send("id: ev-3\ndata: %s\n\n", result(pending, `{"resumed":true}`))
		}
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	var progress int
	start := time.Now()
	resp, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "tools/call"}, transport.RequestOptions{
		Dialect: legacyHeaders, Headers: session, Timeout: 10 * time.Second,
		ProgressToken: jsonrpc.StringID("p"), OnProgress: func(json.RawMessage) error { progress++; return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Result) != `{"resumed":true}` || progress != 1 {
		t.Fatalf("result %s, %d progress", resp.Result, progress)
	}
	if waited := time.Since(start); waited < 150*time.Millisecond {
		t.Errorf("reconnected after %v, before the server's retry of 150ms", waited)
	}
	reqs := srv.requests()
	get := reqs[len(reqs)-1]
	if get.Method != nethttp.MethodGet || get.Header.Get("Last-Event-ID") != "ev-2" || get.Header.Get("Mcp-Session-Id") != "sess-1" {
		t.Errorf("resumption %s with headers %v", get.Method, get.Header)
	}
}

// A 2026-07-28 stream that breaks before its response fails the request
// with a connection error, and nothing is sent again.
func TestModernBrokenStreamFails(t *testing.T) {
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		send := sse(w)
		send("id: ev-1\nretry: 10\ndata: \n\n")
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	_, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "tools/call"}, transport.RequestOptions{Dialect: modernHeaders, Timeout: 10 * time.Second})
	if !errors.Is(err, transport.ErrConnection) || !strings.Contains(err.Error(), "ended before the response") {
		t.Fatalf("err %v", err)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want the one POST", n)
	}
}

// A legacy stream that breaks without an event ID cannot be resumed.
func TestLegacyBrokenStreamWithoutIDFails(t *testing.T) {
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		sse(w)(": nothing\n\n")
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	_, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "tools/call"}, transport.RequestOptions{Dialect: legacyHeaders, Timeout: 10 * time.Second})
	if !errors.Is(err, transport.ErrConnection) || !strings.Contains(err.Error(), "without an event ID") {
		t.Fatalf("err %v", err)
	}
}

// A timeout is -32001. In the initialize era the server is sent
// notifications/cancelled; in 2026-07-28 the stream is closed and nothing
// is sent.
func TestTimeoutCancels(t *testing.T) {
	for _, era := range []struct {
		name    string
		dialect fixedDialect
	}{{"legacy", legacyHeaders}, {"modern", modernHeaders}} {
		t.Run(era.name, func(t *testing.T) {
			closed := make(chan struct{})
			srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
				if _, ok := rec.Msg.(*jsonrpc.Notification); ok {
					w.WriteHeader(202)
					return
				}
				sse(w)(": working\n\n")
				<-r.Context().Done()
				close(closed)
			})
			tr := newTransport(t, mcphttp.Config{URL: srv.URL})
			_, err := tr.Request(context.Background(), &jsonrpc.Request{ID: jsonrpc.Int64ID(42), Method: "tools/call"},
				transport.RequestOptions{Dialect: era.dialect, Headers: session, Timeout: 100 * time.Millisecond})
			var e *jsonrpc.Error
			if !errors.As(err, &e) || e.Code != jsonrpc.CodeRequestTimeout || !errors.Is(err, transport.ErrTimeout) {
				t.Fatalf("err %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			select {
			case <-closed:
			case <-ctx.Done():
				t.Fatal("the response stream was not closed")
			}
			if era.name == "legacy" {
				n := srv.waitFor(t, ctx, isMethod("notifications/cancelled"))
				if !strings.Contains(string(n.Body), `"requestId":42`) || n.Header.Get("Mcp-Session-Id") != "sess-1" {
					t.Errorf("cancelled %s, headers %v", n.Body, n.Header)
				}
				return
			}
			tr.Close() // waits for any background POST
			for _, r := range srv.requests() {
				if strings.Contains(string(r.Body), "notifications/cancelled") {
					t.Errorf("notifications/cancelled over 2026-07-28 HTTP")
				}
			}
		})
	}
}

// Close fails the requests in flight with -32000 wrapping ErrClosed, and
// later ones too.
func TestCloseWithRequestsInFlight(t *testing.T) {
	started := make(chan struct{}, 3)
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		sse(w)(": wait\n\n")
		started <- struct{}{}
		<-r.Context().Done()
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "slow"}, transport.RequestOptions{Dialect: modernHeaders})
			errs <- err
		}()
	}
	for range 3 {
		<-started
	}
	tr.Close()
	for range 3 {
		if err := <-errs; !errors.Is(err, mcphttp.ErrClosed) || !errors.Is(err, transport.ErrConnection) {
			t.Errorf("in flight: %v", err)
		}
	}
	if _, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "later"}, transport.RequestOptions{}); !errors.Is(err, mcphttp.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	select {
	case <-tr.Done():
	default:
		t.Error("Done not closed")
	}
}

// A 404 for a request with a session ID means the session has expired;
// DeleteSession sends DELETE with the session's headers and takes 405 as
// success.
func TestSessionExpiryAndDelete(t *testing.T) {
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		switch r.Method {
		case nethttp.MethodDelete:
			w.WriteHeader(405)
		default:
			nethttp.Error(w, "session not found", 404)
		}
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	ctx := context.Background()
	_, err := tr.Request(ctx, &jsonrpc.Request{Method: "tools/list"}, transport.RequestOptions{Dialect: legacyHeaders, Headers: session})
	if !errors.Is(err, mcphttp.ErrSessionExpired) || !errors.Is(err, transport.ErrConnection) {
		t.Fatalf("404 with a session: %v", err)
	}
	if err := tr.DeleteSession(ctx, transport.SessionOptions{Timeout: 5 * time.Second, Headers: session}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	del := reqs[len(reqs)-1]
	if del.Method != nethttp.MethodDelete || del.Header.Get("Mcp-Session-Id") != "sess-1" {
		t.Errorf("%s with %v", del.Method, del.Header)
	}
}

// Notify expects 202; a failure status is an error.
func TestNotify(t *testing.T) {
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		if isMethod("bad")(rec) {
			writeJSON(w, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}`)
			return
		}
		w.WriteHeader(202)
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	ctx := context.Background()
	if err := tr.Notify(ctx, &jsonrpc.Notification{Method: "notifications/roots/list_changed"}, transport.NotifyOptions{Dialect: legacyHeaders}); err != nil {
		t.Fatal(err)
	}
	err := tr.Notify(ctx, &jsonrpc.Notification{Method: "bad"}, transport.NotifyOptions{})
	var e *jsonrpc.Error
	if !errors.As(err, &e) || e.Code != jsonrpc.CodeInvalidRequest {
		t.Fatalf("err %v", err)
	}
	// No GET stream without notifications/initialized.
	for _, r := range srv.requests() {
		if r.Method == nethttp.MethodGet {
			t.Error("GET stream opened")
		}
	}
}

// The standalone GET stream is reopened after the server's retry time with
// Last-Event-ID.
func TestGETStreamReopens(t *testing.T) {
	gets := make(chan recorded, 4)
	notes := make(chan string, 4)
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		if r.Method != nethttp.MethodGet {
			w.WriteHeader(202)
			return
		}
		gets <- rec
		send := sse(w)
		if rec.Header.Get("Last-Event-ID") == "" {
			send("id: g1\nretry: 100\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
			return // closed: the client reconnects
		}
		send("id: g2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/prompts/list_changed\"}\n\n")
		<-r.Context().Done()
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL, OnNotification: func(n *jsonrpc.Notification) { notes <- n.Method }})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.Notify(ctx, &jsonrpc.Notification{Method: "notifications/initialized"}, transport.NotifyOptions{Dialect: legacyHeaders, Headers: session}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"", "g1"} {
		select {
		case g := <-gets:
			if g.Header.Get("Last-Event-ID") != want || g.Header.Get("Mcp-Session-Id") != "sess-1" {
				t.Errorf("GET %d: headers %v", i, g.Header)
			}
		case <-ctx.Done():
			t.Fatalf("GET %d never came", i)
		}
	}
	for _, want := range []string{"notifications/tools/list_changed", "notifications/prompts/list_changed"} {
		select {
		case got := <-notes:
			if got != want {
				t.Errorf("notification %s, want %s", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("no %s", want)
		}
	}
}

// A response that arrives on the GET stream answers its request, and the
// request's own stream, which had nothing more to say, is closed.
func TestResponseOnAnotherStream(t *testing.T) {
	posted := make(chan jsonrpc.ID, 1)
	postClosed := make(chan struct{})
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		switch m := rec.Msg.(type) {
		case *jsonrpc.Notification:
			w.WriteHeader(202)
		case *jsonrpc.Request:
			send := sse(w)
			send(": accepted\n\n")
			posted <- m.ID
			<-r.Context().Done()
			close(postClosed)
		default:
			send := sse(w)
			send("data: %s\n\n", result(<-posted, `{"via":"get"}`))
			<-r.Context().Done()
		}
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.Notify(ctx, &jsonrpc.Notification{Method: "notifications/initialized"}, transport.NotifyOptions{Dialect: legacyHeaders}); err != nil {
		t.Fatal(err)
	}
	resp, err := tr.Request(ctx, &jsonrpc.Request{Method: "tools/call"}, transport.RequestOptions{Dialect: legacyHeaders})
	if err != nil || string(resp.Result) != `{"via":"get"}` {
		t.Fatalf("%+v %v", resp, err)
	}
	select {
	case <-postClosed:
	case <-ctx.Done():
		t.Fatal("the POST's stream was left open")
	}
}

type callKey struct{}

// A server request on a call's stream relates to that call (MCP
// 2025-11-25): its handler's context carries the call's context values,
// while the handler of one on the GET stream carries none.
func TestServerRequestOnCallStreamCarriesCallValues(t *testing.T) {
	answers := make(chan *jsonrpc.Response, 2)
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		switch m := rec.Msg.(type) {
		case nil:
			if r.Method != nethttp.MethodGet {
				w.WriteHeader(405)
				return
			}
			send := sse(w)
			send("id: g1\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"srv-get\",\"method\":\"roots/list\",\"params\":{}}\n\n")
			<-r.Context().Done()
		case *jsonrpc.Notification:
			w.WriteHeader(202)
		case *jsonrpc.Response:
			answers <- m
			w.WriteHeader(202)
		case *jsonrpc.Request:
			send := sse(w)
			send("data: {\"jsonrpc\":\"2.0\",\"id\":\"srv-%s\",\"method\":\"elicitation/create\",\"params\":{}}\n\n", m.ID)
			var resp *jsonrpc.Response
			for resp = range answers {
				if resp.ID == jsonrpc.StringID("srv-"+m.ID.String()) {
					break
				}
			}
			send("data: %s\n\n", result(m.ID, string(resp.Result)))
		}
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL, OnServerRequest: func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		v, _ := ctx.Value(callKey{}).(string)
		return json.Marshal(map[string]string{"call": v})
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{"first", "second"} {
		cctx := context.WithValue(ctx, callKey{}, name)
		resp, err := tr.Request(cctx, &jsonrpc.Request{Method: "tools/call"}, transport.RequestOptions{Dialect: legacyHeaders, Headers: session})
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`{"call":%q}`, name); string(resp.Result) != want {
			t.Errorf("the request on the %s call's stream was answered with %s, want %s", name, resp.Result, want)
		}
	}
	if err := tr.Notify(ctx, &jsonrpc.Notification{Method: "notifications/initialized", Params: json.RawMessage(`{}`)},
		transport.NotifyOptions{Dialect: legacyHeaders, Headers: session}); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-answers:
		if a.ID != jsonrpc.StringID("srv-get") || string(a.Result) != `{"call":""}` {
			t.Errorf("the GET stream's request was answered %v %s", a.ID, a.Result)
		}
	case <-ctx.Done():
		t.Fatal("no answer to the GET stream's request")
	}
}
