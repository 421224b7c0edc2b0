package snodo_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// canned is a transport that answers every request at once with one
// result, to measure the client's own cost: building the request and
// decoding the result.
type canned struct{ result json.RawMessage }

func (c canned) Request(_ context.Context, req *jsonrpc.Request, _ transport.RequestOptions) (*jsonrpc.Response, error) {
	if req.Method == "server/discover" {
		return jsonrpc.NewResult(jsonrpc.Int64ID(1), json.RawMessage(discoverResult)), nil
	}
	return jsonrpc.NewResult(jsonrpc.Int64ID(1), c.result), nil
}

func (canned) Close() error { return nil }

func BenchmarkCallToolModern(b *testing.B) {
	c, err := snodo.Connect(context.Background(), canned{json.RawMessage(
		`{"resultType":"complete","content":[{"type":"text","text":"the weather is fine"}],"structuredContent":{"t":21}}`)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"city": "Paris"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.CallTool(context.Background(), "weather", args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkListToolsModern(b *testing.B) {
	c, err := snodo.Connect(context.Background(), canned{json.RawMessage(
		`{"resultType":"complete","tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b","description":"bee","inputSchema":{"type":"object","properties":{"x":{"type":"string"}}}}],"ttlMs":1000,"cacheScope":"public"}`)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := snodo.ListTools(c, context.Background(), ""); err != nil {
			b.Fatal(err)
		}
	}
}

// cannedLegacy is canned for the legacy era: it answers initialize and
// takes notifications.
type cannedLegacy struct{ canned }

func (c cannedLegacy) Request(ctx context.Context, req *jsonrpc.Request, o transport.RequestOptions) (*jsonrpc.Response, error) {
	if req.Method == "initialize" {
		return jsonrpc.NewResult(jsonrpc.Int64ID(1), json.RawMessage(initializeResult("2025-11-25"))), nil
	}
	return c.canned.Request(ctx, req, o)
}

func (cannedLegacy) Notify(context.Context, *jsonrpc.Notification, transport.NotifyOptions) error {
	return nil
}

func BenchmarkCallToolLegacy(b *testing.B) {
	c, err := snodo.Connect(context.Background(), cannedLegacy{canned{json.RawMessage(
		`{"content":[{"type":"text","text":"the weather is fine"}],"structuredContent":{"t":21}}`)}}, &snodo.Options{
		Era: snodo.EraLegacy,
	})
	if err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"city": "Paris"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.CallTool(context.Background(), "weather", args); err != nil {
			b.Fatal(err)
		}
	}
}

// inboundLegacy is cannedLegacy that hands the client's dispatch function
// to the benchmark, to send server requests through it.
type inboundLegacy struct {
	cannedLegacy
	dispatch *transport.DispatchFunc
}

func (t inboundLegacy) SetInbound(d transport.DispatchFunc, _ transport.NotificationFunc) {
	*t.dispatch = d
}

// BenchmarkServerElicit is a server's elicitation/create answered by a Go
// handler: admission, the handler's context, the handler, the check of its
// answer and the reply, without a transport.
func BenchmarkServerElicit(b *testing.B) {
	var dispatch transport.DispatchFunc
	c, err := snodo.Connect(context.Background(), inboundLegacy{cannedLegacy{canned{}}, &dispatch}, &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: snodo.HandlerFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"action":"accept","content":{"answer":"yes"}}`), nil
	})}, Era: snodo.EraLegacy})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := &jsonrpc.Request{ID: jsonrpc.Int64ID(7), Method: abi.MethodElicitationCreate, Params: json.RawMessage(
		`{"message":"Proceed?","requestedSchema":{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}}`)}
	done := make(chan error, 1)
	reply := func(_ json.RawMessage, err error) { done <- err }
	b.ReportAllocs()
	for b.Loop() {
		if work := dispatch(context.Background(), req, reply); work != nil {
			work()
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}
