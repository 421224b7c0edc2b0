package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/handlers/wasm"
	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/jsonrpc"
)

// slot is one module of the configuration while it loads and after. With
// a warm compilation cache its manifest is known before it is loaded (the
// cache's authenticated record of what these bytes described themselves
// as: wasm.Host.CachedManifest), so that Start can declare the client's
// capabilities and connect while the modules load. Nothing but the loaded
// module ever answers: every call waits until it is loaded (or its load
// failed, then the call fails -32603), and a module whose manifest is not
// the one foretold fails to load.
type slot struct {
	cfg  ModuleConfig
	name string
	// manifest is the foretold manifest when foretold, else the loaded
	// module's (set once loading is over, before anything reads it).
	manifest abi.Manifest
	foretold bool
	timeout  time.Duration
	index    int // the module's place in the order of loading

	ready chan struct{} // closed when m or err is set
	m     *wasm.Module
	err   error // a *LoadError
}

func newSlot(cfg ModuleConfig, index int) *slot {
	s := &slot{cfg: cfg, name: wasm.ModuleName(cfg), index: index, timeout: cfg.Timeout, ready: make(chan struct{})}
	if s.timeout <= 0 {
		s.timeout = abi.DefaultTimeoutMillis * time.Millisecond
	}
	return s
}

// module waits for the module to be loaded.
func (s *slot) module(ctx context.Context) (*wasm.Module, error) {
	select {
	case <-s.ready:
	default:
		select {
		case <-s.ready:
		case <-ctx.Done():
			return nil, &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("wasm module %q: still loading when the request was cancelled: %v", s.name, context.Cause(ctx))}
		}
	}
	if s.err != nil {
		return nil, &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("wasm module %q failed to load", s.name), Cause: s.err}
	}
	return s.m, nil
}

// Name is the module's name (intercept.Namer).
func (s *slot) Name() string { return s.name }

// Timeout is the module's Timeout (intercept.Timeouter), as the module
// has it.
func (s *slot) Timeout() time.Duration { return s.timeout }

// Intercepts reports what the manifest intercepts (intercept.Filter).
func (s *slot) Intercepts(method string, results bool) bool {
	return s.manifest.Intercepts(method, results)
}

// HandleRequest answers with the module, once loaded.
func (s *slot) HandleRequest(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	m, err := s.module(ctx)
	if err != nil {
		return nil, err
	}
	return m.HandleRequest(ctx, method, params)
}

// InterceptRequest intercepts with the module, once loaded.
func (s *slot) InterceptRequest(ctx context.Context, r *intercept.Request) (intercept.Decision, error) {
	m, err := s.module(ctx)
	if err != nil {
		return intercept.Decision{}, err
	}
	return m.InterceptRequest(ctx, r)
}

// InterceptResult intercepts with the module, once loaded.
func (s *slot) InterceptResult(ctx context.Context, r *intercept.Result) (intercept.Decision, error) {
	m, err := s.module(ctx)
	if err != nil {
		return intercept.Decision{}, err
	}
	return m.InterceptResult(ctx, r)
}

// progress gives the module one progress notification, once loaded.
func (s *slot) progress(ctx context.Context, params json.RawMessage) error {
	m, err := s.module(ctx)
	if err != nil {
		return err
	}
	return m.ProgressFunc(ctx)(params)
}

// event gives the module one subscription event, once loaded.
func (s *slot) event(ctx context.Context, method string, params json.RawMessage) (bool, error) {
	m, err := s.module(ctx)
	if err != nil {
		return true, err
	}
	return m.ConsumeEvent(ctx, method, params)
}
