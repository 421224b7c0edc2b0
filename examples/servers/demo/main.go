// Command demo is an MCP server, built with the official Go SDK, that shows
// what Snodo does: it asks the client for input (an elicitation form, a
// sampling request, the client's roots), reports progress over a few
// seconds, and changes its own tool, prompt and resource lists.
//
// It serves one protocol era, chosen by flag, over stdio:
//
//	demo --era legacy   # initialize handshake, 2024-11-05 … 2025-11-25;
//	                    # the server asks with elicitation/create requests,
//	                    # and answers server/discover -32601 as a server
//	                    # written before 2026-07-28 does
//	demo --era modern   # 2026-07-28: server/discover, per-request _meta;
//	                    # the server asks by returning input_required
//
// With --http ADDR it serves the same over Streamable HTTP instead, at
// http://ADDR/mcp (the SDK's mcp.NewStreamableHTTPHandler), and with
// --token T it answers 401 to a request without "Authorization: Bearer T":
//
//	demo --http 127.0.0.1:8931 --token s3cret
//
// Each tool that needs input returns InputRequests; the SDK sends them to a
// legacy client as server-to-client requests and to a modern client as an
// input_required result, so the same client handler answers both.
package main

//lint:file-ignore SA1019 MCP 2026-07-28 deprecates sampling and roots, but servers still send them and Snodo answers them: this demo shows it.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snodo/snodo/internal/legacyserver"
)

// Protocol versions by era, newest first.
var (
	legacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
	modernVersions = []string{"2026-07-28"}
)

