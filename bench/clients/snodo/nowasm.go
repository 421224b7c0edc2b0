//go:build nowasm

package main

import (
	"context"
	"errors"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/bench/internal/driver"
)

// dialWasm refuses: this build does not link the Wasm host.
func dialWasm(context.Context, driver.Config, snodo.Era) (*conn, error) {
	return nil, errors.New("--wasm: this client was built without the Wasm host (-tags nowasm); use snodo-wasm, built without the tag")
}
