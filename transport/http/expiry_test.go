package http_test

import (
	"context"
	"encoding/json"
	"errors"
	nethttp "net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	mcphttp "github.com/snodo/snodo/transport/http"
	"github.com/snodo/snodo/transport/internal/transporttest"
)

// A server that sends one event and drops the request's stream each time
// is not resumed without limit: counting any event as progress would
// reconnect it until the caller's timeout. The request fails after
// maxResumes (5) reconnections, long before its timeout.
func TestResumeBoundedWhenStreamDropsAfterEachEvent(t *testing.T) {
	var gets atomic.Int32
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		if r.Method == nethttp.MethodGet {
			n := gets.Add(1)
			send := sse(w)
			// One event, then the stream is dropped, every time.
			send("id: ev-%d\nretry: 100\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n", n+1)
			return
		}
		if reqOf(rec) != nil {
			send := sse(w)
			send("id: ev-1\nretry: 100\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n")
			return
		}
		w.WriteHeader(202)
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL, OnNotification: func(*jsonrpc.Notification) {}})
	// The timeout only bounds the wait; the verdict is the error.
	_, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "tools/call"}, transport.RequestOptions{
		Dialect: legacyHeaders, Headers: session, Timeout: 2 * time.Minute,
	})
	if !errors.Is(err, transport.ErrConnection) || !strings.Contains(err.Error(), "could not be resumed after 5 attempts") {
		t.Fatalf("err %v, want the resumption given up", err)
	}
	if n := gets.Load(); n != 5 {
		t.Errorf("%d reconnections, want 5", n)
	}
}

// lostHook returns a StreamWatcher hook and the channel it reports on.
func lostHook(tr *mcphttp.Transport) <-chan error {
	lost := make(chan error, 4)
	tr.OnStreamLost(func(err error) { lost <- err })
	return lost
}

// A server restarted without the session answers the GET stream 404: the
// transport reports the stream lost, with an error wrapping
// ErrSessionExpired, instead of returning silently.
func TestGETStream404ReportsSessionGone(t *testing.T) {
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		if r.Method == nethttp.MethodGet {
			nethttp.Error(w, "unknown session", 404)
			return
		}
		w.WriteHeader(202)
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	lost := lostHook(tr)
	if err := tr.Notify(context.Background(), &jsonrpc.Notification{Method: "notifications/initialized"}, transport.NotifyOptions{Dialect: legacyHeaders, Headers: session}); err != nil {
		t.Fatal(err)
	}
	err := transporttest.Recv(t, lost, "the report of the lost GET stream")
	if !errors.Is(err, mcphttp.ErrSessionExpired) || !errors.Is(err, transport.ErrConnection) {
		t.Fatalf("lost with %v, want the session expired", err)
	}
}

// A GET stream dropped after each event is reopened maxGETFailures (5)
// times in a row, then reported lost; before, any event reset the count and
// it was reopened until Close.
func TestGETStreamDroppedAfterEachEventGivesUp(t *testing.T) {
	var gets atomic.Int32
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		if r.Method == nethttp.MethodGet {
			n := gets.Add(1)
			sse(w)("id: g%d\nretry: 100\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n", n)
			return
		}
		w.WriteHeader(202)
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL, OnNotification: func(*jsonrpc.Notification) {}})
	lost := lostHook(tr)
	if err := tr.Notify(context.Background(), &jsonrpc.Notification{Method: "notifications/initialized"}, transport.NotifyOptions{Dialect: legacyHeaders, Headers: session}); err != nil {
		t.Fatal(err)
	}
	err := transporttest.Recv(t, lost, "the report of the lost GET stream")
	if !errors.Is(err, transport.ErrConnection) || !strings.Contains(err.Error(), "could not be reopened after 5 attempts") {
		t.Fatalf("lost with %v", err)
	}
	if n := gets.Load(); n != 6 {
		t.Errorf("%d GETs, want the first and 5 reopenings", n)
	}
}

