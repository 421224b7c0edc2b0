package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental/sysfs"

	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/internal/admit"
	"github.com/snodo/snodo/jsonrpc"
)

const pageSize = 65536

// Module is a loaded handler module: compiled once, run by a pool of
// instances. It answers the requests its manifest lists (HandleRequest),
// and consumes progress notifications (ProgressFunc) and subscription
// events (ConsumeEvent) if its manifest says so. It is safe for concurrent
// use.
type Module struct {
	host     *Host
	name     string
	manifest abi.Manifest
	compiled wazero.CompiledModule
	rt       wazero.Runtime
	modCfg   wazero.ModuleConfig

	config  []byte
	timeout time.Duration
	trusted bool
	// interruptible: the module is instrumented with the fuel checks
	// (interrupt.go), which stop it at its deadline instead of wazero's
	// close-on-context-done.
	interruptible bool
	// memoryLimit is the module's MemoryLimit, which each instance
	// reserves of the host's budget: its linear memory, at most
	// linearLimit, and its tables, at most tableBytes.
	memoryLimit int64
	linearLimit int64
	tableBytes  int64
	maxOutput   int
	logger      *slog.Logger
	// mounts are the module's confined filesystems, closed with it.
	mounts []*rootFS
	// clock: the module is granted the real clocks and sleep; its
	// instances sleep in poll_oneoff (hostcalls.go).
	clock bool

	// closing is the parent of every instance's context: Close cancels it
	// (errModuleClosed), which stops the calls in flight.
	closing    context.Context
	closeCalls context.CancelCauseFunc

	pool pool
}

// ModuleName returns the name a module goes by in logs and errors: its
// Name, or the base name of its Path without ".wasm", with control
// characters escaped (SanitizeText), since a file name can hold anything.
func ModuleName(cfg ModuleConfig) string {
	name := cfg.Name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(cfg.Path), ".wasm")
	}
	return SanitizeText(name)
}

// Load reads, pins, compiles and checks a module against the ABI, then
// creates its first instance and reads its manifest. The error says exactly
// what is missing or wrong.
func (h *Host) Load(ctx context.Context, cfg ModuleConfig) (*Module, error) {
	name := ModuleName(cfg)
	loadErr := func(format string, args ...any) error { return loadError(name, format, args...) }
	wasm, err := readPinned(cfg)
	if err != nil {
		return nil, loadErr("%w", err)
	}

	m := &Module{
		host:        h,
		name:        name,
		config:      cfg.Config,
		timeout:     cfg.Timeout,
		trusted:     cfg.Trusted,
		memoryLimit: cfg.MemoryLimit,
		maxOutput:   cfg.MaxOutput,
		clock:       cfg.Grants.Clock,
	}
	// A module that fails to load leaves this context to the garbage
	// collector: it holds nothing (its instances are closed).
	m.closing, m.closeCalls = context.WithCancelCause(context.Background())
	if m.config == nil {
		m.config = []byte("null")
	} else if !json.Valid(m.config) {
		return nil, loadErr("Config is not valid JSON")
	}
	if m.timeout <= 0 {
		m.timeout = abi.DefaultTimeoutMillis * time.Millisecond
	}
	if m.memoryLimit <= 0 {
		m.memoryLimit = abi.DefaultMemoryLimit
	}
	pages := (m.memoryLimit + pageSize - 1) / pageSize
	if pages > 65536 {
		return nil, loadErr("MemoryLimit %d is over 4 GiB", cfg.MemoryLimit)
	}
	m.memoryLimit = pages * pageSize
	if m.maxOutput <= 0 {
		m.maxOutput = abi.DefaultMaxOutputBytes
	}
	maxInstances := cfg.MaxInstances
	if maxInstances <= 0 {
		// As many as the client's handlers that may run at once.
		maxInstances = admit.DefaultLimit
	}
	m.logger = h.logger.With("wasm_module", name)

	original := wasm
	wasm, linearPages, err := m.prepare(ctx, cfg, wasm, pages)
	if err != nil {
		return nil, loadErr("%w", err)
	}
	rt, err := h.runtime(ctx, runtimeKey{memoryLimitPages: linearPages, closeOnDone: !cfg.Trusted && !m.interruptible})
	if err != nil {
		return nil, err
	}
	m.rt = rt
	compiled, err := h.compileModule(ctx, rt, !cfg.Trusted && !m.interruptible, wasm)
	if err != nil {
		return nil, loadErr("compile: %w", err)
	}
	m.compiled = compiled
	if err := checkCompiled(compiled, m.interruptible); err != nil {
		compiled.Close(ctx)
		return nil, loadErr("%w", err)
	}
	modCfg, mounts, err := sandbox(cfg.Grants)
	if err != nil {
		compiled.Close(ctx)
		return nil, loadErr("%w", err)
	}
	if m.interruptible {
		// _initialize is called after instantiation, once the fuel can
		// be reached (newInstance).
		modCfg = modCfg.WithStartFunctions()
	}
	m.modCfg, m.mounts = modCfg, mounts
	m.pool.init(m, maxInstances)

	// The first instance runs _initialize and gives the manifest; it then
	// waits in the pool for the first call.
	if _, err := h.reserve(ctx, m, nil); err != nil {
		compiled.Close(ctx)
		m.closeMounts()
		return nil, loadErr("first instance: %s", err)
	}
	inst, err := m.newInstance(ctx)
	if err != nil {
		compiled.Close(ctx)
		m.closeMounts()
		return nil, loadErr("first instance: %s", err)
	}
	manifest, err := inst.describe(ctx)
	if err == nil {
		err = checkManifest(manifest, compiled)
	}
	if err != nil {
		inst.close(ctx)
		compiled.Close(ctx)
		m.closeMounts()
		return nil, loadErr("%s", err)
	}
	m.manifest = manifest
	m.pool.adopt(inst)
	h.rememberManifest(cfg, original, manifest)

	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		m.Close(ctx)
		return nil, loadErr("host is closed")
	}
	h.modules = append(h.modules, m)
	h.mu.Unlock()
	return m, nil
}

