// Command snodo is the benchmark client built with Snodo: the root package's
// Client over the stdio transport (transport/stdio), or with --transport http
// over the Streamable HTTP one (transport/http, its own HTTP client). The elicitation is
// answered by a native Go handler, or with --wasm FILE by a Wasm handler
// module on Snodo's host (handlers/wasm: pooled instances, the default
// per-call deadline on), configured with --wasm-config JSON. With
// --wasm-answer TEXT the module answers TEXT instead of the message (a
// module that answers from its configuration). See internal/driver for the
// rest of the command line and the scenarios.
//
// Built with -tags nowasm, the client does not link the Wasm host (wazero),
// as a program that uses no Wasm handler does not, and refuses --wasm. The
// benchmark measures that build (bin/snodo) in the native cases and the
// full one (bin/snodo-wasm) in the Wasm handler cases.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/bench/internal/driver"
	"github.com/snodo/snodo/transport"
	mcphttp "github.com/snodo/snodo/transport/http"
	"github.com/snodo/snodo/transport/stdio"
)

var (
	wasmPath   = flag.String("wasm", "", "answer elicitations with this Wasm handler module")
	wasmConfig = flag.String("wasm-config", "", "the module's configuration (JSON)")
	wasmAnswer = flag.String("wasm-answer", "", "the answer the module gives, if not the message")
)

func main() { driver.Main("snodo", connect) }

type conn struct {
	client *snodo.Client
	// wasm is set when a Wasm handler module answers the elicitation;
	// closeHost closes its host.
	wasm      bool
	closeHost func()
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
	if *wasmPath == "" {
		if *wasmConfig != "" || *wasmAnswer != "" {
			return nil, errors.New("--wasm-config and --wasm-answer need --wasm")
		}
		return dial(ctx, cfg, era, snodo.HandlerFunc(answer))
	}
	return dialWasm(ctx, cfg, era)
}

// ExpectedAnswer is what the elicitation handler answers to q.
func (c *conn) ExpectedAnswer(q string) string {
	if c.wasm && *wasmAnswer != "" {
		return *wasmAnswer
	}
	return q
}

func dial(ctx context.Context, cfg driver.Config, era snodo.Era, elicit snodo.Handler) (*conn, error) {
	var t transport.Transport
	var err error
	if cfg.URL != "" {
		t, err = mcphttp.New(mcphttp.Config{URL: cfg.URL})
	} else {
		t, err = stdio.Connect(ctx, stdio.Config{Command: cfg.Server[0], Args: cfg.Server[1:], Stderr: os.Stderr})
	}
	if err != nil {
		return nil, err
	}
	c, err := snodo.Connect(ctx, t, &snodo.Options{
		Handlers:   map[string]snodo.Handler{abi.MethodElicitationCreate: elicit},
		Era:        era,
		ClientInfo: snodo.Implementation{Name: "bench-snodo", Version: "1.0.0"},
	})
	if err != nil {
		t.Close()
		return nil, err
	}
	if c.Server().Era != era {
		c.Close()
		return nil, fmt.Errorf("connected in the %s era, want %s", c.Server().Era, era)
	}
	return &conn{client: c}, nil
}

func (c *conn) call(ctx context.Context, name string, args any, opts ...snodo.CallOption) (string, error) {
	res, err := c.client.CallTool(ctx, name, args, opts...)
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) != 1 || res.Content[0].Type != "text" {
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

func (c *conn) Close() error {
	err := c.client.Close()
	if c.closeHost != nil {
		c.closeHost()
	}
	return err
}
