package http

import (
	"context"
	nethttp "net/http"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport/internal/rpc"
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
func (t *Transport) serverRequest(req *jsonrpc.Request, h nethttp.Header, owner *call) {
	sr, dispatch := t.core.StartServerRequest(t.life, req)
	if sr == nil {
		return // the transport has stopped
	}
	var ctx context.Context = sr.Ctx
	if owner != nil && owner.values != nil {
		ctx = relatedContext{ctx, owner.values}
	}
	bh := baseHeaders(h)
	work := dispatch(ctx, req, t.core.Reply(sr, func(resp *jsonrpc.Response) {
		body := rpc.EncodeAnswer(resp)
		send := func() {
			actx, acancel := context.WithTimeout(t.life, answerTimeout)
			defer acancel()
			if resp, err := t.do(actx, nethttp.MethodPost, body, bh, ""); err == nil {
				drain(resp)
			}
		}
		t.answer(send)
	}))
	if work != nil {
		go work()
	}
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
