package stdio_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/internal/transporttest"
	"github.com/snodo/snodo/transport/stdio"
)

// cancelledIDs returns the requestIds of the notifications/cancelled the
// server has seen, once there are at least count.
func cancelledParams(t *testing.T, n *notes, count int) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, x := range n.waitN(t, "test/cancelled", count) {
		var p map[string]any
		json.Unmarshal(x.Params, &p)
		out = append(out, p)
	}
	return out
}

// "The connection process monitors the process that called connect/2 and
// closes when it exits": the ctx given to Connect owns the connection.
func TestOwnerContextEndClosesConnection(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	c, err := stdio.Connect(ctx, config("script"))
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		// The server finishes this admitted request before exiting at EOF.
		_, err := c.Request(context.Background(), &jsonrpc.Request{Method: "test/sleep", Params: mustJSON(map[string]int{"ms": 2500})}, transport.RequestOptions{})
		errc <- err
	}()
	call(t, c, "echo", nil, transport.RequestOptions{})
	owner := errors.New("owner went away")
	cancel(owner)
	transporttest.Recv(t, c.Done(), "c.Done()")
	if err := c.Err(); !errors.Is(err, transport.ErrConnection) || !errors.Is(err, owner) {
		t.Fatalf("Err %v, want -32000 wrapping the owner's cause", err)
	}
	if err := transporttest.Recv(t, errc, "errc"); !errors.Is(err, transport.ErrConnection) || !errors.Is(err, owner) {
		t.Fatalf("in-flight request: %v, want -32000 wrapping the owner's cause", err)
	}
	// Closing stdin lets the server finish and exit by itself.
	if state, err := c.Wait(context.Background()); err != nil || !state.Success() {
		t.Fatalf("server ended with %v, %v", state, err)
	}
}

// "An exit signal from another process, such as Process.exit(pid,
// :shutdown), stops it with that reason."
func TestCloseWithCauseStopsWithThatReason(t *testing.T) {
	c := connect(t, config("script"))
	if c.Err() != nil {
		t.Fatal("Err before stopping")
	}
	shutdown := errors.New("shutdown")
	c.CloseWithCause(shutdown)
	c.CloseWithCause(errors.New("second reason is ignored"))
	transporttest.Recv(t, c.Done(), "c.Done()")
	if err := c.Err(); !errors.Is(err, shutdown) || !errors.Is(err, transport.ErrConnection) {
		t.Fatalf("Err %v, want -32000 wrapping shutdown", err)
	}
	_, err := c.Request(context.Background(), &jsonrpc.Request{Method: "echo"}, transport.RequestOptions{})
	if !errors.Is(err, shutdown) {
		t.Fatalf("request after stop: %v", err)
	}
}

// notify/3 waits for the write: to a server that never reads its stdin, a
// notification larger than the pipe cannot be written, and Notify gives up
// at its timeout rather than returning early.
func TestNotifyWaitsForTheWrite(t *testing.T) {
	cfg, n := notedConfig("neverread")
	c := connectHanging(t, cfg)
	n.waitN(t, "test/ready", 1)
	if err := c.Notify(context.Background(), &jsonrpc.Notification{Method: "small"}, transport.NotifyOptions{Timeout: 10 * time.Second}); err != nil {
		t.Fatalf("a small notification fits in the pipe: %v", err)
	}
	big := &jsonrpc.Notification{Method: "big", Params: mustJSON(map[string]string{"pad": strings.Repeat("x", 1<<20)})}
	err := c.Notify(context.Background(), big, transport.NotifyOptions{Timeout: 200 * time.Millisecond})
	if !errors.Is(err, transport.ErrTimeout) {
		t.Fatalf("Notify of 1 MiB to a server that never reads: %v, want a timeout", err)
	}
}

// Writes block when the server never reads its stdin: timeouts, contexts
// and Close must still work.
func TestTimeoutsContextsAndCloseWorkWhenServerNeverReads(t *testing.T) {
	cfg, n := notedConfig("neverread")
	c := connectHanging(t, cfg)
	n.waitN(t, "test/ready", 1)
	big := &jsonrpc.Request{Method: "big", Params: mustJSON(map[string]string{"pad": strings.Repeat("x", 1<<20)})}
	_, err := c.Request(context.Background(), big, transport.RequestOptions{Timeout: 100 * time.Millisecond})
	transporttest.WantCode(t, err, jsonrpc.CodeRequestTimeout)
	// Queued behind the blocked write.
	_, err = c.Request(context.Background(), &jsonrpc.Request{Method: "small"}, transport.RequestOptions{Timeout: 100 * time.Millisecond})
	transporttest.WantCode(t, err, jsonrpc.CodeRequestTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err = c.Request(ctx, &jsonrpc.Request{Method: "small"}, transport.RequestOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("request with a deadline: %v", err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.Request(context.Background(), &jsonrpc.Request{Method: "forever"}, transport.RequestOptions{})
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	transporttest.Recv(t, c.Done(), "c.Done()")
	if err := transporttest.Recv(t, errc, "errc"); !errors.Is(err, stdio.ErrClosed) {
		t.Fatalf("request in flight at Close: %v", err)
	}
}

// "Other server notifications are dropped." — unless the optional hook is
// set, which gets exactly those that no request or subscription claimed.
func TestOtherNotificationsGoToHookOrAreDropped(t *testing.T) {
	cfg, n := notedConfig("script")
	c := connect(t, cfg)
	call(t, c, "test/notify", map[string]any{"method": "notifications/message", "params": map[string]any{"level": "info", "data": "hello"}}, transport.RequestOptions{})
	call(t, c, "test/notify", map[string]any{"method": "notifications/progress", "params": map[string]any{"progressToken": "nobody", "progress": 1}}, transport.RequestOptions{})
	msgs := n.waitN(t, "notifications/message", 1)
	if string(msgs[0].Params) != `{"data":"hello","level":"info"}` {
		t.Fatalf("hook got %s", msgs[0].Params)
	}
	n.waitN(t, "notifications/progress", 1)

	// Without a hook they are dropped and nothing else changes.
	plain := connect(t, config("script"))
	call(t, plain, "test/notify", map[string]any{"method": "notifications/message", "params": map[string]any{}}, transport.RequestOptions{})
	call(t, plain, "echo", nil, transport.RequestOptions{})
}

type fixedPolicy struct{}

func (fixedPolicy) TransportPolicy(*jsonrpc.Request) transport.Policy {
	return transport.Policy{Headers: []transport.Header{{Name: "X-Ignored", Value: "1"}}}
}

// ":headers - ... A transport that has no headers ignores them." and
// ":on_response_headers" is for transports with headers: stdio sends the
// same line with or without them and never calls the function.
func TestHeadersDialectAndExtensionAreIgnored(t *testing.T) {
	c := connect(t, config("script"))
	called := false
	resp := call(t, c, "echo", map[string]int{"x": 1}, transport.RequestOptions{
		Dialect:           fixedPolicy{},
		Extension:         fixedPolicy{},
		Headers:           []transport.Header{{Name: "MCP-Protocol-Version", Value: "2025-11-25"}, {Name: "Mcp-Session-Id", Value: "abc"}},
		OnResponseHeaders: func([]transport.Header) { called = true },
	})
	if string(resp.Result) != `{"x":1}` || called {
		t.Fatalf("result %s, OnResponseHeaders called: %v", resp.Result, called)
	}
}
