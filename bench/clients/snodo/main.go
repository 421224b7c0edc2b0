// Command snodo is the benchmark client built with Snodo: the root package's
// Client over the stdio transport (transport/stdio), with the elicitation
// answered by a native Go handler. See internal/driver for the command line
// and the scenarios.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/bench/internal/driver"
	"github.com/snodo/snodo/transport/stdio"
)

func main() { driver.Main("snodo", connect) }

type conn struct {
	client *snodo.Client
}

// answer is the native elicitation handler: it accepts with the request's
// message as the answer field.
func answer(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	var req struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(params, &req); err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Action  string            `json:"action"`
		Content map[string]string `json:"content"`
	}{"accept", map[string]string{"answer": req.Message}})
}

func connect(ctx context.Context, cfg driver.Config) (driver.Conn, error) {
	era := snodo.EraLegacy
	if cfg.Era == "modern" {
		era = snodo.EraModern
	}
	return dial(ctx, cfg, era, snodo.HandlerFunc(answer))
}

func dial(ctx context.Context, cfg driver.Config, era snodo.Era, elicit snodo.Handler) (driver.Conn, error) {
	t, err := stdio.Connect(ctx, stdio.Config{Command: cfg.Server[0], Args: cfg.Server[1:], Stderr: os.Stderr})
	if err != nil {
		return nil, err
	}
	c, err := snodo.Connect(ctx, t,
		snodo.WithEra(era),
		snodo.WithClientInfo(snodo.Implementation{Name: "bench-snodo", Version: "1.0.0"}),
		snodo.WithHandler(snodo.MethodElicit, elicit))
	if err != nil {
		t.Close()
		return nil, err
	}
	if c.Era() != era {
		c.Close()
		return nil, fmt.Errorf("connected in the %s era, want %s", c.Era(), era)
	}
	return &conn{client: c}, nil
}

func (c *conn) call(ctx context.Context, name string, args any, opts ...snodo.CallOption) (string, error) {
	res, err := c.client.CallTool(ctx, name, args, opts...)
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) != 1 || res.Content[0].Type != snodo.ContentText {
		return "", fmt.Errorf("%s: unexpected result %+v", name, res)
	}
	return res.Content[0].Text, nil
}

func (c *conn) Echo(ctx context.Context, text string) (string, error) {
	return c.call(ctx, "echo", map[string]any{"text": text})
}

func (c *conn) Blob(ctx context.Context, n int) (string, error) {
	return c.call(ctx, "blob", map[string]any{"n": n})
}

func (c *conn) Ask(ctx context.Context, q string) (string, error) {
	return c.call(ctx, "ask", map[string]any{"q": q})
}

func (c *conn) Slow(ctx context.Context, ms, steps int, progress func()) (string, error) {
	return c.call(ctx, "slow", map[string]any{"ms": ms, "steps": steps},
		snodo.WithProgress(func(snodo.Progress) { progress() }))
}

func (c *conn) Close() error { return c.client.Close() }
