package stdio

import (
	"context"
	"errors"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport/internal/rpc"
)

// handleServerRequest hands a request from the server to the dispatcher
// (the client's admission, or Config.OnServerRequest's), with a context that the server's
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
	sr, dispatch := c.core.StartServerRequest(c.handlerCtx, req)
	if sr == nil {
		return nil // the connection has stopped
	}
	hctx, untie := sr.Ctx, func() {}
	if holder != nil && c.core.Pending() <= 1 {
		hctx, untie = holder.tie(sr.Ctx)
	} else {
		holder = nil
	}
	work := dispatch(hctx, req, c.core.Reply(sr, c.sendAnswer))
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

// answer queues the answer to a server request (rpc.Answer made it).
func (c *Conn) answer(resp *jsonrpc.Response) {
	if _, serr := c.send(resp, false); serr != nil && c.stopped() == nil && !errors.Is(serr, ErrQueueFull) {
		// Not encodable (a result that is not valid JSON): the server
		// still gets exactly one answer.
		c.send(rpc.InvalidAnswer(resp.ID, serr), false)
	}
}
