package http

import (
	"context"
	"encoding/json"
	"errors"
	nethttp "net/http"
	"sync/atomic"

	"github.com/snodo/snodo/internal/admit"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// answerTimeout bounds the POST of an answer to a server request.
const answerTimeout = cancelTimeout

// serverRequest hands a request from the server (initialize era: on the
// GET stream or a request's stream) to the dispatcher, and answers it with
// a POST of the response. h are the headers of the stream it came on;
// owner is the call whose stream it came on, or nil: the handler's
// context then carries the values of that call's context, as a
// 2026-07-28 input request's handler does, so that it can tell which call
// the request relates to. It ends with the transport or the server's
// cancellation, not with the call.
func (t *Transport) serverRequest(req *jsonrpc.Request, h nethttp.Header, osr transport.ServerRequestFunc, owner *call) {
	t.mu.Lock()
	if t.err != nil {
		t.mu.Unlock()
		return
	}
	dispatch := t.onRequest
	if !t.inbound && osr != nil {
		dispatch = admit.Serve(osr, t.gate)
	}
	ctx, cancel := context.WithCancel(t.life)
	if owner != nil && owner.values != nil {
		ctx = relatedContext{ctx, owner.values}
	}
	if _, dup := t.serverReqs[req.ID]; !dup {
		t.serverReqs[req.ID] = cancel
	}
	t.mu.Unlock()

	bh := baseHeaders(h)
	var replied atomic.Bool
	work := dispatch(ctx, req, func(result json.RawMessage, err error) {
		if !replied.CompareAndSwap(false, true) {
			return
		}
		defer cancel()
		t.mu.Lock()
		delete(t.serverReqs, req.ID)
		t.mu.Unlock()
		// A request the server cancelled, or a closed transport, gets no
		// answer.
		if ctx.Err() != nil {
			return
		}
		body := encodeAnswer(req.ID, result, err)
		send := func() {
			actx, acancel := context.WithTimeout(t.life, answerTimeout)
			defer acancel()
			if resp, err := t.do(actx, nethttp.MethodPost, body, bh, ""); err == nil {
				drain(resp)
			}
		}
		// In the background while slots last; past that in the caller
		// (possibly a stream's reader), which slows a flooding server down.
		select {
		case t.answers <- struct{}{}:
			if !t.goTracked(func() { defer func() { <-t.answers }(); send() }) {
				<-t.answers
			}
		default:
			send()
		}
	})
	if work != nil {
		go work()
	}
}

// encodeAnswer encodes the response to a server request: an error that is
// not a *jsonrpc.Error as -32603 with its text, a nil result as {}, a
// result that is not JSON as -32603.
func encodeAnswer(id jsonrpc.ID, result json.RawMessage, err error) []byte {
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
	body, eerr := jsonrpc.Encode(resp)
	if eerr != nil {
		body, _ = jsonrpc.Encode(jsonrpc.NewErrorResponse(id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "invalid answer: " + eerr.Error()}))
	}
	return body
}

// relatedContext is a server request's context that also carries the
// values of the call it relates to; the request's own context's values
// (its cancellation among them) come first.
type relatedContext struct {
	context.Context
	call context.Context
}

func (c relatedContext) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.call.Value(key)
}
