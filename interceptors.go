package snodo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/snodo/snodo/intercept"
)

// callIntercepted is callParams through the client's interceptors: the
// request chain before anything is sent, the result chain over what the
// server answered (its result, or its error).
func (c *Client) callIntercepted(ctx context.Context, method string, params []byte, own bool, cc *callConfig) (json.RawMessage, error) {
	cc.answer = nil
	req := intercept.Request{
		Method:          method,
		Params:          params,
		Server:          c.serverInfo.Name,
		Caller:          intercept.CallerFrom(ctx),
		Era:             c.dialect.Era().String(),
		ProtocolVersion: c.dialect.ProtocolVersion(),
	}
	if c.chain.Intercepts(method, false) {
		p, err := c.chain.Request(ctx, &req)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(p, params) {
			// A rewrite: a copy the interceptor made, which the call
			// may send as it is.
			params, own = p, true
		}
	}
	req.Params = params
	raw, err := c.send(ctx, method, params, own, cc)
	if !c.chain.Intercepts(method, true) || (err == nil && cc.inputRequired) {
		// An input_required result of a one-round call is not the
		// request's result: the result chain sees the complete one.
		return raw, err
	}
	res := intercept.Result{Request: req, Result: raw}
	if err != nil {
		var se *Error
		if cc.answer == nil || !errors.As(err, &se) || se != cc.answer {
			// Not the server's answer: a timeout, the connection, a
			// handler's failure. Nothing for the interceptors.
			return nil, err
		}
		res.Result, res.Error = nil, se
	}
	if len(bytesTrim(res.Request.Params)) == 0 {
		res.Request.Params = json.RawMessage(`{}`)
	}
	return c.chain.Result(ctx, &res)
}