func main() {
	era := flag.String("era", "modern", "protocol era to serve: legacy (initialize, 2024-11-05…2025-11-25) or modern (2026-07-28)")
	stepDelay := flag.Duration("step-delay", 300*time.Millisecond, "default pause between two progress steps of the count tool")
	verbose := flag.Bool("verbose", false, "log the server's activity on stderr")
	sdkDiscover := flag.Bool("sdk-discover", false, "with --era legacy, let the SDK answer server/discover with -32022 and its legacy versions, instead of -32601 as a server written before 2026-07-28 does")
	httpAddr := flag.String("http", "", "serve Streamable HTTP at http://`ADDR`/mcp instead of stdio (port 0: any free one; the URL is printed on stderr)")
	token := flag.String("token", "", "with --http, answer 401 to a request without \"Authorization: Bearer `TOKEN`\"")
	churn := flag.Duration("churn", 0, "if set, toggle the bonus tool, prompt and resource and touch demo://counter at this interval, so that listeners see changes")
	app := flag.Bool("app", false, "also serve an MCP Apps app: the weather tool points at the HTML resource ui://demo/weather through _meta.ui")
	flag.Parse()

	var versions []string
	switch *era {
	case "legacy":
		versions = legacyVersions
	case "modern":
		versions = modernVersions
	default:
		fmt.Fprintf(os.Stderr, "demo: --era must be legacy or modern, not %q\n", *era)
		os.Exit(2)
	}

	level := slog.LevelError
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	d := newDemo(*stepDelay)
	d.legacy = *era == "legacy"
	server := mcp.NewServer(&mcp.Implementation{Name: "snodo-demo", Title: "Snodo demo server", Version: "1.0.0"}, &mcp.ServerOptions{
		Instructions:              "A demo of what a server can ask of a Snodo client. Try the register tool.",
		Logger:                    logger,
		SupportedProtocolVersions: versions,
		CompletionHandler:         d.complete,
		SubscribeHandler:          func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler:        func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		},
	})
	d.server = server
	d.register()
	if *app {
		d.registerApp()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *churn > 0 {
		go d.churn(ctx, *churn)
	}
	if *httpAddr != "" {
		if err := serveHTTP(ctx, server, *httpAddr, *token, *era == "modern"); err != nil {
			fmt.Fprintf(os.Stderr, "demo: %v\n", err)
			os.Exit(1)
		}
		return
	}
	var t mcp.Transport = &mcp.StdioTransport{}
	if *era == "legacy" && !*sdkDiscover {
		t = legacyserver.WithoutDiscover(t)
	}
	if err := server.Run(ctx, t); err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

// serveHTTP serves the server over Streamable HTTP at /mcp until ctx ends.
func serveHTTP(ctx context.Context, server *mcp.Server, addr, token string, stateless bool) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// The SDK serves 2026-07-28 over HTTP in its stateless mode only; the
	// legacy era keeps a session per client, which carries the server's
	// requests on the SSE stream of the call.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: stateless})
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("WWW-Authenticate", `Bearer realm="demo"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stderr, "demo: listening on http://%s/mcp\n", l.Addr())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// demo holds the server and the state its tools change.
type demo struct {
	server    *mcp.Server
	stepDelay time.Duration
	legacy    bool // serving the legacy era

	mu      sync.Mutex
	bonus   bool // whether the bonus tool, prompt and resource are listed
	counter int  // the value of demo://counter
}

func newDemo(stepDelay time.Duration) *demo { return &demo{stepDelay: stepDelay} }

func text(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to send back"`
}

type sampleArgs struct {
	Prompt string `json:"prompt" jsonschema:"what to ask the client's model"`
	Tools  bool   `json:"tools,omitempty" jsonschema:"offer the model a get_weather tool (needs the client's sampling.tools)"`
}

type countArgs struct {
	Steps   int `json:"steps,omitempty" jsonschema:"how many steps to count (default 10)"`
	DelayMS int `json:"delay_ms,omitempty" jsonschema:"pause between steps in milliseconds (default: the server's --step-delay)"`
}

type failArgs struct {
	Message string `json:"message,omitempty" jsonschema:"the error text of the result"`
}

type noArgs struct{}

func (d *demo) register() {
	s := d.server
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Sends the text back."}, func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
		return text("%s", in.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "register", Description: "Asks the user to fill in a registration form (elicitation) and reports what came back."}, d.registerTool)
	mcp.AddTool(s, &mcp.Tool{Name: "connect", Description: "Asks the user to open a page of the server's (URL-mode elicitation) and reports the answer."}, d.connectTool)
	mcp.AddTool(s, &mcp.Tool{Name: "traceparent", Description: "Reports the W3C trace context the request carried in _meta (traceparent), to check trace propagation."}, func(_ context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		tp, _ := req.Params.Meta["traceparent"].(string)
		if tp == "" {
			return text("no traceparent"), nil, nil
		}
		return text("traceparent %s", tp), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sample", Description: "Asks the client's model a question (sampling) and reports the answer."}, d.sampleTool)
	mcp.AddTool(s, &mcp.Tool{Name: "roots", Description: "Asks the client for its roots and lists them."}, d.rootsTool)
	mcp.AddTool(s, &mcp.Tool{Name: "count", Description: "Counts slowly, reporting progress at each step; cancellable."}, d.countTool)
	mcp.AddTool(s, &mcp.Tool{Name: "toggle_bonus", Description: "Adds the bonus tool, prompt and resource, or removes them: the server's lists change."}, d.toggleTool)
	mcp.AddTool(s, &mcp.Tool{Name: "touch", Description: "Increments demo://counter and tells subscribers it changed."}, d.touchTool)
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Returns a tool result with isError set."}, func(_ context.Context, _ *mcp.CallToolRequest, in failArgs) (*mcp.CallToolResult, any, error) {
		msg := in.Message
		if msg == "" {
			msg = "the fail tool always fails"
		}
		res := text("%s", msg)
		res.IsError = true
		return res, nil, nil
	})

	s.AddResource(&mcp.Resource{URI: "demo://readme", Name: "readme", Title: "About this server", MIMEType: "text/plain"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "demo://readme", MIMEType: "text/plain",
			Text: "This server asks its client for input: call register, sample or roots."}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "demo://counter", Name: "counter", Description: "A number the touch tool increments.", MIMEType: "text/plain"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		d.mu.Lock()
		n := d.counter
		d.mu.Unlock()
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "demo://counter", MIMEType: "text/plain", Text: fmt.Sprint(n)}}}, nil
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "demo://greeting/{name}", Name: "greeting", Description: "A greeting for anyone.", MIMEType: "text/plain"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		name := strings.TrimPrefix(req.Params.URI, "demo://greeting/")
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "Hello, " + name + "!"}}}, nil
	})

	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "A greeting in a chosen style.", Arguments: []*mcp.PromptArgument{
		{Name: "name", Description: "who to greet", Required: true},
		{Name: "style", Description: "formal or casual"},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		name, style := req.Params.Arguments["name"], req.Params.Arguments["style"]
		greeting := "Hi " + name + "!"
		if style == "formal" {
			greeting = "Good day, " + name + "."
		}
		return &mcp.GetPromptResult{Description: "A greeting", Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: "Please greet me like this: " + greeting}},
		}}, nil
	})
}

