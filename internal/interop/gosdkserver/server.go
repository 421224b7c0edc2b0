// Package gosdkserver is an MCP server built with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), for Snodo's interop tests and
// examples. Its tools ask the client for input (elicitation, sampling,
// roots; several rounds in 2026-07-28), report progress, log, and change
// the server's tool list and a resource.
package gosdkserver

//lint:file-ignore SA1019 MCP 2026-07-28 deprecates sampling, roots and logging, but servers still use them and Snodo supports them: this server tests that.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snodo/snodo/internal/legacyserver"
)

// Run serves MCP over stdio with the official Go SDK: in the
// 2026-07-28 era (dual-era server, as the SDK is), or legacy only, where
// server/discover is refused the way a legacy server refuses an unknown
// method before initialize.
func Run(legacy bool) int {
	versions := []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
	if legacy {
		versions = versions[1:]
	}
	return run(versions, legacy, nil)
}

// RunCacheable is Run with every cacheable result (the four lists,
// resources/read, server/discover) marked fresh for ttlMs, public: the
// 2026-07-28 caching hints, for the client's result cache.
func RunCacheable(legacy bool, ttlMs int) int {
	versions := []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
	if legacy {
		versions = versions[1:]
	}
	return run(versions, legacy, func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
		c.TTLMs, c.CacheScope = ttlMs, "public"
	})
}

// RunVersions serves the given versions, answering server/discover the
// SDK's own way: a request for a version it does not serve gets -32022
// with the list.
func RunVersions(versions []string) int { return run(versions, false, nil) }

func run(versions []string, legacy bool, cacheable func(context.Context, mcp.Request, *mcp.Cacheable)) int {
	s := newServer(versions, cacheable)
	var t mcp.Transport = &mcp.IOTransport{Reader: Stdin, Writer: Stdout}
	if legacy {
		t = legacyserver.WithoutDiscover(t)
	}
	if err := s.Run(context.Background(), t); err != nil && !strings.Contains(err.Error(), "EOF") {
		fmt.Fprintln(os.Stderr, "gosdk server:", err)
		return 1
	}
	return 0
}

// HTTPHandler serves the same server over Streamable HTTP with the SDK's
// mcp.NewStreamableHTTPHandler, for the given versions (nil: every
// version, 2026-07-28 first). With 2026-07-28 the handler is stateless,
// the only way the SDK serves that version over HTTP. Without it the
// server speaks the legacy era only, with a session per client: it
// answers server/discover with -32022 listing its legacy versions, so a
// dual-era client falls back to initialize, and it sends its requests to
// the client on the SSE stream of the call.
func HTTPHandler(versions []string) http.Handler {
	if versions == nil {
		versions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
	}
	s := NewServer(versions)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: slices.Contains(versions, "2026-07-28")})
}

// NewServer returns the interop server speaking versions, for any
// transport (the Streamable HTTP interop tests mount it with
// mcp.NewStreamableHTTPHandler).
func NewServer(versions []string) *mcp.Server { return newServer(versions, nil) }

// newServer is NewServer with the caching hints that cacheable sets, if
// any.
func newServer(versions []string, cacheable func(context.Context, mcp.Request, *mcp.Cacheable)) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "interop-gosdk", Version: "1.8.0"}, &mcp.ServerOptions{
		Instructions:              "Interop server for Snodo.",
		SupportedProtocolVersions: versions,
		SetCacheable:              cacheable,
		SubscribeHandler:          func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler:        func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Logging:   &mcp.LoggingCapabilities{},
		},
	})
	registerTools(s, !slices.Contains(versions, "2026-07-28"))
	return s
}

// Stdin and Stdout are the server's streams; tests may replace them.
var (
	Stdin  io.ReadCloser  = os.Stdin
	Stdout io.WriteCloser = os.Stdout
)

type noArgs struct{}

type countArgs struct {
	Steps   int `json:"steps"`
	DelayMS int `json:"delay_ms"`
}

// longRunArgs are the arguments of the reference server's (server-everything)
// trigger-long-running-operation, which this server also has.
type longRunArgs struct {
	Duration float64 `json:"duration"` // seconds, default 10
	Steps    int     `json:"steps"`    // default 5
}

func text(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

var nameForm = &mcp.ElicitParams{
	Mode:    "form",
	Message: "Your name?",
	RequestedSchema: map[string]any{
		"type":       "object",
		"properties": map[string]any{"name": map[string]any{"type": "string"}},
		"required":   []string{"name"},
	},
}

func sampledText(r mcp.InputResponse) string {
	switch resp := r.(type) {
	case *mcp.CreateMessageWithToolsResult:
		for _, c := range resp.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				return resp.Model + ": " + t.Text
			}
		}
	case *mcp.CreateMessageResult:
		if t, ok := resp.Content.(*mcp.TextContent); ok {
			return resp.Model + ": " + t.Text
		}
	}
	return "?"
}

