package snodo_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/subbuf"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// "Listen (modern subscriptions/listen through the transport's listener):
// a filter in, the accepted filter and a subscription out."
func TestListenModernThroughTransportListener(t *testing.T) {
	c, f := connectModern(t, noMore)
	f.listen = func(req *jsonrpc.Request, sub *subbuf.Buffer[transport.Event]) (json.RawMessage, error) {
		sub.Push(transport.Event{Method: "notifications/tools/list_changed", Params: json.RawMessage(`{}`)})
		sub.Finish(nil)
		return json.RawMessage(`{"notifications":{"toolsListChanged":true}}`), nil
	}
	ctx := context.Background()
	accepted, sub, err := c.Listen(ctx, snodo.SubscriptionFilter{ToolsListChanged: true, PromptsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	if !accepted.ToolsListChanged || accepted.PromptsListChanged {
		t.Errorf("accepted %+v", accepted)
	}
	ev, err := sub.Next(ctx)
	if err != nil || ev.Method != "notifications/tools/list_changed" {
		t.Errorf("event %+v %v", ev, err)
	}
	if _, err := sub.Next(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("end %v", err)
	}
	req := f.sent("subscriptions/listen")[0]
	if string(req.param("notifications")) != `{"toolsListChanged":true,"promptsListChanged":true}` || req.meta("io.modelcontextprotocol/protocolVersion") == nil {
		t.Errorf("listen params %s", req.Req.Params)
	}

	// An error before the acknowledgement is returned.
	f.listen = func(*jsonrpc.Request, *subbuf.Buffer[transport.Event]) (json.RawMessage, error) {
		return nil, &jsonrpc.Error{Kind: jsonrpc.KindServer, Code: -32602, Message: "bad filter"}
	}
	if _, _, err := c.Listen(ctx, snodo.SubscriptionFilter{}); err == nil {
		t.Error("listen error lost")
	}

	// A transport without a listener cannot listen.
	m, err := snodo.Connect(ctx, requestOnly{newFake(t, modernServer(noMore))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Listen(ctx, snodo.SubscriptionFilter{}); err == nil {
		t.Error("listen without a transport.Listener")
	}
}

// Legacy emulation: "emulate it cleanly with resources/subscribe and
// list-changed notifications".
func TestListenLegacyEmulation(t *testing.T) {
	c, f := connectLegacy(t, func(fc *fakeCall) *jsonrpc.Response { return result(fc, `{}`) })
	ctx := context.Background()
	accepted, sub, err := c.Listen(ctx, snodo.SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{"file:///a"}})
	if err != nil {
		t.Fatal(err)
	}
	if !accepted.ToolsListChanged || !slices.Equal(accepted.ResourceSubscriptions, []string{"file:///a"}) {
		t.Errorf("accepted %+v", accepted)
	}
	if len(f.sent("resources/subscribe")) != 1 {
		t.Error("resources/subscribe not sent")
	}
	f.notify("notifications/prompts/list_changed", `{}`) // not asked for
	f.notify("notifications/resources/updated", `{"uri":"file:///b"}`)
	f.notify("notifications/tools/list_changed", `{}`)
	f.notify("notifications/resources/updated", `{"uri":"file:///a"}`)
	for _, want := range []string{"notifications/tools/list_changed", "notifications/resources/updated"} {
		ev, err := sub.Next(ctx)
		if err != nil || ev.Method != want {
			t.Errorf("event %+v %v, want %s", ev, err, want)
		}
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	if got := f.sent("resources/unsubscribe"); len(got) != 1 || string(got[0].param("uri")) != `"file:///a"` {
		t.Errorf("unsubscribe %v", got)
	}

	// A server without listChanged for tools: not accepted.
	f2 := newFake(t, func(fc *fakeCall) *jsonrpc.Response {
		switch fc.Req.Method {
		case "initialize":
			return result(fc, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}`)
		}
		return errorResponse(fc, -32601, "no", "")
	})
	c2, err := snodo.Connect(ctx, f2, &snodo.Options{Era: snodo.EraLegacy})
	if err != nil {
		t.Fatal(err)
	}
	acc, sub2, err := c2.Listen(ctx, snodo.SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{"x"}})
	if err != nil || acc.ToolsListChanged || len(acc.ResourceSubscriptions) != 0 {
		t.Errorf("accepted %+v %v", acc, err)
	}
	c2.Close()
	if _, err := sub2.Next(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("Close should end legacy subscriptions: %v", err)
	}
}

// doneFake is a fake that reports the end of its connection, as stdio does.
type doneFake struct {
	*fake
	done chan struct{}
}

func (d doneFake) Done() <-chan struct{} { return d.done }
func (d doneFake) Err() error {
	select {
	case <-d.done:
		return &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeConnectionClosed, Message: "server exited"}
	default:
		return nil
	}
}

// "open subscriptions end with a -32000 error" when the connection goes:
// emulated legacy ones too, on a transport that reports its end.
func TestListenLegacyEndsWithTheConnection(t *testing.T) {
	d := doneFake{newFake(t, legacyServer("2025-11-25", noMore)), make(chan struct{})}
	c, err := snodo.Connect(context.Background(), d, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, sub, err := c.Listen(context.Background(), snodo.SubscriptionFilter{ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	close(d.done)
	var e *jsonrpc.Error
	if _, err := sub.Next(context.Background()); !errors.As(err, &e) || e.Code != jsonrpc.CodeConnectionClosed {
		t.Errorf("next after the connection ended: %v", err)
	}
	// A subscription opened afterwards ends at once, the same way.
	for {
		_, sub2, err := c.Listen(context.Background(), snodo.SubscriptionFilter{ToolsListChanged: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = sub2.Next(context.Background())
		if errors.As(err, &e) && e.Code == jsonrpc.CodeConnectionClosed {
			break
		}
		// The watcher has not run yet: the subscription was open; retry.
		sub2.Close()
	}
}
