package rpc

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/snodo/snodo/internal/jsoncodec"
	"github.com/snodo/snodo/internal/subbuf"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// Listen is one subscriptions/listen request, from the moment it is sent
// until its stream ends: it waits for the server's acknowledgement, then
// pushes each event to its subscription, and ends at the terminal
// response, the server's cancellation or the connection's end.
type Listen struct {
	id  jsonrpc.ID
	sub *subbuf.Buffer[transport.Event] // the producer's end of the subscription

	mu      sync.Mutex
	acked   bool
	settled bool              // the outcome of Wait has been sent on ack
	ack     chan listenResult // buffered: the reader never waits
}

type listenResult struct {
	filter json.RawMessage
	err    error
}

// NewListen returns the state of the listen request with ID id (see
// Core.NewID) and its subscription, owned by ctx,
// holding events as opts say. cancel is the subscription's cancel
// function: it runs once when the consumer closes it, or ctx ends, before
// the stream has ended.
func NewListen(ctx context.Context, id jsonrpc.ID, opts transport.ListenOptions, cancel func(*Listen) error) *Listen {
	ls := &Listen{id: id, ack: make(chan listenResult, 1)}
	cfg := subbuf.Config{Max: opts.MaxBuffer, Overflow: subbuf.Policy(opts.Overflow)}
	ls.sub = subbuf.New[transport.Event](ctx, id, cfg, func() error { return cancel(ls) })
	return ls
}

// ID returns the listen request's ID.
func (ls *Listen) ID() jsonrpc.ID { return ls.id }

func (ls *Listen) settleLocked(r listenResult) {
	if !ls.settled {
		ls.settled = true
		ls.ack <- r
	}
}

// notify handles a notification that carries the subscription's ID.
// Notifications before the acknowledgement are dropped: the server must
// not send any (subscriptions.mdx, Acknowledgment).
func (ls *Listen) notify(n *jsonrpc.Notification, filter json.RawMessage) {
	ls.mu.Lock()
	if n.Method == MethodAcknowledged {
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

// OnStream handles a notification read on the listen request's own stream
// (Streamable HTTP), where everything but a log message or progress
// belongs to the subscription, with or without its ID. It reports false
// for a notification the connection routes as usual.
func (ls *Listen) OnStream(n *jsonrpc.Notification) bool {
	switch n.Method {
	case "notifications/message", MethodProgress:
		return false
	case MethodAcknowledged:
		var p struct {
			Notifications json.RawMessage `json:"notifications"`
		}
		_ = jsoncodec.Unmarshal(n.Params, &p)
		ls.notify(n, p.Notifications)
		return true
	case MethodCancelled:
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		_ = jsoncodec.Unmarshal(n.Params, &p)
		if id, ok := jsonrpc.ParseID(p.RequestID); ok && id == ls.id {
			ls.EndByServer()
			return true
		}
		return false
	}
	ls.notify(n, nil)
	return true
}

// Respond handles the response to the listen request: before the
// acknowledgement it is Wait's error (a JSON-RPC error, of kind server);
// after it, the end of the stream.
func (ls *Listen) Respond(resp *jsonrpc.Response) {
	var end error
	if resp.Error != nil {
		e := *resp.Error
		if e.Kind == "" {
			e.Kind = jsonrpc.KindServer
		}
		end = &e
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

// EndByServer handles a notifications/cancelled from the server naming
// the listen request: the stream ends cleanly (before the
// acknowledgement, Wait fails with -32000).
func (ls *Listen) EndByServer() {
	ls.mu.Lock()
	ls.settleLocked(listenResult{err: transport.ConnectionError("the server cancelled the subscription before acknowledging it", nil)})
	ls.mu.Unlock()
	ls.sub.Finish(nil)
}

// Fail ends the stream with err, which is Wait's error before the
// acknowledgement.
func (ls *Listen) Fail(err error) {
	ls.mu.Lock()
	ls.settleLocked(listenResult{err: err})
	ls.mu.Unlock()
	ls.sub.Finish(err)
}

// Wait waits up to opts.Timeout for the acknowledgement and returns the
// acknowledged filter and the subscription. On a failure before it — an
// error response, the server's cancellation, a failure of the stream —
// refused runs (to forget the listen) and the failure is returned; at the
// timeout or the end of ctx, the subscription is closed, which tells the
// server; when done is closed, the connection's error (connErr) ends it.
func (ls *Listen) Wait(ctx context.Context, timeout time.Duration, done <-chan struct{}, connErr func() error, refused func(error)) (json.RawMessage, *transport.Subscription, error) {
	var timerC <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timerC = t.C
	}
	select {
	case res := <-ls.ack:
		if res.err != nil {
			ls.sub.Finish(res.err)
			refused(res.err)
			return nil, nil, res.err
		}
		return res.filter, (*transport.Subscription)(ls.sub), nil
	case <-timerC:
		ls.sub.Close()
		return nil, nil, transport.TimeoutError(timeout)
	case <-ctx.Done():
		ls.sub.Close()
		return nil, nil, transport.ContextError(ctx)
	case <-done:
		err := connErr()
		ls.sub.Finish(err)
		return nil, nil, err
	}
}

// Finish ends the subscription with err, for a listen that could not be
// sent.
func (ls *Listen) Finish(err error) { ls.sub.Finish(err) }
