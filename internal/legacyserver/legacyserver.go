// Package legacyserver makes a server built with the official MCP Go SDK
// look like one written before 2026-07-28, for Snodo's demo and interop
// servers.
package legacyserver

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// WithoutDiscover wraps t so that server/discover is answered with -32601
// (method not found) before the SDK sees it, as a server that has never
// heard of the method does, instead of the SDK's era-aware -32022 listing
// its legacy versions. A dual-era client probing it falls back to the
// initialize handshake, which is what a client meets in the wild.
func WithoutDiscover(t mcp.Transport) mcp.Transport { return withoutDiscover{t} }

type withoutDiscover struct{ mcp.Transport }

func (t withoutDiscover) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{Connection: c}, nil
}

type conn struct {
	mcp.Connection
	mu sync.Mutex // serializes the answers written here with the server's writes
}

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
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

func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Connection.Write(ctx, msg)
}
