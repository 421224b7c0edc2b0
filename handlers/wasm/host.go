package wasm

import (
	"context"
	"crypto/sha256"
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
	// means DefaultCacheDir (or no disk cache when there is no user cache
	// directory). It is created with mode 0700 if it is missing. NewHost
	// refuses it with an *UnsafeCacheError when it, or any directory
	// above it, is owned by someone other than the user or root, or is
	// writable by group or others (a sticky directory such as /tmp is
	// fine above it): whoever can change the cache could choose the code
	// modules run. Each cached module is authenticated with the key of
	// CacheKeyFile; an entry that fails its check is removed, logged at
	// warn and compiled again.
	CacheDir string

	// CacheKeyFile holds the key that authenticates the cache's entries
	// (HMAC-SHA256). "" means DefaultCacheKeyFile; when there is no user
	// configuration directory either, compiled code is kept in memory
	// only. It is created (32 random bytes, mode 0600) if it is missing,
	// and refused like CacheDir when it or its directory is not the
	// user's alone.
	CacheKeyFile string

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

	// CompileIn, when not nil, compiles each module missing from the
	// on-disk cache in a child process within its bounds (see
	// ServeCompile), and validates there each untrusted module not yet
	// validated; nil does both in this process. Compiling there needs the
	// disk cache: with NoDiskCache, modules compile in this process.
	CompileIn *ChildCompile
}

// DefaultCacheDir returns the default compilation cache directory,
// os.UserCacheDir()/snodo/compiled. (Before the cache's entries were
// authenticated it was snodo/wazero, which held wazero's own files; Snodo
// no longer reads that directory, and it can be removed.)
func DefaultCacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "snodo", "compiled"), nil
}

// Host loads and runs Wasm handler modules. It is safe for concurrent use.
type Host struct {
	cache     wazero.CompilationCache
	disk      *diskCache // nil: compiled code is kept in memory only
	logger    *slog.Logger
	compileIn *ChildCompile

	budget memBudget

	validatorOnce sync.Once
	validator     wazero.Runtime // an interpreter, for validate

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

// NewHost returns a Host with the compilation cache of cfg. A cache
// directory or key file others could change is an *UnsafeCacheError.
func NewHost(cfg HostConfig) (*Host, error) {
	h := &Host{runtimes: map[runtimeKey]wazero.Runtime{}, logger: cfg.Logger, compileIn: cfg.CompileIn}
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
	disk, err := openDiskCache(dir, cfg.CacheKeyFile, h.logger)
	if err != nil {
		return nil, err
	}
	if disk == nil {
		h.cache = wazero.NewCompilationCache()
		return h, nil
	}
	h.cache, h.disk = disk.wazero, disk
	return h, nil
}

// compileModule compiles wasm in rt, one of the host's runtimes, whose
// close-on-context-done is closeOnDone, through the authenticated disk
// cache if the host has one (cache.go). A module missing from the cache is
// compiled in a child process first when the host is configured so
// (compilechild.go): rt's compile then reads the child's code back.
func (h *Host) compileModule(ctx context.Context, rt wazero.Runtime, closeOnDone bool, wasm []byte) (wazero.CompiledModule, error) {
	if h.disk == nil {
		return rt.CompileModule(ctx, wasm)
	}
	var flags byte
	if closeOnDone {
		flags = 1 // wazero keys compiled code by this switch too
	}
	var child func(dir string) error
	if h.compileIn != nil {
		child = func(dir string) error { return compileInChild(ctx, *h.compileIn, dir, closeOnDone, wasm) }
	}
	return h.disk.compile(ctx, rt, flags, wasm, child)
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
// stays for the next process; the private directory wazero was given is
// removed.
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
	h.validatorOnce.Do(func() {}) // no validator from now on
	if h.validator != nil {
		errs = append(errs, h.validator.Close(ctx))
	}
	errs = append(errs, h.cache.Close(ctx))
	if h.disk != nil {
		errs = append(errs, h.disk.close())
	}
	return errors.Join(errs...)
}

// validate checks that bin is a valid module, as wazero's compiler would,
// without compiling it to native code: it is compiled by an interpreter
// runtime that the host keeps for this alone. Snodo's instrumentation
// reads only modules that passed it. With a disk cache, a module that
// passed once is recorded, under the cache's MAC, and not validated again.
// With HostConfig.CompileIn, the validator runs in the compile child.
func (h *Host) validate(ctx context.Context, bin []byte) error {
	var sum [sha256.Size]byte
	if h.disk != nil {
		if sum = sha256.Sum256(bin); h.disk.validated(sum) {
			return nil
		}
	}
	if h.compileIn != nil {
		// In the compile child, within its bounds: validating costs
		// time and memory in proportion to the code, as compiling does.
		if err := compileInChild(ctx, *h.compileIn, "", false, bin); err != nil {
			var ce *childError
			if errors.As(err, &ce) {
				return &invalidError{ce.msg}
			}
			return err
		}
	} else {
		h.validatorOnce.Do(func() {
			h.validator = wazero.NewRuntimeWithConfig(context.Background(), wazero.NewRuntimeConfigInterpreter())
		})
		if h.validator == nil {
			return errors.New("host is closed")
		}
		cm, err := h.validator.CompileModule(ctx, bin)
		if err != nil {
			return &invalidError{err.Error()}
		}
		cm.Close(ctx)
	}
	if h.disk != nil {
		h.disk.markValidated(sum)
	}
	return nil
}

// invalidError is a module the validator refused.
type invalidError struct{ reason string }

func (e *invalidError) Error() string { return "invalid module: " + e.reason }
