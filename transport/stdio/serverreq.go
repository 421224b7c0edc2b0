package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"

	"github.com/snodo/snodo/jsonrpc"
)

// serverRequest is a server-to-client request handed to the dispatcher and
// not yet answered.
type serverRequest struct {
	id      jsonrpc.ID
	cancel  context.CancelFunc
	ctx     context.Context
	replied atomic.Bool
}

// handleServerRequest hands a request from the server to the dispatcher
// (the client's admission, or Config.OnServerRequest under
// MaxServerRequests), with a context that the server's
// notifications/cancelled and the end of the connection cancel. It never
// blocks the reader: the dispatcher does not.
func (c *Conn) handleServerRequest(req *jsonrpc.Request) {
	ctx, cancel := context.WithCancel(c.handlerCtx)
	sr := &serverRequest{id: req.ID, cancel: cancel, ctx: ctx}
	c.mu.Lock()
	dispatch := c.onRequest
	if _, dup := c.serverReqs[req.ID]; !dup {
		c.serverReqs[req.ID] = sr
	}
	c.mu.Unlock()
	dispatch(ctx, req, sr.replyFunc(c))
}

// replyFunc returns the ReplyFunc of sr: the first call answers, unless the
// request was cancelled or the connection stopped; later calls do nothing.
func (sr *serverRequest) replyFunc(c *Conn) func(json.RawMessage, error) {
	return func(result json.RawMessage, err error) {
		if !sr.replied.CompareAndSwap(false, true) {
			return
		}
		c.mu.Lock()
		if c.serverReqs[sr.id] == sr {
			delete(c.serverReqs, sr.id)
		}
		c.mu.Unlock()
		// A stopped connection or a request the server cancelled gets no
		// answer (MCP: the receiver of a cancellation does not respond).
		if sr.ctx.Err() != nil {
			return
		}
		sr.cancel()
		c.answer(sr.id, result, err)
	}
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
	if _, serr := c.send(resp, false); serr != nil && c.stopped() == nil && !errors.Is(serr, ErrQueueFull) {
		// Not encodable (a result that is not valid JSON): the server
		// still gets exactly one answer.
		c.send(jsonrpc.NewErrorResponse(id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "invalid answer: " + serr.Error()}), false)
	}
}
