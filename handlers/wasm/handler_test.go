package wasm_test

import (
	"context"
	"encoding/json"
	"fmt"

	snodo "github.com/snodo/snodo"
	"github.com/snodo/snodo/handlers/wasm"
	"github.com/snodo/snodo/transport"
)

// A Module is the client's handler; its progress consumer is a
// transport.ProgressFunc. (handlers/wasm does not import the client: the
// check lives here.)
var (
	_ snodo.Handler = (*wasm.Module)(nil)
	_               = func(m *wasm.Module) transport.ProgressFunc { return m.ProgressFunc(context.Background()) }
)

// Load a module and answer an elicitation with it.
func Example() {
	ctx := context.Background()
	host, err := wasm.NewHost(wasm.HostConfig{NoDiskCache: true})
	if err != nil {
		panic(err)
	}
	defer host.Close(ctx)

	module, err := host.Load(ctx, wasm.ModuleConfig{
		Path:   "../../examples/handlers/wat/accept/accept.wasm",
		Config: json.RawMessage(`{"confirm":true}`),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var h snodo.Handler = module
	result, err := h.HandleRequest(ctx, "elicitation/create", json.RawMessage(`{"message":"Proceed?","requestedSchema":{"type":"object","properties":{"confirm":{"type":"boolean"}}}}`))
	fmt.Println(string(result), err)
	// Output: {"action":"accept","content":{"confirm":true}} <nil>
}