// registerTool elicits a form. The SDK turns the InputRequests into an
// elicitation/create request (legacy) or an input_required result (modern).
func (d *demo) registerTool(_ context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
	if resp, ok := req.Params.InputResponses["registration"].(*mcp.ElicitResult); ok && resp != nil {
		if resp.Action != "accept" {
			return text("registration %sed: nothing saved", strings.TrimSuffix(resp.Action, "e")), nil, nil
		}
		c := resp.Content
		res := text("registered %v (age %v, plan %v, newsletter %v)", c["name"], c["age"], c["plan"], c["newsletter"])
		res.StructuredContent = map[string]any{"action": resp.Action, "content": c}
		return res, nil, nil
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
		"registration": &mcp.ElicitParams{
			Mode:    "form",
			Message: "Please register for the demo.",
			RequestedSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":       map[string]any{"type": "string", "title": "Name", "description": "Your name", "default": "Ada"},
					"age":        map[string]any{"type": "integer", "title": "Age", "minimum": 0, "default": 36},
					"plan":       map[string]any{"type": "string", "title": "Plan", "enum": []string{"free", "pro"}, "default": "free"},
					"newsletter": map[string]any{"type": "boolean", "title": "Newsletter", "default": false},
				},
				"required": []string{"name"},
			},
		},
	}}, nil, nil
}

// connectURL is the page the connect tool asks the user to open.
const connectURL = "https://demo.example/connect?session=42"

// connectTool elicits in URL mode. In the legacy era, an accepted
// elicitation is followed by notifications/elicitation/complete, as if the
// user had finished on the page at once.
func (d *demo) connectTool(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
	if resp, ok := req.Params.InputResponses["login"].(*mcp.ElicitResult); ok && resp != nil {
		if resp.Action != "accept" {
			return text("connect %sed: not connected", strings.TrimSuffix(resp.Action, "e")), nil, nil
		}
		if d.legacy {
			_ = req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: "demo-login-42"})
		}
		return text("connected"), nil, nil
	}
	p := &mcp.ElicitParams{Mode: "url", Message: "Sign in to the demo service to connect it.", URL: connectURL}
	if d.legacy {
		p.ElicitationID = "demo-login-42"
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"login": p}}, nil, nil
}

func (d *demo) sampleTool(_ context.Context, req *mcp.CallToolRequest, in sampleArgs) (*mcp.CallToolResult, any, error) {
	switch resp := req.Params.InputResponses["answer"].(type) {
	case *mcp.CreateMessageWithToolsResult:
		for _, c := range resp.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				return text("%s answered: %s", resp.Model, t.Text), nil, nil
			}
		}
		return text("%s answered without text", resp.Model), nil, nil
	case *mcp.CreateMessageResult:
		if t, ok := resp.Content.(*mcp.TextContent); ok {
			return text("%s answered: %s", resp.Model, t.Text), nil, nil
		}
		return text("%s answered without text", resp.Model), nil, nil
	}
	prompt := in.Prompt
	if prompt == "" {
		prompt = "What is the capital of France?"
	}
	if in.Tools {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
			"answer": &mcp.CreateMessageWithToolsParams{
				Messages:  []*mcp.SamplingMessageV2{{Role: "user", Content: []mcp.Content{&mcp.TextContent{Text: prompt}}}},
				MaxTokens: 100,
				Tools:     []*mcp.Tool{{Name: "get_weather", Description: "The weather in a city.", InputSchema: map[string]any{"type": "object"}}},
			},
		}}, nil, nil
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
		"answer": &mcp.CreateMessageParams{
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: prompt}}},
			MaxTokens: 100,
		},
	}}, nil, nil
}

func (d *demo) rootsTool(_ context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
	if resp, ok := req.Params.InputResponses["roots"].(*mcp.ListRootsResult); ok && resp != nil {
		uris := make([]string, 0, len(resp.Roots))
		for _, r := range resp.Roots {
			uris = append(uris, r.URI)
		}
		return text("%d roots: %s", len(uris), strings.Join(uris, ", ")), nil, nil
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"roots": &mcp.ListRootsParams{}}}, nil, nil
}

