package stdio_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/stdio"
)

// Start a server, answer what it asks, make a request, and shut down the
// way MCP's stdio transport says: close stdin, then wait for the exit.
func ExampleConnect() {
	ctx := context.Background()
	conn, err := stdio.Connect(ctx, stdio.Config{
		Command: "npx",
		Args:    []string{"-y", "@modelcontextprotocol/server-everything"},
		Env:     []stdio.EnvVar{stdio.Set("LOG_LEVEL", "debug"), stdio.Unset("NODE_OPTIONS")},
		OnServerRequest: func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
			if req.Method == "ping" {
				return json.RawMessage(`{}`), nil
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "not supported: " + req.Method}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := conn.Request(ctx, &jsonrpc.Request{
		Method: "tools/list",
		Params: json.RawMessage(`{"_meta":{"progressToken":"list-1"}}`),
	}, transport.RequestOptions{
		Timeout: 30 * time.Second,
		OnProgress: func(params json.RawMessage) error {
			fmt.Println("progress:", string(params))
			return nil
		},
	})
	if err != nil {
		log.Fatal(err) // a *jsonrpc.Error of kind transport: -32000, -32001
	}
	fmt.Println(string(resp.Result))

	conn.Close()
	state, _ := conn.Wait(ctx)
	fmt.Println("server exited:", state)
}
