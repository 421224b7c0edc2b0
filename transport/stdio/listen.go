package stdio

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/snodo/snodo/internal/subbuf"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// listenState is one subscriptions/listen request, from the moment it is
// sent until its stream ends.
type listenState struct {
	id  jsonrpc.ID
	sub *subbuf.Buffer[transport.Event] // the producer's end of the subscription

	mu      sync.Mutex
	acked   bool
	settled bool              // the outcome of Listen has been sent on ack
	ack     chan listenResult // buffered: the reader never waits
}

type listenResult struct {
	filter json.RawMessage
	err    error
}

// settle sends the outcome for Listen once; it reports whether this was
// the first outcome.
func (ls *listenState) settleLocked(r listenResult) {
	if !ls.settled {
		ls.settled = true
		ls.ack <- r
	}
}

// notify handles a notification that carries the subscription's ID.
// Notifications before the acknowledgement are dropped: the server must
// not send any (subscriptions.mdx, Acknowledgment).
func (ls *listenState) notify(n *jsonrpc.Notification, filter json.RawMessage) {
	ls.mu.Lock()
	if n.Method == methodAcknowledged {
		if !ls.acked {
			ls.acked = true
			ls.settleLocked(listenResult{filter: filter})
		}
		ls.mu.Unlock()
		return
	}
	acked := ls.acked
	ls.mu.Unlock()
	if acked {
		ls.sub.Push(transport.Event{Method: n.Method, Params: n.Params})
	}
}

// respond handles the response to the listen request: before the
// acknowledgement it is Listen's error; after it, the end of the stream.
func (ls *listenState) respond(resp *jsonrpc.Response) {
	var end error
	if resp.Error != nil {
		end = resp.Error
	}
	ls.mu.Lock()
	if !ls.acked {
		if end == nil {
			end = &jsonrpc.Error{Kind: jsonrpc.KindProtocol, Code: jsonrpc.CodeInternalError, Message: "subscriptions/listen answered before it was acknowledged"}
		}
		ls.settleLocked(listenResult{err: end})
	}
	ls.mu.Unlock()
	ls.sub.Finish(end)
}

// endByServer handles a notifications/cancelled from the server naming the
// listen request: on stdio that is how a server tears a stream down.
func (ls *listenState) endByServer() {
	ls.mu.Lock()
	ls.settleLocked(listenResult{err: transport.ConnectionError("the server cancelled the subscription before acknowledging it", nil)})
	ls.mu.Unlock()
	ls.sub.Finish(nil)
}

// fail ends the stream with the connection's error.
func (ls *listenState) fail(err error) {
	ls.mu.Lock()
	ls.settleLocked(listenResult{err: err})
	ls.mu.Unlock()
	ls.sub.Finish(err)
}

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
		c.mu.Lock()
		r.ID = c.newIDLocked()
		c.mu.Unlock()
	}
	ls := &listenState{id: r.ID, ack: make(chan listenResult, 1)}
	var om *outMsg
	sent := make(chan struct{})
	cfg := subbuf.Config{Max: opts.MaxBuffer, Overflow: subbuf.Policy(opts.Overflow)}
	ls.sub = subbuf.New[transport.Event](ctx, r.ID, cfg, func() error {
		<-sent
		return c.cancelListen(ls, om)
	})

	c.mu.Lock()
	err := c.err
	if err == nil {
		if _, dup := c.listens[r.ID]; dup {
			err = &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("subscription id %v is already open", r.ID)}
		} else if _, dup := c.pending[r.ID]; dup {
			err = &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("request id %v is already in flight", r.ID)}
		} else {
			c.listens[r.ID] = ls
		}
	}
	c.mu.Unlock()
	if err == nil {
		om, err = c.send(&r, false)
	}
	close(sent)
	if err != nil {
		c.dropListen(ls)
		ls.sub.Finish(err)
		return nil, nil, err
	}

	var timerC <-chan time.Time
	if opts.Timeout > 0 {
		t := time.NewTimer(opts.Timeout)
		defer t.Stop()
		timerC = t.C
	}
	select {
	case res := <-ls.ack:
		if res.err != nil {
			c.dropListen(ls)
			ls.sub.Finish(res.err)
			return nil, nil, res.err
		}
		return res.filter, (*transport.Subscription)(ls.sub), nil
	case <-timerC:
		ls.sub.Close()
		return nil, nil, transport.TimeoutError(opts.Timeout)
	case <-ctx.Done():
		ls.sub.Close()
		return nil, nil, transport.ContextError(ctx)
	case <-c.done:
		ls.sub.Finish(c.Err())
		return nil, nil, c.Err()
	}
}

func (c *Conn) dropListen(ls *listenState) {
	c.mu.Lock()
	if c.listens[ls.id] == ls {
		delete(c.listens, ls.id)
	}
	c.mu.Unlock()
}

// cancelListen is the subscription's cancel function: it forgets the
// stream and tells the server, unless the request was never written.
func (c *Conn) cancelListen(ls *listenState, om *outMsg) error {
	c.dropListen(ls)
	if om == nil || om.abandon() {
		return nil
	}
	if err := c.stopped(); err != nil {
		return err
	}
	c.sendCancelled(ls.id, "subscription closed")
	return nil
}
