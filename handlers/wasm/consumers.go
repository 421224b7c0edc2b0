package wasm

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
)

// ProgressFunc returns a function that gives the module the params of each
// progress notification of one request (ABI.md section 3.2), convertible
// to transport.ProgressFunc. It returns nil to let the request go on, and an
// error — the module answered STOP or ERROR, or its call failed — to cancel
// the request on the server: the rule for a progress function that raises.
// Calls run under ctx and the module's deadline.
//
// It panics if the module's manifest does not say "progress": true.
func (m *Module) ProgressFunc(ctx context.Context) func(params json.RawMessage) error {
	if !m.manifest.Progress {
		panic(fmt.Sprintf("wasm module %q does not consume progress notifications", m.name))
	}
	return func(params json.RawMessage) error {
		res, err := m.call(ctx, entryProgress, "", params)
		if err != nil {
			return err
		}
		switch res.status {
		case abi.StatusOK:
			return nil
		case abi.StatusStop:
			return m.stopError(res.output, "cancelled the request")
		}
		return m.guestError(res.output, "failed on a progress notification")
	}
}

// ConsumeEvent gives the module one event of a subscription (ABI.md
// section 3.3). stop is true when the subscription should end: cleanly
// (err nil) when the module answered STOP, with err when it answered ERROR
// or its call failed.
//
// A module whose manifest does not say "events": true answers every event
// with stop and a -32601 error.
func (m *Module) ConsumeEvent(ctx context.Context, method string, params json.RawMessage) (stop bool, err error) {
	if !m.manifest.Events {
		return true, &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("wasm module %q does not consume subscription events", m.name)}
	}
	res, err := m.call(ctx, entryEvent, method, params)
	if err != nil {
		return true, err
	}
	switch res.status {
	case abi.StatusOK:
		return false, nil
	case abi.StatusStop:
		return true, nil
	}
	return true, m.guestError(res.output, "failed on a subscription event")
}

// stopError is the error a STOP answer cancels a request with: the
// module's error object if it gave one, else -32603 naming the module.
func (m *Module) stopError(output []byte, what string) *jsonrpc.Error {
	if len(output) > 0 {
		return m.guestError(output, what)
	}
	return &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("wasm module %q %s", m.name, what)}
}
