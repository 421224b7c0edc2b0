package snodo

import (
	"context"
	"encoding/json"
)

// Handler answers what a server asks of the client: elicitation/create,
// sampling/createMessage and roots/list, whether it arrives as a
// server-to-client request (legacy era) or as an entry of an
// input_required result (2026-07-28). The same Handler serves both eras.
//
// params is the request's params as sent by the server; the result is the
// JSON to answer with. A *jsonrpc.Error is answered with its code, message
// and data; any other error is answered -32603 with its text.
//
// Native Go handlers implement it directly; the Wasm host
// (handlers/wasm) implements it for sandboxed modules.
type Handler interface {
	HandleRequest(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// HandlerFunc adapts a function to the Handler interface.
type HandlerFunc func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

// HandleRequest calls f.
func (f HandlerFunc) HandleRequest(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return f(ctx, method, params)
}
