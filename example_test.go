package snodo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/transport/stdio"
)

// Connect starts an MCP server over stdio and finds out which protocol era
// it speaks.
func ExampleConnect() {
	ctx := context.Background()
	conn, err := stdio.Connect(ctx, stdio.Config{Command: "mcp-example-server"})
	if err != nil {
		log.Fatal(err)
	}
	client, err := snodo.Connect(ctx, conn, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	fmt.Println(client.Server().Era, client.Server().ProtocolVersion, client.Server().Implementation.Name)
	// Output: modern 2026-07-28 interop-gosdk
}

// A tool call that reports its progress.
func ExampleClient_CallTool() {
	ctx := context.Background()
	conn, err := stdio.Connect(ctx, stdio.Config{Command: "mcp-example-server"})
	if err != nil {
		log.Fatal(err)
	}
	client, err := snodo.Connect(ctx, conn, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	res, err := client.CallTool(ctx, "count", map[string]int{"steps": 3, "delay_ms": 1},
		snodo.WithProgress(func(p snodo.Progress) {
			fmt.Printf("%s: %v of %v\n", p.Message, p.Progress, *p.Total)
		}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// step 1: 1 of 3
	// step 2: 2 of 3
	// step 3: 3 of 3
	// counted to 3
}

// A native Go handler answers the server's elicitation: as an
// elicitation/create request from a legacy server, and as an input_required
// round from a 2026-07-28 server.
func ExampleHandlerFunc() {
	ctx := context.Background()
	elicit := snodo.HandlerFunc(func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		var req struct {
			Message string `json:"message"`
		}
		if err := json.Unmarshal(params, &req); err != nil {
			return nil, err
		}
		fmt.Println("server asks:", req.Message)
		return json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`), nil
	})

	for _, args := range [][]string{{"--legacy"}, nil} {
		conn, err := stdio.Connect(ctx, stdio.Config{Command: "mcp-example-server", Args: args})
		if err != nil {
			log.Fatal(err)
		}
		client, err := snodo.Connect(ctx, conn, &snodo.Options{
			Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: elicit},
		})
		if err != nil {
			log.Fatal(err)
		}
		res, err := client.CallTool(ctx, "ask", nil)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(client.Server().Era, res.Content[0].Text)
		client.Close()
	}
	// Output:
	// server asks: Your name?
	// legacy hello Ada (accept)
	// server asks: Your name?
	// modern hello Ada (accept)
}

// Listen opens a stream of the server's notifications.
func ExampleClient_Listen() {
	ctx := context.Background()
	conn, err := stdio.Connect(ctx, stdio.Config{Command: "mcp-example-server"})
	if err != nil {
		log.Fatal(err)
	}
	client, err := snodo.Connect(ctx, conn, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	accepted, sub, err := client.Listen(ctx, snodo.SubscriptionFilter{ToolsListChanged: true})
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	fmt.Println("accepted tools list changes:", accepted.ToolsListChanged)

	// The grow tool adds a tool to the server.
	if _, err := client.CallTool(ctx, "grow", nil); err != nil {
		log.Fatal(err)
	}
	ev, err := sub.Next(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ev.Method)
	// Output:
	// accepted tools list changes: true
	// notifications/tools/list_changed
}

// The README's Go API example, verbatim (TestREADMEGoAPI checks that the
// README shows exactly this code). Here npx is a stand-in for the reference
// server: see readmeServer.
func Example_goAPI() {
	if err := goAPI(context.Background()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// tools: 8
	// progress 1 of 2
	// progress 2 of 2
	// Long running operation completed. Duration: 1 seconds, Steps: 2.
}

// answerForm answers the server's elicitation requests.
func answerForm(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`), nil
}

func goAPI(ctx context.Context) error {
	conn, err := stdio.Connect(ctx, stdio.Config{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"}})
	if err != nil {
		return err
	}
	client, err := snodo.Connect(ctx, conn, &snodo.Options{ // era probed: 2026-07-28 or initialize
		Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: snodo.HandlerFunc(answerForm)},
	})
	if err != nil {
		conn.Close()
		return err
	}
	defer client.Close() // closes the server's stdin; it exits at EOF

	tools := 0
	for _, err := range client.Tools(ctx) { // every page
		if err != nil {
			return err
		}
		tools++
	}
	fmt.Println("tools:", tools)

	res, err := client.CallTool(ctx, "trigger-long-running-operation", map[string]any{"duration": 1, "steps": 2},
		snodo.WithProgress(func(p snodo.Progress) { fmt.Println("progress", p.Progress, "of", *p.Total) }))
	if errors.Is(err, snodo.ErrTimeout) || errors.Is(err, snodo.ErrConnection) {
		return fmt.Errorf("the server did not answer: %w", err)
	}
	if err != nil {
		return err
	}
	fmt.Println(res.Content[0].Text)
	return nil
}
