package stdio_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/internal/transporttest"
)

func listenRequest(filter string) *jsonrpc.Request {
	return &jsonrpc.Request{Method: "subscriptions/listen", Params: json.RawMessage(`{"notifications":` + filter + `}`)}
}

func listen(t *testing.T, c interface {
	Listen(context.Context, *jsonrpc.Request, transport.ListenOptions) (json.RawMessage, *transport.Subscription, error)
}, filter string) *transport.Subscription {
	t.Helper()
	_, sub, err := c.Listen(context.Background(), listenRequest(filter), transport.ListenOptions{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	return sub
}

func next(t *testing.T, sub *transport.Subscription) (transport.Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev, err := sub.Next(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("Next: nothing arrived")
	}
	return ev, err
}

// "The connection process correlates the acknowledgement, the events, and
// the terminal response by the subscription ID (the request ID, carried in
// each notification's _meta["io.modelcontextprotocol/subscriptionId"])":
// several subscriptions with interleaved events each get their own, in
// order, alongside ordinary requests.
func TestSeveralSubscriptionsGetTheirOwnInterleavedEvents(t *testing.T) {
	c := connect(t, config("script"))
	subs := []*transport.Subscription{listen(t, c, `{"toolsListChanged":true}`), listen(t, c, `{}`), listen(t, c, `{}`)}
	// A string ID works as well as the assigned integers.
	_, strSub, err := c.Listen(context.Background(), &jsonrpc.Request{ID: jsonrpc.StringID("listen-s"), Method: "subscriptions/listen", Params: json.RawMessage(`{"notifications":{}}`)}, transport.ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer strSub.Close()
	subs = append(subs, strSub)
	var ids []jsonrpc.ID
	for _, s := range subs {
		ids = append(ids, s.ID())
	}
	const rounds = 50
	call(t, c, "test/emit", map[string]any{"subs": ids, "count": rounds}, transport.RequestOptions{})
	call(t, c, "echo", nil, transport.RequestOptions{})
	for _, s := range subs {
		for i := range rounds {
			ev, err := next(t, s)
			if err != nil {
				t.Fatal(err)
			}
			var p struct {
				URI string `json:"uri"`
			}
			json.Unmarshal(ev.Params, &p)
			if want := fmt.Sprintf("file:///%v/%d", s.ID(), i); ev.Method != "notifications/resources/updated" || p.URI != want {
				t.Fatalf("subscription %v event %d: %s %s, want uri %s", s.ID(), i, ev.Method, ev.Params, want)
			}
		}
	}
}

// An error response after the acknowledgement ends the stream with that
// error.
func TestErrorResponseAfterAckEndsSubscriptionWithIt(t *testing.T) {
	c := connect(t, config("script"))
	sub := listen(t, c, `{}`)
	call(t, c, "test/end", map[string]any{"sub": sub.ID(), "how": "error"}, transport.RequestOptions{})
	_, err := next(t, sub)
	if je := transporttest.WantCode(t, err, jsonrpc.CodeInternalError); je.Kind != jsonrpc.KindServer {
		t.Fatalf("error %v, want the server's", err)
	}
}

// "a notifications/cancelled from the server naming the listen request
// (its teardown signal on stdio) ends it too" (issue 2)
func TestServerCancelledEndsSubscriptionCleanly(t *testing.T) {
	cfg, n := notedConfig("script")
	c := connect(t, cfg)
	sub := listen(t, c, `{}`)
	call(t, c, "test/end", map[string]any{"sub": sub.ID(), "how": "cancelled"}, transport.RequestOptions{})
	if _, err := next(t, sub); err != io.EOF {
		t.Fatalf("after the server's cancellation: %v, want io.EOF", err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, x := range n.all {
		if x.Method == "notifications/cancelled" {
			t.Fatal("the cancellation for a subscription also reached the notification hook")
		}
	}
}

// "When the server exits or closes its stdin, or close/1 stops the
// connection, open subscriptions end with a -32000 error." — and Next on
// an ended subscription returns at once.
func TestConnectionEndEndsSubscriptionsWithConnectionError(t *testing.T) {
	for _, how := range []string{"close", "exit"} {
		t.Run(how, func(t *testing.T) {
			c := connect(t, config("script"))
			sub := listen(t, c, `{}`)
			if how == "close" {
				c.Close()
			} else {
				c.Request(context.Background(), &jsonrpc.Request{Method: "test/exit", Params: mustJSON(map[string]int{"code": 1})}, transport.RequestOptions{})
			}
			_, err := next(t, sub)
			transporttest.WantCode(t, err, jsonrpc.CodeConnectionClosed)
			// Ended: Next returns at once, even with a context already done.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := sub.Next(ctx); !errors.Is(err, transport.ErrConnection) {
				t.Fatalf("Next on an ended subscription: %v", err)
			}
			// A later Listen fails the same way.
			if _, _, err := c.Listen(context.Background(), listenRequest(`{}`), transport.ListenOptions{}); !errors.Is(err, transport.ErrConnection) {
				t.Fatalf("Listen after the end: %v", err)
			}
		})
	}
}

// "waits :timeout milliseconds for the server's
// notifications/subscriptions/acknowledged": without it, Listen times out
// and the server is told the request is cancelled.
func TestListenTimesOutWithoutAck(t *testing.T) {
	cfg, n := notedConfig("script")
	c := connect(t, cfg)
	// The deadline only keeps the test finite if the timeout is missing.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _, err := c.Listen(ctx, &jsonrpc.Request{ID: jsonrpc.StringID("mute"), Method: "subscriptions/listen", Params: json.RawMessage(`{"forever":true}`)}, transport.ListenOptions{Timeout: 100 * time.Millisecond})
	transporttest.WantCode(t, err, jsonrpc.CodeRequestTimeout)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v: the listen timeout did not apply", err)
	}
	if p := cancelledParams(t, n, 1)[0]; p["requestId"] != "mute" {
		t.Fatalf("cancelled %v", p)
	}
}

// "That process keeps the subscription's buffer (... built from the
// :owner, :ref, :max_buffer, and :overflow options)": the listen options
// reach the buffer. Dropping keeps the newest events; failing ends the
// stream with ErrOverflow and cancels it on the server.
func TestListenBufferOptionsApply(t *testing.T) {
	cfg, n := notedConfig("script")
	c := connect(t, cfg)
	_, drop, err := c.Listen(context.Background(), listenRequest(`{}`), transport.ListenOptions{MaxBuffer: 3, Overflow: transport.OverflowDropOldest})
	if err != nil {
		t.Fatal(err)
	}
	defer drop.Close()
	_, fail, err := c.Listen(context.Background(), &jsonrpc.Request{ID: jsonrpc.StringID("strict"), Method: "subscriptions/listen", Params: json.RawMessage(`{"notifications":{}}`)}, transport.ListenOptions{MaxBuffer: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer fail.Close()
	call(t, c, "test/emit", map[string]any{"subs": []jsonrpc.ID{drop.ID(), fail.ID()}, "count": 10}, transport.RequestOptions{})
	call(t, c, "echo", nil, transport.RequestOptions{})
	for i := 7; i < 10; i++ {
		ev, err := next(t, drop)
		var p struct {
			URI string `json:"uri"`
		}
		json.Unmarshal(ev.Params, &p)
		if want := fmt.Sprintf("file:///%v/%d", drop.ID(), i); err != nil || p.URI != want {
			t.Fatalf("drop-oldest: %s, %v; want %s", p.URI, err, want)
		}
	}
	if d := drop.Dropped(); d != 7 {
		t.Fatalf("dropped %d, want 7", d)
	}
	for range 3 {
		if _, err := next(t, fail); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := next(t, fail); !errors.Is(err, transport.ErrOverflow) {
		t.Fatalf("after overflow: %v, want ErrOverflow", err)
	}
	if p := cancelledParams(t, n, 1)[0]; p["requestId"] != "strict" {
		t.Fatalf("cancelled %v", p)
	}
}
