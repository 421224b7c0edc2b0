package wasm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/assemblyscript"

	"github.com/snodo/snodo/abi"
)

// HostConfig configures a Host. The zero value is ready to use.
type HostConfig struct {
	// CacheDir is where compiled modules are cached across processes. ""
	// means os.UserCacheDir()/snodo/wazero (or no disk cache when there is
	// no user cache directory).
	CacheDir string

	// NoDiskCache keeps compiled code in memory only.
	NoDiskCache bool

	// Logger receives what modules log with the log import, tagged with the
	// module's name. nil means slog.Default().
	Logger *slog.Logger

	// MaxTotalMemory bounds the Wasm linear memory of all the instances of
	// all the host's modules together, in bytes (default
	// DefaultMaxTotalMemory, 2 GiB). Each instance reserves its module's
	// MemoryLimit, which memory.grow can never pass, when it is created and
	// gives it back when it is closed. A call that needs a new instance
	// when the budget is spent closes idle instances (of any module) to
	// make room, or else waits for one to go idle or be closed — at most
	// the module's Timeout and never past the caller's context — and then
	// fails with -32603 naming the budget. A module whose MemoryLimit is
	// over the budget does not load.
	MaxTotalMemory int64
}

// DefaultCacheDir returns the default compilation cache directory,
// os.UserCacheDir()/snodo/wazero.
func DefaultCacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "snodo", "wazero"), nil
}

// Host loads and runs Wasm handler modules. It is safe for concurrent use.
type Host struct {
	cache  wazero.CompilationCache
	logger *slog.Logger

	budget memBudget

	mu       sync.Mutex
	runtimes map[runtimeKey]wazero.Runtime
	modules  []*Module
	closed   bool
}

// runtimeKey is what a wazero runtime fixes for every module in it.
type runtimeKey struct {
	memoryLimitPages uint32
	closeOnDone      bool // wazero's close-on-context-done
}

// NewHost returns a Host with the compilation cache of cfg.
func NewHost(cfg HostConfig) (*Host, error) {
	h := &Host{runtimes: map[runtimeKey]wazero.Runtime{}, logger: cfg.Logger}
	if h.logger == nil {
		h.logger = slog.Default()
	}
	maxMem := cfg.MaxTotalMemory
	if maxMem <= 0 {
		maxMem = DefaultMaxTotalMemory
	}
	h.budget.init(maxMem)
	if cfg.NoDiskCache {
		h.cache = wazero.NewCompilationCache()
		return h, nil
	}
	dir := cfg.CacheDir
	if dir == "" {
		d, err := DefaultCacheDir()
		if err != nil {
			h.cache = wazero.NewCompilationCache()
			return h, nil
		}
		dir = d
	}
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil, fmt.Errorf("wasm: compilation cache in %s: %w", dir, err)
	}
	h.cache = cache
	return h, nil
}

// runtime returns the runtime for key, creating it with the host modules
// every handler may import: WASI preview 1 (wazero's, with poll_oneoff's
// sleep cut by the call's context: hostcalls.go), snodo and
// AssemblyScript's env.
func (h *Host) runtime(ctx context.Context, key runtimeKey) (wazero.Runtime, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("wasm: host is closed")
	}
	if rt, ok := h.runtimes[key]; ok {
		return rt, nil
	}
	rc := wazero.NewRuntimeConfig().
		WithCompilationCache(h.cache).
		WithMemoryLimitPages(key.memoryLimitPages).
		WithCloseOnContextDone(key.closeOnDone)
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	if err := instantiateWASI(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("wasm: WASI: %w", err)
	}
	if _, err := assemblyscript.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("wasm: AssemblyScript env: %w", err)
	}
	if err := instantiateSnodo(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("wasm: %s host module: %w", abi.HostModule, err)
	}
	h.runtimes[key] = rt
	return rt, nil
}

// Close closes every module and runtime; calls in flight are stopped and
// fail, and Close waits for them as Module.Close does. The disk cache
// stays for the next process.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	mods := h.modules
	rts := h.runtimes
	h.modules, h.runtimes = nil, nil
	h.mu.Unlock()
	// Every call in flight is stopped first, then each module waits for
	// its own (Module.Close): a runtime is closed once no call runs in it,
	// as far as the calls can be stopped.
	for _, m := range mods {
		m.closeCalls(errModuleClosed)
	}
	for _, m := range mods {
		m.Close(ctx)
	}
	var errs []error
	for _, rt := range rts {
		errs = append(errs, rt.Close(ctx))
	}
	errs = append(errs, h.cache.Close(ctx))
	return errors.Join(errs...)
}
