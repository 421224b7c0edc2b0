// Package rpc is the call core of Snodo's transports: what a connection
// does with JSON-RPC messages once it has framed them, whatever carries
// them. A transport (stdio, Streamable HTTP) keeps only its framing — a
// process and its pipes, or POSTs and SSE streams — and hands this core
// every message it reads.
//
// The core holds:
//   - the call table: the requests waiting for their responses, by ID and
//     by progress token, with the IDs it hands out and the check that a
//     caller's own ID is not in flight (Core);
//   - the routing of what the server sends: a response to its call or
//     listen, a progress notification to its call's queue, a cancellation
//     to the server request or subscription it names, a subscription event
//     to its subscription, the rest to the connection's hook
//     (Core.RouteNotification);
//   - the listen state machine: acknowledgement, events, terminal
//     response, cancellation (Listen);
//   - the one path of a server request: the dispatcher installed with
//     transport.Inbound, a context the server's cancellation and the
//     connection's end cancel, one answer, and its encoding
//     (Core.StartServerRequest, Answer);
//   - the await policy: the timeout, its reset on progress up to a total
//     limit, and the delivery of progress in the caller's goroutine
//     (Await).
package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/snodo/snodo/internal/admit"
	"github.com/snodo/snodo/internal/jsoncodec"
	"github.com/snodo/snodo/internal/progq"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// Methods the core routes itself.
const (
	MethodProgress     = "notifications/progress"
	MethodCancelled    = "notifications/cancelled"
	MethodAcknowledged = "notifications/subscriptions/acknowledged"
)

// Call is what the core needs of a transport's call: it is comparable (a
// pointer), and it has a progress token and queue when its caller asked
// for progress.
type Call interface {
	comparable
	// Token returns the call's progress token; zero without
	// RequestOptions.OnProgress.
	Token() jsonrpc.ID
	// Progress returns the call's progress queue, nil without
	// RequestOptions.OnProgress.
	Progress() *progq.Queue
}

// Core is the call core of one connection. Mu guards the core's tables;
// a transport may keep its own per-call state under it too (stdio does:
// the watches of its callers' contexts), so that the methods named
// …Locked, called with Mu held, and the transport's own state change
// together.
type Core[C Call] struct {
	Mu sync.Mutex

	// OnRemove, when set, is called with Mu held for each call that
	// leaves the table other than by StopLocked.
	OnRemove func(C)

	err        error                         // why the connection stopped; nil while running
	pending    map[jsonrpc.ID]C              // requests waiting for a response
	progress   map[jsonrpc.ID]C              // the same, by progress token
	listens    map[jsonrpc.ID]*Listen        // subscriptions/listen by request ID
	serverReqs map[jsonrpc.ID]*ServerRequest // server requests not yet answered
	dispatch   transport.DispatchFunc
	onNotify   transport.NotificationFunc

	nextID   atomic.Int64
	npending atomic.Int32 // len(pending), read without Mu
}

// Init prepares the core. dispatch answers server requests until
// SetInbound replaces it; nil answers -32601 to each.
func (c *Core[C]) Init(dispatch transport.DispatchFunc, onNotify transport.NotificationFunc) {
	c.pending = make(map[jsonrpc.ID]C)
	c.progress = make(map[jsonrpc.ID]C)
	c.listens = make(map[jsonrpc.ID]*Listen)
	c.serverReqs = make(map[jsonrpc.ID]*ServerRequest)
	c.SetInbound(dispatch, onNotify)
}

// SetInbound replaces the dispatcher of server requests and the receiver
// of unrouted notifications, for messages that arrive after it. A nil
// dispatcher answers -32601 to every server request.
func (c *Core[C]) SetInbound(dispatch transport.DispatchFunc, onNotify transport.NotificationFunc) {
	if dispatch == nil {
		dispatch = admit.Serve(nil, nil)
	}
	c.Mu.Lock()
	c.dispatch, c.onNotify = dispatch, onNotify
	c.Mu.Unlock()
}

// Err returns why the connection stopped, nil while it runs.
func (c *Core[C]) Err() error {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	return c.err
}

// ErrLocked is Err with Mu held.
func (c *Core[C]) ErrLocked() error { return c.err }

// Pending returns the number of calls waiting for a response, without Mu.
func (c *Core[C]) Pending() int32 { return c.npending.Load() }

// inFlight is the error of a request whose caller chose an ID in use.
func inFlight(id jsonrpc.ID) *jsonrpc.Error {
	return &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("request id %v is already in flight", id)}
}

