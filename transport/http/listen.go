package http

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	nethttp "net/http"
	"sync"
	"time"

	"github.com/snodo/snodo/internal/jsoncodec"
	"github.com/snodo/snodo/internal/subbuf"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// errSubscriptionClosed is the cause with which a subscription's stream is
// closed by its consumer.
var errSubscriptionClosed = errors.New("subscription closed")

// listenState is one subscriptions/listen stream.
type listenState struct {
	id  jsonrpc.ID
	sub *subbuf.Buffer[transport.Event]

	mu      sync.Mutex
	acked   bool
	settled bool
	ack     chan listenResult // buffered
}

type listenResult struct {
	filter json.RawMessage
	err    error
}

func (ls *listenState) settleLocked(r listenResult) {
	if !ls.settled {
		ls.settled = true
		ls.ack <- r
	}
}

// fail ends the stream with err, which is Listen's error before the
// acknowledgement.
func (ls *listenState) fail(err error) {
	ls.mu.Lock()
	ls.settleLocked(listenResult{err: err})
	ls.mu.Unlock()
	ls.sub.Finish(err)
}

// Listen implements transport.Listener (2026-07-28): it POSTs req, a
// subscriptions/listen request, and reads the SSE stream of its response:
// the server's notifications/subscriptions/acknowledged, whose
// params.notifications Listen returns, then the events, which go to the
// subscription. Headers are chosen as for Request. A zero req.ID is
// replaced by a fresh integer ID.
//
// Closing the subscription, or ctx ending, closes the stream: the
// cancellation of 2026-07-28 HTTP. The subscription ends cleanly at the
// server's response to the listen request, or its notifications/cancelled
// naming it; with the server's error at an error response; with a -32000
// connection error when the stream breaks, the server closes it, or the
// transport is closed.
//
// An error before the acknowledgement is returned: a JSON-RPC error
// response (in a 4xx body or on the stream) as a *jsonrpc.Error of kind
// server, opts.Timeout as transport.TimeoutError, HTTP failures as for
// Request.
func (t *Transport) Listen(ctx context.Context, req *jsonrpc.Request, opts transport.ListenOptions) (json.RawMessage, *transport.Subscription, error) {
	r := *req
	h := t.requestHeaders(&r, opts.Dialect, nil, opts.Headers)
	ls := &listenState{ack: make(chan listenResult, 1)}

	t.mu.Lock()
	if t.err != nil {
		err := t.err
		t.mu.Unlock()
		return nil, nil, err
	}
	if !r.ID.IsValid() {
		r.ID = t.newIDLocked()
	}
	ls.id = r.ID
	body, err := jsonrpc.Encode(&r)
	if err != nil {
		t.mu.Unlock()
		return nil, nil, &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeInvalidRequest, Message: "cannot encode the request", Cause: err}
	}
	sctx, cancel := context.WithCancelCause(t.life)
	cfg := subbuf.Config{Max: opts.MaxBuffer, Overflow: subbuf.Policy(opts.Overflow)}
	ls.sub = subbuf.New[transport.Event](ctx, r.ID, cfg, func() error {
		cancel(errSubscriptionClosed)
		t.dropListen(ls)
		return nil
	})
	t.listens[ls] = struct{}{}
	t.goLocked(func() {
		defer cancel(nil)
		t.listenLoop(sctx, ls, body, h)
	})
	t.mu.Unlock()

	var timerC <-chan time.Time
	if opts.Timeout > 0 {
		tm := time.NewTimer(opts.Timeout)
		defer tm.Stop()
		timerC = tm.C
	}
	select {
	case res := <-ls.ack:
		if res.err != nil {
			ls.sub.Finish(res.err)
			cancel(res.err)
			t.dropListen(ls)
			return nil, nil, res.err
		}
		return res.filter, (*transport.Subscription)(ls.sub), nil
	case <-timerC:
		ls.sub.Close()
		return nil, nil, transport.TimeoutError(opts.Timeout)
	case <-ctx.Done():
		ls.sub.Close()
		return nil, nil, transport.ContextError(ctx)
	case <-t.done:
		err := t.Err()
		ls.sub.Finish(err)
		return nil, nil, err
	}
}