// countTool reports progress at each step when the caller asked for it, and
// stops when the request is cancelled.
func (d *demo) countTool(ctx context.Context, req *mcp.CallToolRequest, in countArgs) (*mcp.CallToolResult, any, error) {
	steps := in.Steps
	if steps <= 0 {
		steps = 10
	}
	delay := d.stepDelay
	if in.DelayMS > 0 {
		delay = time.Duration(in.DelayMS) * time.Millisecond
	}
	token := req.Params.GetProgressToken()
	for i := 1; i <= steps; i++ {
		select {
		case <-ctx.Done():
			fmt.Fprintf(os.Stderr, "count: cancelled at step %d of %d\n", i, steps)
			return nil, nil, ctx.Err()
		case <-time.After(delay):
		}
		if token != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      float64(i),
				Total:         float64(steps),
				Message:       fmt.Sprintf("step %d of %d", i, steps),
			})
		}
	}
	return text("counted to %d", steps), nil, nil
}

func (d *demo) toggleTool(_ context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
	d.mu.Lock()
	d.bonus = !d.bonus
	on := d.bonus
	d.mu.Unlock()
	if !on {
		d.server.RemoveTools("bonus")
		d.server.RemovePrompts("bonus")
		d.server.RemoveResources("demo://bonus")
		return text("removed the bonus tool, prompt and resource"), nil, nil
	}
	mcp.AddTool(d.server, &mcp.Tool{Name: "bonus", Description: "Appears and disappears with toggle_bonus."}, func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
		return text("bonus!"), nil, nil
	})
	d.server.AddPrompt(&mcp.Prompt{Name: "bonus", Description: "Appears and disappears with toggle_bonus."}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "bonus"}}}}, nil
	})
	d.server.AddResource(&mcp.Resource{URI: "demo://bonus", Name: "bonus", MIMEType: "text/plain"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "demo://bonus", Text: "bonus"}}}, nil
	})
	return text("added the bonus tool, prompt and resource"), nil, nil
}

func (d *demo) touchTool(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
	d.mu.Lock()
	d.counter++
	n := d.counter
	d.mu.Unlock()
	_ = d.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "demo://counter"})
	return text("counter is %d", n), nil, nil
}

// names are the completion candidates for the greet prompt's name argument
// and the greeting template's {name}.
var names = []string{"Ada", "Alan", "Barbara", "Grace", "Ken", "Linus", "Margaret"}

func (d *demo) complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	var values []string
	if req.Params.Argument.Name == "name" {
		for _, n := range names {
			if strings.HasPrefix(strings.ToLower(n), strings.ToLower(req.Params.Argument.Value)) {
				values = append(values, n)
			}
		}
	}
	if req.Params.Argument.Name == "style" {
		values = []string{"casual", "formal"}
	}
	if values == nil {
		values = []string{}
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}, nil
}

// churn changes the server's lists and demo://counter every interval.
func (d *demo) churn(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _, _ = d.toggleTool(ctx, nil, noArgs{})
			_, _, _ = d.touchTool(ctx, nil, noArgs{})
		}
	}
}

// weatherApp is the HTML of ui://demo/weather.
const weatherApp = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Weather</title></head>
<body><h1>Weather</h1><p id="sky">…</p></body></html>
`

type weatherArgs struct {
	City string `json:"city,omitempty" jsonschema:"the city (default: here)"`
}

// registerApp adds an MCP Apps app (io.modelcontextprotocol/ui): the
// weather tool, whose _meta.ui.resourceUri points at ui://demo/weather,
// an HTML resource with its own _meta.ui (CSP, border).
func (d *demo) registerApp() {
	mcp.AddTool(d.server, &mcp.Tool{Name: "weather", Description: "Reports the weather; hosts that show MCP Apps show it in its dashboard.",
		Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://demo/weather", "visibility": []string{"model", "app"}}},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in weatherArgs) (*mcp.CallToolResult, any, error) {
		city := in.City
		if city == "" {
			city = "here"
		}
		return text("sunny %s", city), nil, nil
	})
	uiMeta := mcp.Meta{"ui": map[string]any{"csp": map[string]any{"connectDomains": []string{}}, "prefersBorder": true}}
	d.server.AddResource(&mcp.Resource{URI: "ui://demo/weather", Name: "weather-dashboard", Description: "The weather tool's dashboard (MCP Apps).",
		MIMEType: "text/html;profile=mcp-app", Meta: uiMeta}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "ui://demo/weather", MIMEType: "text/html;profile=mcp-app", Text: weatherApp, Meta: uiMeta}}}, nil
	})
}
