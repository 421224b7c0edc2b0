package snodo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/snodo/snodo/intercept"
)

// WithInterceptor adds i to the client's interceptors (package intercept),
// which see every request the client sends the server, in both eras — the
// typed calls, Request, each round of a multi round-trip request, task
// polling — and the server's answer to it. Requests go through the
// interceptors in the order they were given, each seeing the previous
// one's rewrite; results go through them in the reverse order. Each call
// of an interceptor runs under its own deadline (its Timeout, such as a
// Wasm module's, or intercept.DefaultTimeout).
//
// A request an interceptor denies is not sent: the call fails with an
// *Error of code intercept.CodeDenied (-32030), which errors.Is matches
// with intercept.ErrDenied. An answer an interceptor denies is withheld the same
// way. An interceptor that fails — returns an error, overruns its
// deadline, answers an invalid decision — fails the call (-32603, matching
// intercept.ErrFailed): nothing is sent, or the answer is withheld. With
// interceptors, params and results whose objects have keys a decoder could
// take for one another are refused (intercept.CheckUnambiguous).
//
// The connection's handshake (initialize, and server/discover while
// connecting) is not intercepted; nor are notifications. The 2026-07-28
// result cache serves no result of an intercepted method: every call of
// it passes the interceptors. A nil i is ignored.
func WithInterceptor(i intercept.Interceptor) Option {
	return func(c *config) {
		if i != nil {
			c.interceptors = append(c.interceptors, i)
		}
	}
}

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
	if !c.chain.Intercepts(method, true) {
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
