package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/snodo/snodo/jsonrpc"
)

// serverRequest is a server-to-client request whose function is running.
type serverRequest struct {
	cancel context.CancelFunc
}

// handleServerRequest starts the function for a request from the server,
// in its own goroutine, or answers at once when there is no function
// (-32601) or MaxServerRequests functions are already running (-32603). It
// never blocks the reader.
func (c *Conn) handleServerRequest(req *jsonrpc.Request) {
	c.mu.Lock()
	fn := c.onRequest
	c.mu.Unlock()
	if fn == nil {
		c.answer(req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + req.Method})
		return
	}
	select {
	case c.sem <- struct{}{}:
	default:
		c.answer(req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("too many server requests in progress (limit %d)", cap(c.sem))})
		return
	}
	ctx, cancel := context.WithCancel(c.handlerCtx)
	sr := &serverRequest{cancel: cancel}
	c.mu.Lock()
	if _, dup := c.serverReqs[req.ID]; !dup {
		c.serverReqs[req.ID] = sr
	}
	c.mu.Unlock()
	go c.runServerRequest(ctx, sr, fn, req)
}

func (c *Conn) runServerRequest(ctx context.Context, sr *serverRequest, fn func(context.Context, *jsonrpc.Request) (json.RawMessage, error), req *jsonrpc.Request) {
	defer func() { <-c.sem }()
	result, err := callServerRequest(ctx, fn, req)
	c.mu.Lock()
	if c.serverReqs[req.ID] == sr {
		delete(c.serverReqs, req.ID)
	}
	c.mu.Unlock()
	// A stopped connection or a request the server cancelled gets no
	// answer (MCP: the receiver of a cancellation does not respond).
	if ctx.Err() != nil {
		return
	}
	sr.cancel()
	c.answer(req.ID, result, err)
}

// callServerRequest runs fn, turning a panic into a -32603 error.
func callServerRequest(ctx context.Context, fn func(context.Context, *jsonrpc.Request) (json.RawMessage, error), req *jsonrpc.Request) (result json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("handler for %s panicked: %v", req.Method, r)}
		}
	}()
	return fn(ctx, req)
}

// answer queues the response to a server-to-client request. An error that
// is not a *jsonrpc.Error is sent as -32603 with its text; a nil result as
// an empty object.
func (c *Conn) answer(id jsonrpc.ID, result json.RawMessage, err error) {
	resp := &jsonrpc.Response{ID: id}
	switch {
	case err != nil:
		var je *jsonrpc.Error
		if !errors.As(err, &je) {
			je = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		resp.Error = je
	case len(result) == 0:
		resp.Result = json.RawMessage("{}")
	default:
		resp.Result = result
	}
	if _, serr := c.send(resp, false); serr != nil && c.stopped() == nil {
		// Not encodable (a result that is not valid JSON): the server
		// still gets exactly one answer.
		c.send(jsonrpc.NewErrorResponse(id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "invalid answer: " + serr.Error()}), false)
	}
}