// newIDLocked returns an integer ID that no request or subscription in
// flight uses, not even one whose caller chose it.
func (c *Core[C]) newIDLocked() jsonrpc.ID {
	for {
		id := jsonrpc.Int64ID(c.nextID.Add(1))
		if _, used := c.pending[id]; !used && (len(c.listens) == 0 || c.listens[id] == nil) {
			return id
		}
	}
}

// AddLocked enters cl in the call table under *id — a fresh ID when *id
// is zero, which it sets — and under its progress token if it has one. It fails
// with the connection's error once stopped, and with -32600 for an ID
// already in flight.
func (c *Core[C]) AddLocked(id *jsonrpc.ID, cl C) error {
	if c.err != nil {
		return c.err
	}
	if !id.IsValid() {
		*id = c.newIDLocked()
	} else if _, used := c.pending[*id]; used || c.listens[*id] != nil {
		return inFlight(*id)
	}
	c.pending[*id] = cl
	c.npending.Store(int32(len(c.pending)))
	if tok := cl.Token(); tok.IsValid() {
		c.progress[tok] = cl
	}
	return nil
}

// RemoveLocked removes cl, entered under id, if it is still in the
// table, and reports whether it was: the one who removes a call is the
// one who sends it its outcome.
func (c *Core[C]) RemoveLocked(id jsonrpc.ID, cl C) bool {
	if got, ok := c.pending[id]; !ok || got != cl {
		if tok := cl.Token(); tok.IsValid() && c.progress[tok] == cl {
			delete(c.progress, tok)
		}
		return false
	}
	c.removeCallLocked(id, cl)
	return true
}

// Remove is RemoveLocked with Mu taken.
func (c *Core[C]) Remove(id jsonrpc.ID, cl C) bool {
	c.Mu.Lock()
	ok := c.RemoveLocked(id, cl)
	c.Mu.Unlock()
	return ok
}

// LookupLocked returns the call waiting under id.
func (c *Core[C]) LookupLocked(id jsonrpc.ID) (C, bool) {
	cl, ok := c.pending[id]
	return cl, ok
}

// StopLocked records why the connection stopped and empties the call and
// listen tables: it returns the calls, each now to be sent the
// connection's end by its claimer (the caller of StopLocked), and the
// listens to fail. No call or listen is added after it. It returns
// nothing when the connection had already stopped.
func (c *Core[C]) StopLocked(err error) (calls []C, listens []*Listen) {
	if c.err != nil {
		return nil, nil
	}
	c.err = err
	calls = make([]C, 0, len(c.pending))
	for _, cl := range c.pending {
		calls = append(calls, cl)
	}
	clear(c.pending)
	clear(c.progress)
	c.npending.Store(0)
	for _, ls := range c.listens {
		listens = append(listens, ls)
	}
	clear(c.listens)
	return calls, listens
}

// TakeResponse removes from the tables what resp answers: a call (ok) or,
// failing that, a listen (nil if none).
func (c *Core[C]) TakeResponse(resp *jsonrpc.Response) (cl C, ok bool, ls *Listen) {
	c.Mu.Lock()
	if cl, ok = c.pending[resp.ID]; ok {
		c.removeCallLocked(resp.ID, cl)
	} else if ls = c.listens[resp.ID]; ls != nil {
		delete(c.listens, resp.ID)
	}
	c.Mu.Unlock()
	return cl, ok, ls
}

func (c *Core[C]) removeCallLocked(id jsonrpc.ID, cl C) {
	delete(c.pending, id)
	c.npending.Store(int32(len(c.pending)))
	if tok := cl.Token(); tok.IsValid() && c.progress[tok] == cl {
		delete(c.progress, tok)
	}
	if c.OnRemove != nil {
		c.OnRemove(cl)
	}
}

// NewID returns an integer ID that no request or subscription in flight
// uses.
func (c *Core[C]) NewID() jsonrpc.ID {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	return c.newIDLocked()
}

// AddListenLocked enters ls in the listen table under its ID, which must
// not be in flight.
func (c *Core[C]) AddListenLocked(ls *Listen) error {
	if c.err != nil {
		return c.err
	}
	if c.listens[ls.id] != nil {
		return &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("subscription id %v is already open", ls.id)}
	}
	if _, used := c.pending[ls.id]; used {
		return inFlight(ls.id)
	}
	c.listens[ls.id] = ls
	return nil
}

// RemoveListen removes ls from the listen table if it is still there.
func (c *Core[C]) RemoveListen(ls *Listen) {
	c.Mu.Lock()
	if c.listens[ls.id] == ls {
		delete(c.listens, ls.id)
	}
	c.Mu.Unlock()
}

