package stdio

import (
	"context"
	"encoding/json"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/internal/rpc"
)

// Listen sends req, a subscriptions/listen request, and waits up to
// opts.Timeout for the server's notifications/subscriptions/acknowledged
// carrying the request's ID in _meta["io.modelcontextprotocol/subscriptionId"].
// It returns the acknowledged filter (the ack's params.notifications) and
// the subscription that receives the events carrying that ID. When req.ID
// is zero the request goes out with a fresh integer ID.
//
// The stream ends cleanly (Next returns io.EOF) at the server's response to
// the listen request or its notifications/cancelled naming it; with the
// server's error at an error response after the acknowledgement; and with
// the -32000 connection error when the connection stops. Closing the
// subscription, or ctx ending, sends the server notifications/cancelled.
//
// A JSON-RPC error response before the acknowledgement is returned as the
// error (a *jsonrpc.Error of kind server); a timeout as
// transport.TimeoutError, after telling the server the request is
// cancelled.
func (c *Conn) Listen(ctx context.Context, req *jsonrpc.Request, opts transport.ListenOptions) (json.RawMessage, *transport.Subscription, error) {
	r := *req
	if !r.ID.IsValid() {
		r.ID = c.core.NewID()
	}
	var om *outMsg
	sent := make(chan struct{})
	ls := rpc.NewListen(ctx, r.ID, opts, func(ls *rpc.Listen) error {
		<-sent
		return c.cancelListen(ls, om)
	})
	c.core.Mu.Lock()
	err := c.core.AddListenLocked(ls)
	c.core.Mu.Unlock()
	if err == nil {
		om, err = c.send(&r, false)
	}
	close(sent)
	if err != nil {
		c.core.RemoveListen(ls)
		ls.Finish(err)
		return nil, nil, err
	}
	return ls.Wait(ctx, opts.Timeout, c.done, c.Err, func(error) { c.core.RemoveListen(ls) })
}

// cancelListen is the subscription's cancel function: it forgets the
// stream and tells the server, unless the request was never written.
func (c *Conn) cancelListen(ls *rpc.Listen, om *outMsg) error {
	c.core.RemoveListen(ls)
	if om == nil || om.abandon() {
		return nil
	}
	if err := c.stopped(); err != nil {
		return err
	}
	c.sendCancelled(ls.ID(), "subscription closed")
	return nil
}
