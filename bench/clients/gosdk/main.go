// Command gosdk is the benchmark client built with the official Go SDK,
// github.com/modelcontextprotocol/go-sdk, spawning the server through the
// SDK's own stdio transport (mcp.CommandTransport), or with --transport http
// over its Streamable HTTP transport (mcp.StreamableClientTransport, with
// its default HTTP client). See internal/driver for
// the command line and the scenarios.
package main

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/snodo/snodo/bench/internal/driver"
)

func main() { driver.Main("go-sdk", connect) }

type conn struct {
	session   *mcp.ClientSession
	progress  sync.Map // progress token -> func()
	nextToken atomic.Int64
}

func connect(ctx context.Context, cfg driver.Config) (driver.Conn, error) {
	c := &conn{}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-go-sdk", Version: "1.0.0"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": req.Params.Message}}, nil
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			if f, ok := c.progress.Load(req.Params.ProgressToken); ok {
				f.(func())()
			}
		},
	})
	version := "2025-11-25"
	if cfg.Era == "modern" {
		version = "2026-07-28"
	}
	var t mcp.Transport
	if cfg.URL != "" {
		// The SDK's defaults: its HTTP client is http.DefaultClient.
		t = &mcp.StreamableClientTransport{Endpoint: cfg.URL}
	} else {
		t = &mcp.CommandTransport{Command: exec.Command(cfg.Server[0], cfg.Server[1:]...), TerminateDuration: time.Second}
	}
	session, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, err
	}
	if got := session.InitializeResult().ProtocolVersion; got != version {
		session.Close()
		return nil, fmt.Errorf("negotiated %s, want %s", got, version)
	}
	c.session = session
	return c, nil
}

func (c *conn) call(ctx context.Context, params *mcp.CallToolParams) (string, error) {
	res, err := c.session.CallTool(ctx, params)
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) != 1 {
		return "", fmt.Errorf("%s: unexpected result %+v", params.Name, res)
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return "", fmt.Errorf("%s: content is %T", params.Name, res.Content[0])
	}
	return text.Text, nil
}

func (c *conn) Echo(ctx context.Context, text string) (string, error) {
	return c.call(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
}

func (c *conn) Blob(ctx context.Context, n int) (string, error) {
	return c.call(ctx, &mcp.CallToolParams{Name: "blob", Arguments: map[string]any{"n": n}})
}

func (c *conn) Ask(ctx context.Context, q string) (string, error) {
	return c.call(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"q": q}})
}

func (c *conn) Slow(ctx context.Context, ms, steps int, progress func()) (string, error) {
	token := "p-" + strconv.FormatInt(c.nextToken.Add(1), 10)
	// The token stays registered: a notification may be handled after the
	// call has returned.
	c.progress.Store(token, progress)
	params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": ms, "steps": steps}}
	params.SetProgressToken(token)
	return c.call(ctx, params)
}

func (c *conn) Close() error { return c.session.Close() }
