// Package admit is the one admission gate of Snodo's server requests: a
// counter of the handlers running at once. The client keeps one Gate for a
// connection and admits through it every request the server sends, a
// legacy server-to-client request and each input request of a 2026-07-28
// input_required result alike; a transport used without the client
// answers through Serve, which uses the same Gate.
package admit

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// DefaultLimit is the default number of server requests whose handlers
// run at once on a connection: the default of snodo.Options.MaxServerRequests
// (and of the runner's MaxServerRequests), of a transport used without the
// client, and of the instances of a Wasm module.
const DefaultLimit = 16

// Gate counts the handlers running at once, up to a limit.
type Gate struct {
	slots chan struct{}
}

// New returns a Gate of limit slots; limit <= 0 means DefaultLimit.
func New(limit int) *Gate {
	if limit <= 0 {
		limit = DefaultLimit
	}
	return &Gate{slots: make(chan struct{}, limit)}
}

// Limit returns the number of slots.
func (g *Gate) Limit() int { return cap(g.slots) }

// Running returns the number of slots taken.
func (g *Gate) Running() int { return len(g.slots) }

// TryAcquire takes a slot if one is free.
func (g *Gate) TryAcquire() bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// Acquire waits for a slot until ctx ends. A ctx that has ended gets no
// slot, even a free one.
func (g *Gate) Acquire(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Release gives a slot back.
func (g *Gate) Release() { <-g.slots }

// OverLimit is the error of a server request refused because every slot is
// taken: -32603, without running the handler.
func (g *Gate) OverLimit() *jsonrpc.Error {
	return &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("too many server requests in progress (limit %d)", g.Limit())}
}

// Serve returns the dispatcher of a transport used without the client: fn
// answers each admitted request in the work it returns, under g; a request
// over the limit is answered -32603 without running fn, and a panic in fn
// is answered -32603. A nil fn answers -32601 to every request.
func Serve(fn transport.ServerRequestFunc, g *Gate) transport.DispatchFunc {
	if fn == nil {
		return func(_ context.Context, req *jsonrpc.Request, reply transport.ReplyFunc) func() {
			reply(nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + req.Method})
			return nil
		}
	}
	return func(ctx context.Context, req *jsonrpc.Request, reply transport.ReplyFunc) func() {
		if !g.TryAcquire() {
			reply(nil, g.OverLimit())
			return nil
		}
		return func() {
			defer g.Release()
			reply(Recover(req.Method, func() (json.RawMessage, error) { return fn(ctx, req) }))
		}
	}
}

// Recover runs fn, turning a panic into a -32603 error of kind handler that
// names method.
func Recover(method string, fn func() (json.RawMessage, error)) (result json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			result, err = nil, &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("handler for %s panicked: %v", method, p)}
		}
	}()
	return fn()
}
