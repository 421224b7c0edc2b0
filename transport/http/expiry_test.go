package http_test

import (
	"context"
	"errors"
	nethttp "net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	mcphttp "github.com/snodo/snodo/transport/http"
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