// loadError is the error of Load for the module name.
func loadError(name, format string, args ...any) error {
	e := fmt.Errorf("wasm module %q: "+format, append([]any{name}, args...)...)
	return &escapedError{msg: SanitizeText(e.Error()), err: errors.Unwrap(e)}
}

// readPinned returns the module's bytes, read from cfg.Path unless given
// as cfg.Wasm, within the size cap and matching the sha256 pin.
func readPinned(cfg ModuleConfig) ([]byte, error) {
	wasm := cfg.Wasm
	if wasm == nil {
		if cfg.Path == "" {
			return nil, errors.New("no Path and no Wasm bytes")
		}
		b, err := ReadModuleFile(cfg.Path, cfg.MaxModuleBytes)
		if err != nil {
			return nil, err
		}
		wasm = b
	} else if limit := moduleCap(cfg.MaxModuleBytes); int64(len(wasm)) > limit {
		return nil, sizeCapError("", int64(len(wasm)), limit)
	}
	if cfg.SHA256 != "" {
		sum := sha256.Sum256(wasm)
		got := hex.EncodeToString(sum[:])
		if !strings.EqualFold(got, strings.TrimSpace(cfg.SHA256)) {
			return nil, fmt.Errorf("sha256 mismatch: pinned %s, file has %s; refusing to load", strings.ToLower(cfg.SHA256), got)
		}
	}
	return wasm, nil
}

// prepare returns the bytes to compile of wasm, a module of m given pages
// of memory limit, and the pages its linear memory may use. It bounds what
// the module names before anything else reads it (bounds.go), then, for an
// untrusted module, validates it before instrumenting it (interrupt.go),
// so that the instrumenter only ever sees a valid module.
func (m *Module) prepare(ctx context.Context, cfg ModuleConfig, wasm []byte, pages int64) ([]byte, uint32, error) {
	lim := cfg.Limits.withDefaults()
	sh, err := scanModule(wasm, lim)
	if err != nil {
		return nil, 0, err
	}
	tableElems, err := sh.boundTables(lim.TableElements)
	if err != nil {
		return nil, 0, err
	}
	m.tableBytes = tableElems * tableElementBytes
	tablePages := (m.tableBytes + pageSize - 1) / pageSize
	if tablePages >= pages {
		return nil, 0, fmt.Errorf("its tables take %s (%d elements) of its memory limit of %s, which leaves its memory nothing; raise memory_limit",
			sizeString(m.tableBytes), tableElems, sizeString(m.memoryLimit))
	}
	m.linearLimit = (pages - tablePages) * pageSize
	if !cfg.Trusted {
		if err := m.host.validate(ctx, wasm); err != nil {
			return nil, 0, err
		}
		if iw, err := instrument(wasm, sh); err == nil {
			wasm, m.interruptible = iw, true
		} else {
			m.logger.Debug("deadline through wazero's close-on-context-done", "reason", err.Error())
		}
	}
	if !m.interruptible {
		wasm = withBoundedTables(wasm, sh)
	}
	return wasm, uint32(pages - tablePages), nil
}

// sandbox turns grants into a wazero module config. Without grants: no
// files, no environment, no arguments, stdio discarded, fake clocks, no
// sleep and deterministic random bytes (wazero's defaults). Each mount is
// a rootFS, confined to its directory; the caller closes them. The clock
// grant's sleep is set per instance (newInstance), where it can be cut.
func sandbox(g Grants) (wazero.ModuleConfig, []*rootFS, error) {
	mc := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions(abi.ExportInitialize)
	var mounts []*rootFS
	if len(g.Mounts) > 0 {
		fsc := wazero.NewFSConfig()
		for _, mt := range g.Mounts {
			st, err := os.Stat(mt.HostDir)
			if err == nil && !st.IsDir() {
				err = fmt.Errorf("%s is not a directory", mt.HostDir)
			}
			var rfs *rootFS
			if err == nil {
				rfs, err = newRootFS(mt.HostDir, mt.ReadOnly)
			}
			if err != nil {
				for _, r := range mounts {
					r.close()
				}
				return nil, nil, fmt.Errorf("mount: %w", err)
			}
			mounts = append(mounts, rfs)
			guest := mt.GuestPath
			if guest == "" {
				guest = "/"
			}
			fsc = fsc.(sysfs.FSConfig).WithSysFSMount(rfs, guest)
		}
		mc = mc.WithFSConfig(fsc)
	}
	for _, name := range g.Env {
		if v, ok := os.LookupEnv(name); ok {
			mc = mc.WithEnv(name, v)
		}
	}
	if g.Clock {
		mc = mc.WithSysWalltime().WithSysNanotime()
	}
	if g.Random {
		mc = mc.WithRandSource(rand.Reader)
	}
	return mc, mounts, nil
}

