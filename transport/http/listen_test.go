package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	nethttp "net/http"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	mcphttp "github.com/snodo/snodo/transport/http"
)

// subscriptions/listen: the acknowledgement, then events on the POST's
// stream; closing the subscription closes the stream.
func TestListen(t *testing.T) {
	closed := make(chan struct{})
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		send := sse(w)
		send("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"notifications\":{\"toolsListChanged\":true}}}\n\n")
		send(":\n\n")
		send("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"params\":{}}\n\n")
		send("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"x://1\"}}\n\n")
		<-r.Context().Done()
		close(closed)
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	filter, sub, err := tr.Listen(ctx, &jsonrpc.Request{Method: "subscriptions/listen", Params: json.RawMessage(`{"notifications":{"toolsListChanged":true}}`)},
		transport.ListenOptions{Dialect: modernHeaders, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(string(filter), `{"toolsListChanged":true}`) {
		t.Errorf("filter %s", filter)
	}
	for _, want := range []string{"notifications/tools/list_changed", "notifications/resources/updated"} {
		ev, err := sub.Next(ctx)
		if err != nil || ev.Method != want {
			t.Fatalf("event %+v %v, want %s", ev, err, want)
		}
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("closing the subscription did not close the stream")
	}
	if _, err := sub.Next(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("after Close: %v", err)
	}
	if h := srv.requests()[0].Header; h.Get("Mcp-Protocol-Version") != "2026-07-28" {
		t.Errorf("headers %v", h)
	}
}

// An error before the acknowledgement is Listen's error; the server's
// response after it ends the subscription; Close ends it with -32000.
func TestListenEnds(t *testing.T) {
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		req := reqOf(rec)
		switch string(req.Params) {
		case `{"refuse":true}`:
			writeJSON(w, 400, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad filter"}}`)
		case `{"end":true}`:
			send := sse(w)
			send("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"notifications\":{}}}\n\n")
			send("data: %s\n\n", result(req.ID, `{}`))
		default:
			send := sse(w)
			send("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"notifications\":{}}}\n\n")
			<-r.Context().Done()
		}
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := transport.ListenOptions{Dialect: modernHeaders, Timeout: 5 * time.Second}
	_, _, err := tr.Listen(ctx, &jsonrpc.Request{Method: "subscriptions/listen", Params: json.RawMessage(`{"refuse":true}`)}, opts)
	var e *jsonrpc.Error
	if !errors.As(err, &e) || e.Code != jsonrpc.CodeInvalidParams || e.Kind != jsonrpc.KindServer {
		t.Fatalf("refused: %v", err)
	}
	_, sub, err := tr.Listen(ctx, &jsonrpc.Request{Method: "subscriptions/listen", Params: json.RawMessage(`{"end":true}`)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Next(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("server's end: %v", err)
	}
	_, sub, err = tr.Listen(ctx, &jsonrpc.Request{Method: "subscriptions/listen", Params: json.RawMessage(`{}`)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tr.Close()
	if _, err := sub.Next(ctx); !errors.Is(err, mcphttp.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}
