// Command mcpgo is the benchmark client built with github.com/mark3labs/mcp-go,
// spawning the server through that library's stdio transport
// (transport.NewStdio), or with --transport http over its Streamable HTTP one
// (transport.NewStreamableHTTP, with its defaults). See internal/driver for the command line and the
// scenarios.
package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/snodo/snodo/bench/internal/driver"
)

func main() { driver.Main("mcp-go", connect) }

type conn struct {
	client    *client.Client
	progress  sync.Map // progress token -> func()
	nextToken atomic.Int64
}

type elicitor struct{}

// Elicit answers with the elicitation's message as the answer field.
func (elicitor) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action:  mcp.ElicitationResponseActionAccept,
		Content: map[string]any{"answer": req.Params.Message},
	}}, nil
}

func connect(ctx context.Context, cfg driver.Config) (driver.Conn, error) {
	var t transport.Interface
	if cfg.URL != "" {
		// The library's defaults: its HTTP client is a plain http.Client.
		h, err := transport.NewStreamableHTTP(cfg.URL)
		if err != nil {
			return nil, err
		}
		t = h
	} else {
		t = transport.NewStdio(cfg.Server[0], nil, cfg.Server[1:]...)
	}
	c := client.NewClient(t, client.WithElicitationHandler(elicitor{}))
	conn := &conn{client: c}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != "notifications/progress" {
			return
		}
		if f, ok := conn.progress.Load(fmt.Sprint(n.Params.AdditionalFields["progressToken"])); ok {
			f.(func())()
		}
	})
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	version := "2025-11-25"
	if cfg.Era == "modern" {
		version = "2026-07-28"
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: "bench-mcp-go", Version: "1.0.0"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		c.Close()
		return nil, err
	}
	if res.ProtocolVersion != version {
		c.Close()
		return nil, fmt.Errorf("negotiated %s, want %s", res.ProtocolVersion, version)
	}
	return conn, nil
}

func (c *conn) call(ctx context.Context, req mcp.CallToolRequest) (string, error) {
	res, err := c.client.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) != 1 {
		return "", fmt.Errorf("%s: unexpected result %+v", req.Params.Name, res)
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		return "", fmt.Errorf("%s: content is %T", req.Params.Name, res.Content[0])
	}
	return text.Text, nil
}

func request(name string, args map[string]any) mcp.CallToolRequest {
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	return req
}

func (c *conn) Echo(ctx context.Context, text string) (string, error) {
	return c.call(ctx, request("echo", map[string]any{"text": text}))
}

func (c *conn) Blob(ctx context.Context, n int) (string, error) {
	return c.call(ctx, request("blob", map[string]any{"n": n}))
}

func (c *conn) Ask(ctx context.Context, q string) (string, error) {
	return c.call(ctx, request("ask", map[string]any{"q": q}))
}

func (c *conn) Slow(ctx context.Context, ms, steps int, progress func()) (string, error) {
	token := "p-" + strconv.FormatInt(c.nextToken.Add(1), 10)
	// The token stays registered: a notification may be handled after the
	// call has returned.
	c.progress.Store(token, progress)
	req := request("slow", map[string]any{"ms": ms, "steps": steps})
	req.Params.Meta = &mcp.Meta{ProgressToken: token}
	return c.call(ctx, req)
}

func (c *conn) Close() error { return c.client.Close() }