// MultiState is a requestState with characters that JSON escapes, so that
// a client that re-encodes it instead of echoing it is caught.
const MultiState = "round-%d \"é\" <&>/"

func registerTools(s *mcp.Server, legacy bool) {
	// ask elicits a name: an elicitation/create request in a legacy era,
	// an input_required result in 2026-07-28.
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Elicits a name."}, func(_ context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		if r, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult); ok && r != nil {
			return text("hello %v (%s)", r.Content["name"], r.Action), nil, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": nameForm}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sample", Description: "Samples the client's model."}, func(_ context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		if r, ok := req.Params.InputResponses["answer"]; ok && r != nil {
			return text("sampled %s", sampledText(r)), nil, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"answer": &mcp.CreateMessageParams{
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Capital of France?"}}},
			MaxTokens: 50,
		}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "roots", Description: "Lists the client's roots."}, func(_ context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		if r, ok := req.Params.InputResponses["roots"].(*mcp.ListRootsResult); ok && r != nil {
			var uris []string
			for _, root := range r.Roots {
				uris = append(uris, root.URI)
			}
			return text("roots %s", strings.Join(uris, ",")), nil, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"roots": &mcp.ListRootsParams{}}}, nil, nil
	})
	if !legacy {
		// multi asks in three rounds, carrying its progress in
		// requestState, which it checks on each retry.
		mcp.AddTool(s, &mcp.Tool{Name: "multi", Description: "Asks for input in three rounds."}, func(_ context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			p := req.Params
			switch p.RequestState {
			case "":
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": nameForm}, RequestState: fmt.Sprintf(MultiState, 1)}, nil, nil
			case fmt.Sprintf(MultiState, 1):
				if _, ok := p.InputResponses["name"].(*mcp.ElicitResult); !ok {
					return nil, nil, fmt.Errorf("round 2 without the name")
				}
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
					"answer": &mcp.CreateMessageParams{Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "2+2?"}}}, MaxTokens: 5},
					"roots":  &mcp.ListRootsParams{},
				}, RequestState: fmt.Sprintf(MultiState, 2)}, nil, nil
			case fmt.Sprintf(MultiState, 2):
				if _, ok := p.InputResponses["name"]; ok {
					return nil, nil, fmt.Errorf("round 3 carries round 1's answers")
				}
				r, _ := p.InputResponses["roots"].(*mcp.ListRootsResult)
				if r == nil {
					return nil, nil, fmt.Errorf("round 3 without roots")
				}
				return text("three rounds: %s, %d roots", sampledText(p.InputResponses["answer"]), len(r.Roots)), nil, nil
			}
			return nil, nil, fmt.Errorf("requestState %q was not echoed exactly", p.RequestState)
		})
	}
	mcp.AddTool(s, &mcp.Tool{Name: "count", Description: "Counts, reporting progress."}, func(ctx context.Context, req *mcp.CallToolRequest, in countArgs) (*mcp.CallToolResult, any, error) {
		token := req.Params.GetProgressToken()
		for i := 1; i <= in.Steps; i++ {
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(time.Duration(in.DelayMS) * time.Millisecond):
			}
			if token != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: float64(in.Steps), Message: fmt.Sprintf("step %d", i)})
			}
		}
		return text("counted to %d", in.Steps), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "trigger-long-running-operation", Description: "Reports progress over a duration, as the reference server does."}, func(ctx context.Context, req *mcp.CallToolRequest, in longRunArgs) (*mcp.CallToolResult, any, error) {
		if in.Duration == 0 {
			in.Duration = 10
		}
		if in.Steps <= 0 {
			in.Steps = 5
		}
		token := req.Params.GetProgressToken()
		step := time.Duration(in.Duration * float64(time.Second) / float64(in.Steps))
		for i := 1; i <= in.Steps; i++ {
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(step):
			}
			if token != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: float64(in.Steps)})
			}
		}
		return text("Long running operation completed. Duration: %v seconds, Steps: %d.", in.Duration, in.Steps), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "log", Description: "Logs a message."}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Logger: "interop", Data: map[string]any{"said": "careful"}})
		if err != nil {
			return nil, nil, err
		}
		return text("logged"), nil, nil
	})
	var mu sync.Mutex
	extra := 0
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Adds a tool and updates a resource."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		mu.Lock()
		extra++
		name := fmt.Sprintf("extra-%d", extra)
		mu.Unlock()
		mcp.AddTool(s, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
			return text("extra"), nil, nil
		})
		_ = s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "interop://counter"})
		return text("added %s", name), nil, nil
	})
	s.AddResource(&mcp.Resource{URI: "interop://counter", Name: "counter", MIMEType: "text/plain"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "interop://counter", MIMEType: "text/plain", Text: "1"}}}, nil
	})
}
