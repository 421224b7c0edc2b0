package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	mcphttp "github.com/snodo/snodo/transport/http"
)

// With a legacy server over HTTP, a server request comes on the stream of
// the call it relates to: the proxy carries it to the 2026-07-28 host
// request that made that call, not to the oldest call in flight.
func TestLegacyHTTPServerRequestRidesOnItsOwnCall(t *testing.T) {
	holding, release := make(chan struct{}), make(chan struct{})
	s := mcp.NewServer(&mcp.Implementation{Name: "related", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "hold"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		close(holding)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "held"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		r, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.Action}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer srv.Close()
	defer srv.CloseClientConnections()

	tr, err := mcphttp.New(mcphttp.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	hostIn, hostWrites := io.Pipe()
	hostReads, proxyOut := io.Pipe()
	p := New(Config{}, hostIn, proxyOut)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := snodo.Connect(ctx, tr, &snodo.Options{
		Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: p},
		Era:      snodo.EraLegacy,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	served := make(chan error, 1)
	go func() { served <- p.Serve(context.Background(), c) }()
	// On a failure, the held call and the host's input end first.
	defer func() {
		free()
		hostWrites.Close()
		proxyOut.Close()
	}()
	lines := make(chan map[string]json.RawMessage, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(hostReads)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
	}()
	send := func(line string) {
		if _, err := io.WriteString(hostWrites, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	response := func() map[string]json.RawMessage {
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatal("the proxy's output ended")
				}
				if _, isResp := m["id"]; isResp && m["method"] == nil {
					return m
				}
			case <-ctx.Done():
				t.Fatal("no response from the proxy")
			}
		}
	}
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

	send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"hold"}}`)
	<-holding // the older call is in flight on the server
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + meta + `,"name":"ask"}}`)
	r := response()
	var res struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	_ = json.Unmarshal(r["result"], &res)
	if string(r["id"]) != "2" || res.ResultType != "input_required" || len(res.InputRequests) != 1 {
		t.Fatalf("the elicitation of the ask call came as %s %s, want an input_required answer to request 2", r["id"], r["result"])
	}
	var key string
	for k := range res.InputRequests {
		key = k
	}
	state, _ := json.Marshal(res.RequestState)
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{` + meta + `,"name":"ask","requestState":` + string(state) +
		`,"inputResponses":{"` + key + `":{"action":"decline"}}}}`)
	if r := response(); string(r["id"]) != "3" || !json.Valid(r["result"]) || !containsText(r["result"], "decline") {
		t.Errorf("the retry was answered %s %s", r["id"], r)
	}
	free()
	if r := response(); string(r["id"]) != "1" || !containsText(r["result"], "held") {
		t.Errorf("the held call was answered %s %s", r["id"], r)
	}
	hostWrites.Close()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	proxyOut.Close()
	for range lines {
	}
}

func containsText(raw json.RawMessage, text string) bool {
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(raw, &r)
	return len(r.Content) > 0 && r.Content[0].Text == text
}
