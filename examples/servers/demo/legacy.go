package main

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// preDiscoverTransport makes the server look like one written before
// 2026-07-28: it answers server/discover with -32601 (method not found), as
// a server that has never heard of the method does, instead of the SDK's
// era-aware -32022 listing legacy versions. A dual-era client probing it
// falls back to the initialize handshake, which is what a newcomer meets
// in the wild.
type preDiscoverTransport struct{ mcp.Transport }

func (t preDiscoverTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &preDiscoverConn{Connection: c}, nil
}

type preDiscoverConn struct {
	mcp.Connection
	mu sync.Mutex // serializes our writes with the server's
}

func (c *preDiscoverConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return nil, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || req.Method != "server/discover" || !req.ID.IsValid() {
			return msg, nil
		}
		resp := &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}}
		if err := c.Write(ctx, resp); err != nil {
			return nil, err
		}
	}
}

func (c *preDiscoverConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Connection.Write(ctx, msg)
}
