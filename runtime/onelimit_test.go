//lint:file-ignore SA1019 sampling is deprecated in 2026-07-28 but still MCP: this server exercises a client that supports it

package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
)

// limitServer is an MCP server, on the official Go SDK, that asks the
// client for elicitations (answered by a Wasm module) and samplings
// (answered by a native Go handler) at once, for the tests of the one
// MaxServerRequests limit.
//
// Legacy era: "hold" asks elicitation a and sampling b at once, and reports
// how each was answered ("a=accept b=m"); "third", sent while both are
// running, asks elicitation c and sampling d and reports each answer the
// same way ("c=-32603 d=-32603" when both are refused).
//
// 2026-07-28: "ask3" answers input_required with three input requests, a
// (elicitation), b and c (sampling), and then reports how many answers its
// retry carried ("answered 3"); "ask1" the same with one, elicitation d.
func limitServer(versions []string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "limit", Version: "1"}, &mcp.ServerOptions{
		SupportedProtocolVersions: versions,
		Capabilities:              &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	form := func(msg string) *mcp.ElicitParams {
		return &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"poll": map[string]any{"type": "string"}},
		}}
	}
	sample := func(msg string) *mcp.CreateMessageParams {
		return &mcp.CreateMessageParams{MaxTokens: 5,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: msg}}}}
	}
	// answer says how a request was answered: the elicitation's action,
	// the sampling's model, or the error's JSON-RPC code.
	answer := func(action string, err error) string {
		var we *sdkjsonrpc.Error
		switch {
		case errors.As(err, &we):
			return strconv.FormatInt(we.Code, 10)
		case err != nil:
			return err.Error()
		}
		return action
	}
	type noArgs struct{}
	ask := func(ctx context.Context, ss *mcp.ServerSession, e, m string) *mcp.CallToolResult {
		var wg sync.WaitGroup
		var ea, ma string
		wg.Go(func() {
			r, err := ss.Elicit(ctx, form(e+"?"))
			if err == nil {
				ea = answer(r.Action, nil)
			} else {
				ea = answer("", err)
			}
		})
		wg.Go(func() {
			r, err := ss.CreateMessage(ctx, sample(m+"?"))
			if err == nil {
				ma = answer(r.Model, nil)
			} else {
				ma = answer("", err)
			}
		})
		wg.Wait()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s=%s %s=%s", e, ea, m, ma)}}}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "hold"}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		return ask(ctx, req.Session, "a", "b"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "third"}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		return ask(ctx, req.Session, "c", "d"), nil, nil
	})
	inputs := func(requests mcp.InputRequestMap) mcp.ToolHandlerFor[noArgs, any] {
		return func(_ context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			if n := len(req.Params.InputResponses); n > 0 {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("answered %d", n)}}}, nil, nil
			}
			return &mcp.CallToolResult{InputRequests: requests}, nil, nil
		}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "ask3"}, inputs(mcp.InputRequestMap{"a": form("a?"), "b": sample("b?"), "c": sample("c?")}))
	mcp.AddTool(s, &mcp.Tool{Name: "ask1"}, inputs(mcp.InputRequestMap{"d": form("d?")}))
	return s
}

var (
	limitLegacyVersions = []string{"2025-11-25"}
	limitModernVersions = []string{"2026-07-28"}
)

// serveLimitStdio serves limitServer over stdio, for runHelper.
func serveLimitStdio(legacy bool) int {
	versions := limitModernVersions
	if legacy {
		versions = limitLegacyVersions
	}
	if err := limitServer(versions).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "limit server:", err)
	}
	return 0
}

// holds keeps the handlers of the server's requests running until the test
// releases them, and counts them: a native Go handler in its own code, a
// Wasm module inside its log host call (poll.wasm logs "polling" first),
// which waits on Config.Logger.
type holds struct {
	started       chan string // "native" or "wasm", as each handler runs
	release       chan struct{}
	releaseAll    func()
	running, most atomic.Int32
	native, wasm  atomic.Int32 // handler calls begun
}

func newHolds() *holds {
	h := &holds{started: make(chan string, 16), release: make(chan struct{})}
	var once sync.Once
	h.releaseAll = func() { once.Do(func() { close(h.release) }) }
	return h
}

