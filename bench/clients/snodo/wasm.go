//go:build !nowasm

package main

import (
	"context"
	"encoding/json"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/bench/internal/driver"
	"github.com/snodo/snodo/handlers/wasm"
)

// dialWasm connects with the elicitation answered by the Wasm handler
// module --wasm names, on a host of its own.
func dialWasm(ctx context.Context, cfg driver.Config, era snodo.Era) (*conn, error) {
	host, err := wasm.NewHost(wasm.HostConfig{})
	if err != nil {
		return nil, err
	}
	mc := wasm.ModuleConfig{Path: *wasmPath}
	if *wasmConfig != "" {
		mc.Config = json.RawMessage(*wasmConfig)
	}
	module, err := host.Load(ctx, mc)
	if err != nil {
		host.Close(ctx)
		return nil, err
	}
	c, err := dial(ctx, cfg, era, module)
	if err != nil {
		host.Close(ctx)
		return nil, err
	}
	c.wasm = true
	c.closeHost = func() { host.Close(context.Background()) }
	return c, nil
}