// routing is what the core reads of a notification's params.
type routing struct {
	Meta *struct {
		// SubscriptionID names the notification's subscription: the ID
		// of its subscriptions/listen request.
		SubscriptionID json.RawMessage `json:"io.modelcontextprotocol/subscriptionId"`
	} `json:"_meta"`
	ProgressToken json.RawMessage `json:"progressToken"`
	RequestID     json.RawMessage `json:"requestId"`
	Notifications json.RawMessage `json:"notifications"`
}

// RouteNotification routes a notification from the server: progress to
// the queue of the call with its token, notifications/cancelled to the
// server request or subscription it names, a notification carrying a
// subscription ID to that subscription, and anything else to the hook of
// SetInbound. It never blocks.
func (c *Core[C]) RouteNotification(n *jsonrpc.Notification) {
	var rt routing
	if len(n.Params) > 0 {
		// Params that do not parse are not routed; the hook may see them.
		_ = jsoncodec.Unmarshal(n.Params, &rt)
	}
	switch n.Method {
	case MethodProgress:
		if id, ok := jsonrpc.ParseID(rt.ProgressToken); ok {
			c.Mu.Lock()
			cl, ok := c.progress[id]
			c.Mu.Unlock()
			if ok {
				cl.Progress().Push(n.Params)
				return
			}
		}
	case MethodCancelled:
		if id, ok := jsonrpc.ParseID(rt.RequestID); ok && c.cancelledByServer(id) {
			return
		}
	}
	if rt.Meta != nil {
		if id, ok := jsonrpc.ParseID(rt.Meta.SubscriptionID); ok {
			c.Mu.Lock()
			ls := c.listens[id]
			c.Mu.Unlock()
			if ls != nil {
				ls.notify(n, rt.Notifications)
				return
			}
		}
	}
	c.Mu.Lock()
	hook := c.onNotify
	c.Mu.Unlock()
	if hook != nil {
		hook(n)
	}
}

// cancelledByServer handles a notifications/cancelled from the server for
// id: it cancels the server request running under that ID, or ends the
// subscription opened by the listen request with that ID. It reports
// whether id named either.
func (c *Core[C]) cancelledByServer(id jsonrpc.ID) bool {
	c.Mu.Lock()
	sr := c.serverReqs[id]
	ls := c.listens[id]
	if ls != nil {
		delete(c.listens, id)
	}
	c.Mu.Unlock()
	if sr != nil {
		sr.cancel()
	}
	if ls != nil {
		ls.EndByServer()
	}
	return sr != nil || ls != nil
}

// ServerRequest is a request from the server handed to the dispatcher and
// not yet answered.
type ServerRequest struct {
	id jsonrpc.ID
	// Ctx ends when the server cancels the request, when the connection
	// stops (its parent) and once the request is answered.
	Ctx     context.Context
	cancel  context.CancelFunc
	replied atomic.Bool
}

// StartServerRequest enters req in the table of server requests, under a
// context of life that the server's notifications/cancelled ends, and
// returns it with the dispatcher to hand it to (nil once the connection
// has stopped: nothing is to be answered). A request whose ID is already
// running is dispatched, but only the first can be cancelled.
func (c *Core[C]) StartServerRequest(life context.Context, req *jsonrpc.Request) (*ServerRequest, transport.DispatchFunc) {
	ctx, cancel := context.WithCancel(life)
	sr := &ServerRequest{id: req.ID, Ctx: ctx, cancel: cancel}
	c.Mu.Lock()
	if c.err != nil {
		c.Mu.Unlock()
		cancel()
		return nil, nil
	}
	dispatch := c.dispatch
	if _, dup := c.serverReqs[req.ID]; !dup {
		c.serverReqs[req.ID] = sr
	}
	c.Mu.Unlock()
	return sr, dispatch
}

// Reply returns the ReplyFunc of sr: its first call sends the answer
// (Answer) with send, unless the server cancelled the request or the
// connection stopped (MCP: the receiver of a cancellation does not
// respond); later calls do nothing.
func (c *Core[C]) Reply(sr *ServerRequest, send func(*jsonrpc.Response)) transport.ReplyFunc {
	return func(result json.RawMessage, err error) {
		if !sr.replied.CompareAndSwap(false, true) {
			return
		}
		c.Mu.Lock()
		if c.serverReqs[sr.id] == sr {
			delete(c.serverReqs, sr.id)
		}
		c.Mu.Unlock()
		if sr.Ctx.Err() != nil {
			return
		}
		sr.cancel()
		send(Answer(sr.id, result, err))
	}
}