// enter counts a handler in; the returned func counts it out.
func (h *holds) enter() func() {
	n := h.running.Add(1)
	for m := h.most.Load(); n > m && !h.most.CompareAndSwap(m, n); m = h.most.Load() {
	}
	return func() { h.running.Add(-1) }
}

// hold waits until the test releases one handler, or all, or ctx ends.
func (h *holds) hold(ctx context.Context) {
	select {
	case <-h.release:
	case <-ctx.Done():
	}
}

// waitStarted waits, with a generous bound, for n more handlers to run.
func (h *holds) waitStarted(t *testing.T, n int) []string {
	t.Helper()
	var who []string
	for range n {
		select {
		case w := <-h.started:
			who = append(who, w)
		case <-time.After(limitWait):
			t.Fatalf("after %v, waiting for %d handlers to run", who, n)
		}
	}
	return who
}

// Handle holds the module that logs "polling" in its log call.
func (h *holds) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "polling" {
		h.started <- "wasm"
		h.hold(ctx)
	}
	return nil
}
func (h *holds) Enabled(context.Context, slog.Level) bool { return true }
func (h *holds) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *holds) WithGroup(string) slog.Handler            { return h }

// config is a Runner's Config whose elicitations are answered by the
// poll.wasm module (configured with no subscriptions: it logs, polls
// nothing and accepts) and whose samplings by a native Go handler, both
// held by h, under a MaxServerRequests of limit.
func (h *holds) config(t *testing.T, server Server, protocol string, limit int) Config {
	return Config{
		Server:            server,
		Protocol:          protocol,
		MaxServerRequests: limit,
		Timeout:           5 * time.Minute,
		CacheDir:          t.TempDir(),
		Logger:            slog.New(h),
		Handlers: []HandlerModule{{ModuleConfig: ModuleConfig{
			Path:    "../examples/handlers/wat/hostile/poll.wasm",
			Config:  json.RawMessage(`"n"`),
			Timeout: 5 * time.Minute,
		}}},
		WrapModule: func(_, _ string, next snodo.Handler) snodo.Handler {
			return snodo.HandlerFunc(func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
				h.wasm.Add(1)
				defer h.enter()()
				return next.HandleRequest(ctx, method, params)
			})
		},
		Native: map[string]snodo.Handler{abi.MethodSamplingCreate: snodo.HandlerFunc(func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
			h.native.Add(1)
			defer h.enter()()
			h.started <- "native"
			h.hold(ctx)
			return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"x"},"model":"m"}`), nil
		})},
	}
}

// limitServers are limitServer over stdio (the test binary, run as a
// scripted server) and over Streamable HTTP (the SDK's handler in an
// httptest server), in an era.
func limitServers(t *testing.T, legacy bool) map[string]Server {
	helper, versions := "limit-modern", limitModernVersions
	if legacy {
		helper, versions = "limit-legacy", limitLegacyVersions
	}
	s := limitServer(versions)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: !legacy}))
	t.Cleanup(srv.Close)
	return map[string]Server{
		"stdio": {Command: os.Args[0], Env: []EnvVar{{Name: helperEnv, Value: helper}}},
		"http":  {URL: srv.URL},
	}
}

// "one concurrency limit (max-server-requests) shared by legacy server
// requests and MRTR input requests", for either transport and for native
// and Wasm handlers together. A legacy server, over stdio and over
// Streamable HTTP, with a limit of 2: while its elicitation (a Wasm module)
// and its sampling (a native Go handler) run, a third and a fourth request,
// one of each, are answered -32603 at once and neither handler runs; once
// the two are released they are answered.
func TestOneMaxServerRequestsLimitForLegacyRequestsOnBothTransports(t *testing.T) {
	for name, server := range limitServers(t, true) {
		t.Run(name, func(t *testing.T) {
			h := newHolds()
			ctx := context.Background()
			rt, err := Start(ctx, h.config(t, server, "legacy", 2))
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close(ctx)
			defer h.releaseAll() // before Close
			held := h.call(t, rt, "hold")
			h.waitStarted(t, 2) // the Wasm module and the native handler run
			third := h.call(t, rt, "third")
			select {
			case <-third.done:
			case w := <-h.started:
				t.Fatalf("a %s handler ran while both slots were taken", w)
			case <-time.After(limitWait):
				t.Fatalf("third did not end within %v", limitWait)
			}
			if third.err != nil || third.text != "c=-32603 d=-32603" {
				t.Errorf("with both slots taken, the third and fourth requests were answered %q %v, want c=-32603 d=-32603", third.text, third.err)
			}
			if w, n := h.wasm.Load(), h.native.Load(); w != 1 || n != 1 {
				t.Errorf("the Wasm handler ran %d times and the native one %d, want once each", w, n)
			}
			h.releaseAll()
			if a := held.wait(t); a.err != nil || a.text != "a=accept b=m" {
				t.Errorf("the held requests: %q %v, want a=accept b=m", a.text, a.err)
			}
			if got := h.most.Load(); got != 2 {
				t.Errorf("%d handlers ran at once, want 2", got)
			}
		})
	}
}

// The same limit for the input requests of a 2026-07-28 server, over stdio
// and over Streamable HTTP, with a limit of 2: of the three input requests
// of one input_required result (an elicitation for the Wasm module, two
// samplings for the native handler), two run and the third waits for a
// slot, whichever kind it is; the input request of a second call made
// meanwhile waits too. Each runs when a slot is given back, and both calls
// are answered.
func TestOneMaxServerRequestsLimitForInputRequestsOnBothTransports(t *testing.T) {
	for name, server := range limitServers(t, false) {
		t.Run(name, func(t *testing.T) {
			h := newHolds()
			ctx := context.Background()
			rt, err := Start(ctx, h.config(t, server, "modern", 2))
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close(ctx)
			defer h.releaseAll() // before Close
			three := h.call(t, rt, "ask3")
			first := h.waitStarted(t, 2)
			one := h.call(t, rt, "ask1")
			// Give a third handler, of either call, the chance to start
			// beside the two, which the limit must prevent. (A pass does
			// not depend on this wait; it only gives a missing limit the
			// time to show.)
			select {
			case w := <-h.started:
				t.Fatalf("a third handler (%s) ran while %v held both slots", w, first)
			case <-time.After(500 * time.Millisecond):
			}
			h.release <- struct{}{} // one of the two returns
			next := h.waitStarted(t, 1)
			h.releaseAll()
			if a := three.wait(t); a.err != nil || a.text != "answered 3" {
				t.Errorf("ask3: %q %v, want answered 3", a.text, a.err)
			}
			if a := one.wait(t); a.err != nil || a.text != "answered 1" {
				t.Errorf("ask1: %q %v, want answered 1", a.text, a.err)
			}
			if got := h.most.Load(); got != 2 {
				t.Errorf("%d handlers ran at once, want 2", got)
			}
			if w, n := h.wasm.Load(), h.native.Load(); w != 2 || n != 2 {
				t.Errorf("the Wasm handler ran %d times and the native one %d, want 2 and 2", w, n)
			}
			t.Logf("ran first %v, then %v", first, next)
		})
	}
}

// limitWait bounds each wait of these tests; a pass never depends on it.
var limitWait = 2 * time.Minute

// pending is a tool call made in the background.
type pending struct {
	tool string
	done chan struct{} // closed when the call has ended
	text string
	err  error
}

// call calls tool in the background. At the end of the test it releases
// every handler and waits for the call.
func (h *holds) call(t *testing.T, rt *Runner, tool string) *pending {
	p := &pending{tool: tool, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		res, err := rt.Client().CallTool(context.Background(), tool, nil)
		if err != nil {
			p.err = err
			return
		}
		p.text = textOf(res)
	}()
	t.Cleanup(func() {
		h.releaseAll()
		select {
		case <-p.done:
		case <-time.After(limitWait):
			t.Errorf("%s did not end within %v", tool, limitWait)
		}
	})
	return p
}

// wait waits for the call to end, bounded by limitWait.
func (p *pending) wait(t *testing.T) *pending {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limitWait):
		t.Fatalf("%s did not end within %v", p.tool, limitWait)
	}
	return p
}