// closeMounts closes the module's mount roots; closing twice is harmless.
// A file a call still has open stays usable until it is closed.
func (m *Module) closeMounts() {
	for _, r := range m.mounts {
		r.close()
	}
}

// Name returns the module's name.
func (m *Module) Name() string { return m.name }

// ImportedFunctions returns the functions the module imports, from its
// compiled code (nothing is compiled again), without the one the fuel
// checks of an instrumented module import (yieldImport): that one is
// Snodo's, not the module's.
func (m *Module) ImportedFunctions() []api.FunctionDefinition {
	all := m.compiled.ImportedFunctions()
	if !m.interruptible {
		return all
	}
	own := make([]api.FunctionDefinition, 0, len(all))
	for _, d := range all {
		if mod, name, _ := d.Import(); mod == abi.HostModule && name == yieldImport {
			continue
		}
		own = append(own, d)
	}
	return own
}

// ExportedFunctions returns the functions the module exports, by name.
func (m *Module) ExportedFunctions() map[string]api.FunctionDefinition {
	return m.compiled.ExportedFunctions()
}

// Manifest returns what the module declared with snodo_describe.
func (m *Module) Manifest() abi.Manifest { return m.manifest }

// Close closes the module's idle instances and its compiled code. Calls in
// flight are stopped — at the next check of an instrumented module, at
// once in a sleep of poll_oneoff — and fail -32603 "module closed during
// the call"; Close waits for them to end and their instances to be closed,
// at most until ctx ends or the module's Timeout passes. A trusted
// module's call is stopped only if it sleeps in poll_oneoff: one that
// loops outlasts the wait.
func (m *Module) Close(ctx context.Context) error {
	m.closeCalls(errModuleClosed)
	m.pool.close(ctx)
	m.pool.drain(ctx, m.timeout)
	defer m.closeMounts()
	return m.compiled.Close(ctx)
}

// HandleRequest answers one request of a method the manifest lists, and
// implements the client's handler interface. A method the module does not
// answer is -32601; any failure of the call is -32603 naming the module and
// the cause; an error object the module returns is answered as it is.
func (m *Module) HandleRequest(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if !m.manifest.Answers(method) {
		return nil, &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("wasm module %q does not answer %s", m.name, method)}
	}
	res, err := m.call(ctx, entryHandle, method, params)
	if err != nil {
		return nil, err
	}
	switch res.status {
	case abi.StatusOK:
		return res.output, nil
	case abi.StatusError:
		return nil, m.guestError(res.output, "returned an error")
	}
	return nil, m.failure(fmt.Sprintf("invalid output: snodo_handle returned status %s", res.status), nil, "")
}

// guestError is the *jsonrpc.Error a module reported with an error object.
func (m *Module) guestError(output []byte, what string) *jsonrpc.Error {
	if len(bytes.TrimSpace(output)) == 0 {
		return m.failure(what, nil, "")
	}
	obj, err := abi.ParseErrorObject(output)
	if err != nil {
		return m.invalidOutput(err)
	}
	// The message and data reach the server, logs and terminals: escaped.
	msg := SanitizeText(obj.Message)
	if msg == "" {
		msg = fmt.Sprintf("wasm module %q %s", m.name, what)
	}
	return &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: obj.Code, Message: msg, Data: sanitizeJSON(obj.Data)}
}

func (m *Module) invalidOutput(err error) *jsonrpc.Error {
	return m.failure("invalid output: "+err.Error(), nil, "")
}

// failure is the -32603 error of a failed call: the message names the
// module and the cause; data repeats both, with the call's stderr.
func (m *Module) failure(cause string, err error, stderr string) *jsonrpc.Error {
	// A cause can quote the guest: its stderr's first line, or a trap's
	// message naming its functions.
	cause = SanitizeText(cause)
	data := struct {
		Module string `json:"module"`
		Cause  string `json:"cause"`
		Stderr string `json:"stderr,omitempty"`
	}{m.name, cause, stderr}
	raw, _ := json.Marshal(data)
	return &jsonrpc.Error{
		Kind:    jsonrpc.KindHandler,
		Code:    jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("wasm module %q: %s", m.name, cause),
		Data:    raw,
		Cause:   err,
	}
}
