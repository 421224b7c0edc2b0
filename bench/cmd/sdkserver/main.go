// Command sdkserver is an MCP server over stdio built with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), written as a user of that SDK would
// write it: typed tool inputs, progress through the session, elicitation
// through the SDK's multi round-trip support (which the SDK turns into an
// elicitation/create request for legacy clients).
//
// Tools: echo {text}, blob {n}, slow {ms, steps} and ask {q}, as in the lean
// server. --era legacy restricts the server to 2025-11-25 and earlier; --era
// modern to 2026-07-28.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text"`
}

type blobIn struct {
	N int `json:"n"`
}

type slowIn struct {
	MS    int `json:"ms"`
	Steps int `json:"steps"`
}

type askIn struct {
	Q string `json:"q"`
}

func main() {
	era := flag.String("era", "legacy", "protocol era: legacy or modern")
	flag.Parse()
	var versions []string
	switch *era {
	case "legacy":
		versions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
	case "modern":
		versions = []string{"2026-07-28"}
	default:
		fmt.Fprintln(os.Stderr, "sdkserver: --era must be legacy or modern")
		os.Exit(2)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "sdkserver", Version: "1.0.0"},
		&mcp.ServerOptions{SupportedProtocolVersions: versions})

	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "returns text"},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	blobs := map[int]string{}
	var blobsMu = make(chan struct{}, 1)
	mcp.AddTool(server, &mcp.Tool{Name: "blob", Description: "returns n bytes"},
		func(ctx context.Context, req *mcp.CallToolRequest, in blobIn) (*mcp.CallToolResult, any, error) {
			blobsMu <- struct{}{}
			b, ok := blobs[in.N]
			if !ok {
				b = strings.Repeat("x", in.N)
				blobs[in.N] = b
			}
			<-blobsMu
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "slow", Description: "sleeps, reporting progress"},
		func(ctx context.Context, req *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
			token := req.Params.GetProgressToken()
			steps := max(in.Steps, 1)
			for i := 1; i <= steps; i++ {
				select {
				case <-time.After(time.Duration(in.MS) * time.Millisecond / time.Duration(steps)):
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
				if token != nil && in.Steps > 0 {
					if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: token, Progress: float64(i), Total: float64(steps),
					}); err != nil {
						return nil, nil, err
					}
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "ask", Description: "elicits an answer"},
		func(ctx context.Context, req *mcp.CallToolRequest, in askIn) (*mcp.CallToolResult, any, error) {
			if resp, ok := req.Params.InputResponses["q"].(*mcp.ElicitResult); ok {
				answer, _ := resp.Content["answer"].(string)
				if resp.Action != "accept" || answer == "" {
					return nil, nil, fmt.Errorf("elicitation was not accepted with an answer")
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answer:" + answer}}}, nil, nil
			}
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{
					Message: in.Q,
					RequestedSchema: map[string]any{
						"type":       "object",
						"properties": map[string]any{"answer": map[string]any{"type": "string"}},
						"required":   []string{"answer"},
					},
				}},
				RequestState: "q",
			}, nil, nil
		})

	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !strings.Contains(err.Error(), "EOF") {
		log.Printf("sdkserver: %v", err)
	}
}