func (t *Transport) dropListen(ls *listenState) {
	t.mu.Lock()
	delete(t.listens, ls)
	t.mu.Unlock()
}

// listenLoop runs a listen request's stream to its end.
func (t *Transport) listenLoop(sctx context.Context, ls *listenState, body []byte, h nethttp.Header) {
	defer t.dropListen(ls)
	fail := func(err error) {
		if sctx.Err() != nil && t.life.Err() == nil {
			return // closed by the consumer
		}
		if t.life.Err() != nil {
			err = t.Err()
		}
		ls.fail(err)
	}
	resp, err := t.do(sctx, nethttp.MethodPost, body, h, "")
	if err != nil {
		fail(t.connError(sctx, "POST of subscriptions/listen failed", err))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		r, err := t.failure(resp, h, ls.id)
		if err == nil {
			err = r.Error
		}
		fail(err)
		return
	}
	switch mediaType(resp.Header) {
	case "text/event-stream":
	case "application/json":
		data, err := readBounded(resp.Body, t.maxMsg)
		if err != nil {
			fail(t.connError(sctx, "reading the response failed", err))
			return
		}
		if msg, derr := jsonrpc.Decode(data); derr == nil {
			if r, ok := msg.(*jsonrpc.Response); ok {
				ls.respond(r)
				return
			}
		}
		fail(transport.ConnectionError("the response to subscriptions/listen is not a JSON-RPC response: "+capText(data), nil))
		return
	default:
		fail(transport.ConnectionError("the response to subscriptions/listen is not an SSE stream", &transport.StatusError{Status: resp.StatusCode}))
		return
	}
	sr := newSSEReader(resp.Body, t.maxMsg)
	for {
		ev, err := sr.next()
		if err != nil {
			if errors.Is(err, errEventTooLarge) {
				fail(transport.ConnectionError("an event of the subscription stream is too large", errors.Join(ErrTooLarge, err)))
				return
			}
			if err == io.EOF {
				fail(transport.ConnectionError("the server closed the subscription stream", io.EOF))
				return
			}
			fail(t.connError(sctx, "reading the subscription stream failed", err))
			return
		}
		if (ev.typ != "" && ev.typ != "message") || len(ev.data) == 0 {
			continue
		}
		msg, derr := jsonrpc.Decode(ev.data)
		if derr != nil {
			continue
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			if m.ID == ls.id || !m.ID.IsValid() {
				ls.respond(m)
				return
			}
			t.routeResponse(m)
		case *jsonrpc.Notification:
			if ls.notification(m) {
				continue
			}
			t.notification(m)
		case *jsonrpc.Request:
			t.serverRequest(m, h, nil, nil)
		}
	}
}

// notification handles a notification of the stream; it reports false for
// one that belongs to no subscription (a log message), for the transport's
// usual routing.
func (ls *listenState) notification(n *jsonrpc.Notification) bool {
	switch n.Method {
	case "notifications/message", methodProgress:
		return false
	case methodAcknowledged:
		var p struct {
			Notifications json.RawMessage `json:"notifications"`
		}
		_ = jsoncodec.Unmarshal(n.Params, &p)
		ls.mu.Lock()
		if !ls.acked {
			ls.acked = true
			ls.settleLocked(listenResult{filter: p.Notifications})
		}
		ls.mu.Unlock()
		return true
	case methodCancelled:
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		_ = jsoncodec.Unmarshal(n.Params, &p)
		if id, ok := jsonrpc.ParseID(p.RequestID); ok && id == ls.id {
			ls.mu.Lock()
			ls.settleLocked(listenResult{err: transport.ConnectionError("the server cancelled the subscription before acknowledging it", nil)})
			ls.mu.Unlock()
			ls.sub.Finish(nil)
			return true
		}
		return false
	}
	ls.mu.Lock()
	acked := ls.acked
	ls.mu.Unlock()
	if acked {
		ls.sub.Push(transport.Event{Method: n.Method, Params: n.Params})
	}
	return true
}

// respond handles the response to the listen request: before the
// acknowledgement it is Listen's error; after it, the end of the stream.
func (ls *listenState) respond(resp *jsonrpc.Response) {
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
