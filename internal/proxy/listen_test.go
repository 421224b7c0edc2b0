package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/jsonrpc"
	mcphttp "github.com/snodo/snodo/transport/http"
)

// A 2026-07-28 host's subscriptions/listen against a legacy server: the
// acknowledgement, then the server's resource update, both under the
// host's subscription ID; when the server's side ends (here, the client
// is closed), the terminal result.
func TestListenCarriesEventsAndTerminalResult(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "subs", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	s.AddResource(&mcp.Resource{URI: "x://a", Name: "a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer srv.Close()
	defer srv.CloseClientConnections()

	tr, err := mcphttp.New(mcphttp.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := snodo.Connect(ctx, tr, &snodo.Options{Era: snodo.EraLegacy})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hostIn, hostWrites := io.Pipe()
	hostReads, proxyOut := io.Pipe()
	p := New(Config{}, hostIn, proxyOut)
	served := make(chan error, 1)
	go func() { served <- p.Serve(context.Background(), c) }()
	defer func() {
		hostWrites.Close()
		proxyOut.Close()
	}()
	lines := make(chan map[string]json.RawMessage, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(hostReads)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
	}()
	next := func() map[string]json.RawMessage {
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatal("the proxy's output ended")
			}
			return m
		case <-ctx.Done():
			t.Fatal("nothing more from the proxy")
		}
		return nil
	}
	subID := func(m map[string]json.RawMessage, member string) string {
		var v struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		_ = json.Unmarshal(m[member], &v)
		return string(v.Meta[metaSubscriptionID])
	}

	if _, err := io.WriteString(hostWrites, `{"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"notifications":{"resourceSubscriptions":["x://a"]}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	ack := next()
	var accepted struct {
		Notifications snodo.SubscriptionFilter `json:"notifications"`
	}
	_ = json.Unmarshal(ack["params"], &accepted)
	if string(ack["method"]) != `"notifications/subscriptions/acknowledged"` || subID(ack, "params") != `"sub-1"` ||
		len(accepted.Notifications.ResourceSubscriptions) != 1 {
		t.Fatalf("first message %v, want the acknowledgement of sub-1 with x://a", ack)
	}
	if err := s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "x://a"}); err != nil {
		t.Fatal(err)
	}
	ev := next()
	if string(ev["method"]) != `"notifications/resources/updated"` || subID(ev, "params") != `"sub-1"` {
		t.Fatalf("event %v, want the update under sub-1", ev)
	}
	c.Close() // the server's side ends
	end := next()
	var res struct {
		ResultType string `json:"resultType"`
	}
	_ = json.Unmarshal(end["result"], &res)
	if string(end["id"]) != `"sub-1"` || res.ResultType != "complete" || subID(end, "result") != `"sub-1"` {
		t.Errorf("end %v, want the terminal result of sub-1", end)
	}
	hostWrites.Close()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	proxyOut.Close()
	for range lines {
	}
}

// Hostile event params: what is not an object is dropped, and the host's
// subscription ID replaces whatever the server put in _meta.
func TestTagEvent(t *testing.T) {
	id := jsonrpc.StringID("h")
	for in, want := range map[string]string{
		``:     `{"_meta":{"io.modelcontextprotocol/subscriptionId":"h"}}`,
		`null`: `{"_meta":{"io.modelcontextprotocol/subscriptionId":"h"}}`,
		`[1]`:  ``,
		`"x"`:  ``,
		`{"uri":"a","_meta":{"io.modelcontextprotocol/subscriptionId":99,"k":1}}`: `{"_meta":{"io.modelcontextprotocol/subscriptionId":"h","k":1},"uri":"a"}`,
		`{"_meta":[1],"uri":"a"}`: `{"_meta":{"io.modelcontextprotocol/subscriptionId":"h"},"uri":"a"}`,
	} {
		got, ok := TagEvent(json.RawMessage(in), id)
		if want == "" {
			if ok {
				t.Errorf("TagEvent(%s) = %s, want it dropped", in, got)
			}
			continue
		}
		if !ok || string(got) != want {
			t.Errorf("TagEvent(%s) = %s %v, want %s", in, got, ok, want)
		}
	}
}
