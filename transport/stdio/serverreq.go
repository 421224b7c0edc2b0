package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"time"

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
//
// The work of an admitted request runs in a goroutine of its own, or, when
// the reader is a caller (holder) and no other call is in flight, it is
// returned for that caller to run once it has lent the baton: no goroutine
// is started or woken, which is most of the cost of a server request
// answered quickly (an elicitation answered by a native or Wasm handler).
// Its context then also ends at the caller's deadline or with the caller's
// context, since the caller cannot return before the work does.
func (c *Conn) handleServerRequest(req *jsonrpc.Request, holder *holdState) (inline func()) {
	ctx, cancel := context.WithCancel(c.handlerCtx)
	sr := &serverRequest{id: req.ID, cancel: cancel, ctx: ctx}
	c.mu.Lock()
	dispatch := c.onRequest
	if _, dup := c.serverReqs[req.ID]; !dup {
		c.serverReqs[req.ID] = sr
	}
	c.mu.Unlock()
	hctx, untie := ctx, func() {}
	if holder != nil && c.npending.Load() <= 1 {
		hctx, untie = holder.tie(ctx)
	} else {
		holder = nil
	}
	work := dispatch(hctx, req, sr.replyFunc(c))
	switch {
	case work == nil:
		untie()
		return nil
	case holder == nil:
		go work()
		return nil
	}
	return func() {
		defer untie()
		work()
	}
}

// holdState is what a caller holding the baton tells the reader about
// itself, for a server request it may run (see handleServerRequest).
type holdState struct {
	ctx      context.Context
	deadline time.Time // zero: none
}

// tie returns ctx, ended also at h's deadline and with h's context (its
// cause kept), and the function that releases what tie made.
func (h *holdState) tie(ctx context.Context) (context.Context, func()) {
	if h.deadline.IsZero() && h.ctx.Done() == nil {
		return ctx, func() {}
	}
	t := &tied{}
	if !h.deadline.IsZero() {
		ctx, t.cancelDeadline = context.WithDeadline(ctx, h.deadline)
	}
	if caller := h.ctx; caller.Done() != nil {
		ctx, t.cancel = context.WithCancelCause(ctx)
		t.stop = context.AfterFunc(caller, func() { t.cancel(context.Cause(caller)) })
	}
	return ctx, t.release
}

// tied is what tie made.
type tied struct {
	cancelDeadline context.CancelFunc
	cancel         context.CancelCauseFunc
	stop           func() bool
}

func (t *tied) release() {
	if t.stop != nil {
		t.stop()
		t.cancel(nil)
	}
	if t.cancelDeadline != nil {
		t.cancelDeadline()
	}
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
