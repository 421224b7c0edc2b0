package snodo

import (
	"context"
	"encoding/json"

	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// The one path of a server request. Every request the server sends to the
// client — a legacy server-to-client request, or an input request of a
// 2026-07-28 input_required result — is admitted under the client's one
// Gate (Options.MaxServerRequests), run by runHandler (the one recover and the
// one validation), under a context that ends with the connection and with
// Close, and answered once.

// dispatch is the transport.DispatchFunc the client installs on every
// transport that carries server requests (transport.Inbound: stdio and
// Streamable HTTP, both eras): it runs in the transport's reader, so it
// answers at once (ping, no handler, over the limit) or returns the work
// of the admitted request, which the transport runs.
func (c *Client) dispatch(ctx context.Context, req *jsonrpc.Request, reply transport.ReplyFunc) func() {
	if c.clientTaskRequest(ctx, req, reply) {
		// A task-augmented request or a tasks/ method (clienttasks.go).
		return nil
	}
	h, res, err := c.admit(req)
	if h == nil {
		reply(res, err)
		return nil
	}
	return func() { reply(c.runAdmitted(ctx, h, req)) }
}

// admit decides a server request. It returns the handler to run, holding a
// slot of the gate that runAdmitted gives back; or, with a nil handler, the
// answer to send at once: {} to ping, -32601 (or -32602 for an elicitation
// mode the client did not declare) when no handler answers the method,
// -32603 when every slot is taken.
func (c *Client) admit(req *jsonrpc.Request) (Handler, json.RawMessage, error) {
	if req.Method == "ping" {
		return nil, json.RawMessage(`{}`), nil
	}
	c.noteDeprecated(req.Method)
	h, herr := c.handlerFor(req.Method, req.Params)
	if herr != nil {
		code := int64(jsonrpc.CodeMethodNotFound)
		if _, ok := c.cfg.handlers[req.Method]; ok || herr.Code == jsonrpc.CodeInvalidParams ||
			(req.Method == abi.MethodElicitationCreate && c.cfg.urlElicit != nil) {
			// An elicitation in a mode the client did not declare, an
			// invalid URL-mode one, a sampling request with tools the
			// client did not declare.
			code = jsonrpc.CodeInvalidParams
		}
		return nil, nil, &Error{Kind: jsonrpc.KindHandler, Code: code, Message: herr.Message}
	}
	if !c.gate.TryAcquire() {
		return nil, nil, c.gate.OverLimit()
	}
	return h, nil, nil
}

// runAdmitted runs an admitted handler under ctx and the client's life,
// and gives its slot back.
func (c *Client) runAdmitted(ctx context.Context, h Handler, req *jsonrpc.Request) (json.RawMessage, error) {
	defer c.gate.Release()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(c.life, func() { cancel(context.Cause(c.life)) })
	defer stop()
	return runHandler(ctx, h, req.Method, req.Params)
}

// onNotification receives the server's notifications that the transport
// does not route to a request or a subscription.
func (c *Client) onNotification(n *jsonrpc.Notification) {
	switch n.Method {
	case "notifications/message":
		c.noteDeprecated(n.Method)
		if c.cfg.onLog != nil {
			var m LogMessage
			if err := unmarshal(n.Params, &m); err == nil {
				c.cfg.onLog(m)
			}
		}
		return
	case "notifications/elicitation/complete":
		c.onElicitationComplete(n.Params)
		return
	}
	c.invalidateCache(n.Method, n.Params)
	if c.taskNotification(n) {
		return
	}
	c.subs.dispatch(n)
	if c.cfg.onNotification != nil {
		c.cfg.onNotification(n.Method, n.Params)
	}
}