// A 404 to the POST of a request with a session marks the request as not
// delivered (safe to send again in a new session); a 404 to the
// resumption of its stream does not: the server had the request.
func TestSessionExpiredNotDeliveredOnlyForThePOST(t *testing.T) {
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		if req := reqOf(rec); req != nil && req.Method == "tools/call" {
			sse(w)("id: ev-1\nretry: 100\ndata: \n\n")
			return // dropped: resumed with GET, which 404s
		}
		nethttp.Error(w, "unknown session", 404)
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	ctx := context.Background()
	_, err := tr.Request(ctx, &jsonrpc.Request{Method: "tools/list"}, transport.RequestOptions{Dialect: legacyHeaders, Headers: session, Timeout: time.Minute})
	if !errors.Is(err, mcphttp.ErrSessionExpired) || !errors.Is(err, transport.ErrNotDelivered) {
		t.Fatalf("404 to the POST: %v", err)
	}
	_, err = tr.Request(ctx, &jsonrpc.Request{Method: "tools/call"}, transport.RequestOptions{Dialect: legacyHeaders, Headers: session, Timeout: time.Minute})
	if !errors.Is(err, mcphttp.ErrSessionExpired) || errors.Is(err, transport.ErrNotDelivered) {
		t.Fatalf("404 to the resumption: %v", err)
	}
}

// notifications/initialized of a new session replaces the GET stream of
// the old one: the new stream carries the new session ID, the old one is
// closed, and its end is not reported as lost.
func TestGETStreamFollowsNewSession(t *testing.T) {
	gets := make(chan recorded, 4)
	oldClosed := make(chan struct{})
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		if r.Method != nethttp.MethodGet {
			w.WriteHeader(202)
			return
		}
		gets <- rec
		sse(w)(": open\n\n")
		<-r.Context().Done()
		if rec.Header.Get("Mcp-Session-Id") == "sess-1" {
			close(oldClosed)
		}
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	lost := lostHook(tr)
	ctx := context.Background()
	for _, id := range []string{"sess-1", "sess-2"} {
		h := []transport.Header{{Name: "Mcp-Session-Id", Value: id}}
		if err := tr.Notify(ctx, &jsonrpc.Notification{Method: "notifications/initialized"}, transport.NotifyOptions{Dialect: legacyHeaders, Headers: h}); err != nil {
			t.Fatal(err)
		}
		select {
		case g := <-gets:
			if got := g.Header.Get("Mcp-Session-Id"); got != id {
				t.Fatalf("GET with session %q, want %q", got, id)
			}
		case <-time.After(time.Minute):
			t.Fatalf("no GET for %s", id)
		}
	}
	select {
	case <-oldClosed:
	case <-time.After(time.Minute):
		t.Fatal("the old session's GET stream stayed open")
	}
	tr.Close()
	select {
	case err := <-lost:
		t.Fatalf("reported lost: %v", err)
	default:
	}
}

// 2026-07-28: a subscriptions/listen stream the server drops after an
// event ends the subscription with a -32000 error at once; it is never
// reopened (the era has no resumption), so nothing waits for ever.
func TestModernListenStreamDroppedEndsSubscription(t *testing.T) {
	var posts atomic.Int32
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		posts.Add(1)
		send := sse(w)
		send("id: 1\nretry: 100\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"notifications\":{\"toolsListChanged\":true}}}\n\n")
		send("id: 2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds the waits only
	defer cancel()
	_, sub, err := tr.Listen(ctx, &jsonrpc.Request{Method: "subscriptions/listen", Params: json.RawMessage(`{}`)},
		transport.ListenOptions{Dialect: modernHeaders, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var end error
	for end == nil {
		_, end = sub.Next(ctx)
	}
	if !errors.Is(end, transport.ErrConnection) || !strings.Contains(end.Error(), "closed the subscription stream") {
		t.Fatalf("subscription ended with %v", end)
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("%d POSTs, want the one listen", n)
	}
}
