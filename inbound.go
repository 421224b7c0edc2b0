package snodo

import (
	"context"
	"encoding/json"

	"github.com/snodo/snodo/jsonrpc"
)

// serveRequest answers a request the server sends to the client (legacy
// era): ping itself, anything else with the handler configured for its
// method, in a server-request slot. Over the limit, the request is
// answered -32603 without running the handler; with no handler, -32601.
func (c *Client) serveRequest(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	if req.Method == "ping" {
		return json.RawMessage(`{}`), nil
	}
	h, herr := c.handlerFor(req.Method, req.Params)
	if herr != nil {
		code := int64(jsonrpc.CodeMethodNotFound)
		if _, ok := c.cfg.handlers[req.Method]; ok {
			// An elicitation in a mode the client did not declare.
			code = jsonrpc.CodeInvalidParams
		}
		return nil, &Error{Kind: jsonrpc.KindHandler, Code: code, Message: herr.Message}
	}
	select {
	case c.slots <- struct{}{}:
	default:
		return nil, &Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError,
			Message: "too many server requests in progress"}
	}
	defer func() { <-c.slots }()
	return runHandler(ctx, h, req.Method, req.Params)
}

// onNotification receives the server's notifications that the transport
// does not route to a request or a subscription.
func (c *Client) onNotification(n *jsonrpc.Notification) {
	switch n.Method {
	case "notifications/message":
		if c.cfg.onLog != nil {
			var m LogMessage
			if err := unmarshal(n.Params, &m); err == nil {
				c.cfg.onLog(m)
			}
		}
		return
	}
	c.subs.dispatch(n)
	if c.cfg.onNotification != nil {
		c.cfg.onNotification(n.Method, n.Params)
	}
}
