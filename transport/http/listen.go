package http

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	nethttp "net/http"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/internal/rpc"
)

// errSubscriptionClosed is the cause with which a subscription's stream is
// closed by its consumer.
var errSubscriptionClosed = errors.New("subscription closed")

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
	traceHeaders(ctx, h)
	if err := t.Err(); err != nil {
		return nil, nil, err
	}
	if !r.ID.IsValid() {
		r.ID = t.core.NewID()
	}
	body, err := jsonrpc.Encode(&r)
	if err != nil {
		return nil, nil, &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeInvalidRequest, Message: "cannot encode the request", Cause: err}
	}
	sctx, cancel := context.WithCancelCause(t.life)
	ls := rpc.NewListen(ctx, r.ID, opts, func(ls *rpc.Listen) error {
		cancel(errSubscriptionClosed)
		t.core.RemoveListen(ls)
		return nil
	})
	t.core.Mu.Lock()
	if err := t.core.AddListenLocked(ls); err != nil {
		t.core.Mu.Unlock()
		cancel(err)
		ls.Finish(err)
		return nil, nil, err
	}
	t.goLocked(func() {
		defer cancel(nil)
		t.listenLoop(sctx, ls, body, h)
	})
	t.core.Mu.Unlock()
	return ls.Wait(ctx, opts.Timeout, t.done, t.Err, func(err error) {
		cancel(err)
		t.core.RemoveListen(ls)
	})
}

// listenLoop runs a listen request's stream to its end.
func (t *Transport) listenLoop(sctx context.Context, ls *rpc.Listen, body []byte, h nethttp.Header) {
	defer t.core.RemoveListen(ls)
	fail := func(err error) {
		if sctx.Err() != nil && t.life.Err() == nil {
			return // closed by the consumer
		}
		if t.life.Err() != nil {
			err = t.Err()
		}
		ls.Fail(err)
	}
	resp, err := t.do(sctx, nethttp.MethodPost, body, h, "")
	if err != nil {
		fail(t.connError(sctx, "POST of subscriptions/listen failed", err))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		r, err := t.failure(resp, h, ls.ID(), true)
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
				ls.Respond(r)
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
			if m.ID == ls.ID() || !m.ID.IsValid() {
				ls.Respond(m)
				return
			}
			t.routeResponse(m)
		case *jsonrpc.Notification:
			if ls.OnStream(m) {
				continue
			}
			t.core.RouteNotification(m)
		case *jsonrpc.Request:
			t.serverRequest(m, h, nil)
		}
	}
}
