package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	mcphttp "github.com/snodo/snodo/transport/http"
)

func answerForm(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`), nil
}

// Connect to a Streamable HTTP server (either era), list its tools, and
// end the session. The README's "Connecting over HTTP" shows this code.
func ExampleNew() {
	ctx := context.Background()
	token := "s3cret"
	run := func() error {
		t, err := mcphttp.New(mcphttp.Config{
			URL:    "https://mcp.example.com/mcp",
			Header: http.Header{"Authorization": {"Bearer " + token}}, // on every request
		})
		if err != nil {
			return err
		}
		client, err := snodo.Connect(ctx, t, &snodo.Options{
			Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: snodo.HandlerFunc(answerForm)},
		})
		if err != nil {
			t.Close()
			return err
		}
		defer client.Close() // DELETEs the session of an initialize-era server, then closes t

		for tool, err := range client.Tools(ctx) {
			if err != nil {
				return err
			}
			fmt.Println(tool.Name)
		}
		return nil
	}
	if err := run(); err != nil {
		fmt.Println(err)
	}
}
