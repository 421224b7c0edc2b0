package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/handlers/wasm"
	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/internal/clienthook"
	"github.com/snodo/snodo/internal/redact"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/stdio"
)

// Runner is one running client: the server process and its stdio
// connection, the client speaking the negotiated era, and the handler
// modules answering the server. Start makes one; Close stops it all.
type Runner struct {
	cfg    Config
	log    *slog.Logger
	conn   *stdio.Conn         // the server process's connection; nil for a remote server
	remote transport.Transport // a remote server's connection (Server.URL): *shttp.Transport or *shttp.SSE
	client *snodo.Client
	host   *wasm.Host

	// slots are the modules, in the order they are loaded (see slot).
	slots      []*slot
	handlers   map[string]*slot // by method
	progress   *slot
	subscriber *slot
	// interceptors are the Interceptors modules, in order.
	interceptors []*slot

	stderr     *tail
	stderrDone chan struct{}
	stderrR    *os.File

	cancelConn context.CancelCauseFunc
	contained  *contained // the server's containment, see startContained

	failMu      sync.Mutex
	lastFailure error // the last handler failure, for Runner.HandlerFailure

	roots rootsGate // the first roots/list answered, see awaitRoots

	closeOnce sync.Once
	closeErr  error
	exit      *os.ProcessState
}

// CheckProtocol reports whether p is a valid Config.Protocol.
func CheckProtocol(p string) error {
	switch p {
	case "", "auto", "legacy", "modern":
		return nil
	}
	if slices.Contains(snodo.SupportedVersions(), p) {
		return nil
	}
	return fmt.Errorf("protocol must be auto, legacy, modern or one of %s, not %q", strings.Join(snodo.SupportedVersions(), ", "), p)
}

// LoadError is the error of Start for a handler module that cannot be
// loaded: not found, not valid Wasm, not following the ABI, or pinned to
// other bytes.
type LoadError struct {
	Module string // the module's name
	Path   string
	Err    error
}

func (e *LoadError) Error() string {
	// Names and paths can hold anything; the message is shown on
	// terminals and in logs.
	return wasm.SanitizeText(fmt.Sprintf("handler module %s (%s): %v", e.Module, e.Path, e.Err))
}

func (e *LoadError) Unwrap() error { return e.Err }

// Start loads the handler modules, starts the server in its own process
// group (or, for a remote server, makes its HTTP transport), and connects
// the client in the era Config.Protocol asks for. ctx bounds the start
// only; the Runner runs until Close.
//
// The modules are read and checked against their sha256 pins first. They
// then load while the server starts; when the compilation cache holds the
// manifest of every module (recorded by an earlier load of the same bytes
// and configuration), the client connects while they load too, and a
// server request that comes first waits for its module. Start returns once
// every module is loaded.
//
// A failure to load a module is a *LoadError, the same whether it comes
// before or while connecting. A server that cannot be
// started, or that exits before answering, is a -32000 connection error
// whose message ends with the tail of the server's stderr. A remote
// server that cannot be reached, or refuses the client, is the HTTP
// transport's error.
func Start(ctx context.Context, cfg Config) (rt *Runner, err error) {
	if err := CheckProtocol(cfg.Protocol); err != nil {
		return nil, err
	}
	if cfg.Server.Remote() {
		if err := checkRemote(cfg.Server, cfg.Protocol); err != nil {
			return nil, err
		}
	} else if cfg.Server.Transport != TransportAuto {
		return nil, fmt.Errorf("server transport %q applies to a remote server (a URL), not to a command", cfg.Server.Transport)
	} else if cfg.Server.Command == "" {
		return nil, errors.New("no server command: give one after --, or a server in the configuration")
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.RootsWait == 0 {
		cfg.RootsWait = DefaultRootsWait
	}
	r := &Runner{cfg: cfg, log: cfg.Logger, handlers: map[string]*slot{}}
	r.roots.init()
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	defer func() {
		if err != nil {
			_ = r.Close(context.WithoutCancel(ctx))
		}
	}()
	if err := r.prepareModules(); err != nil {
		return nil, err
	}
	// The modules load while the server starts and the client connects:
	// each handler waits for its module. A module that fails to load
	// fails Start with the error it failed with, as if it had been
	// loaded first, and cuts the connecting short.
	startCtx, cancelStart := context.WithCancelCause(ctx)
	defer cancelStart(nil)
	type loadResult struct {
		index int
		err   error
	}
	loaded := make(chan loadResult, 1)
	go func() {
		i, err := r.loadSlots(ctx)
		if err != nil {
			cancelStart(err)
		}
		loaded <- loadResult{i, err}
	}()
	var result *loadResult
	wait := func() loadResult {
		if result == nil {
			lr := <-loaded
			result = &lr
		}
		return *result
	}
	defer wait() // before Close: nothing loads once Start has returned
	// failed is the error of Start for err: a module's failure to load
	// comes first, as it did when the modules were loaded first.
	failed := func(err error) error {
		if lr := wait(); lr.err != nil {
			return lr.err
		}
		return err
	}
	foretold := true
	for _, s := range r.slots {
		foretold = foretold && s.foretold
	}
	if cfg.Server.Remote() {
		if err := r.startRemote(); err != nil {
			return nil, failed(err)
		}
	} else if err := r.startServer(startCtx); err != nil {
		return nil, failed(err)
	}
	if !foretold {
		// The capabilities to declare come from the manifests: the
		// modules must be loaded first.
		if lr := wait(); lr.err != nil {
			return nil, lr.err
		}
		for _, s := range r.slots {
			s.manifest = s.m.Manifest()
		}
	}
	if i, err := r.route(); err != nil {
		if lr := wait(); lr.err != nil && lr.index <= i {
			return nil, lr.err
		}
		return nil, err
	}
	if err := r.connectWithin(startCtx); err != nil {
		return nil, failed(err)
	}
	if lr := wait(); lr.err != nil {
		return nil, lr.err
	}
	return r, nil
}

// prepareModules makes the Wasm host and one slot per module of the
// configuration, in the order they are loaded: the handlers, the progress
// module, the subscriber, the interceptors. It reads each module and
// checks its sha256 pin before anything else, and takes the module's
// manifest from the compilation cache's record when there is one.
func (r *Runner) prepareModules() error {
	var cfgs []ModuleConfig
	for _, h := range r.cfg.Handlers {
		cfgs = append(cfgs, h.ModuleConfig)
	}
	if r.cfg.Progress != nil {
		cfgs = append(cfgs, *r.cfg.Progress)
	}
	if r.cfg.Subscriber != nil {
		cfgs = append(cfgs, *r.cfg.Subscriber)
	}
	cfgs = append(cfgs, r.cfg.Interceptors...)
	if len(cfgs) == 0 {
		return nil
	}
	host, err := wasm.NewHost(wasm.HostConfig{CacheDir: r.cfg.CacheDir, Logger: r.log, CompileIn: r.cfg.CompileIn})
	if err != nil {
		return err
	}
	r.host = host
	for i, mc := range cfgs {
		if mc.MaxInstances == 0 {
			mc.MaxInstances = r.cfg.MaxServerRequests
		}
		s := newSlot(mc, i)
		bin, manifest, ok, err := host.CachedManifest(mc)
		if err != nil {
			return &LoadError{Module: s.name, Path: mc.Path, Err: err}
		}
		s.cfg.Wasm = bin // read once: Load compiles these very bytes
		s.manifest, s.foretold = manifest, ok
		r.slots = append(r.slots, s)
	}
	return nil
}

// beforeLoad, when not nil, is called before each module is loaded: tests
// hold a module's loading with it.
var beforeLoad func(name string)

// loadSlots loads the modules one after another, up to the first that
// fails (whose slot index and *LoadError it returns); a call waiting on a
// slot goes on once its module is loaded or has failed. A module whose
// manifest is not the one foretold fails: the server was told of the
// capabilities the foretold one declares.
func (r *Runner) loadSlots(ctx context.Context) (int, error) {
	var first *slot
	for _, s := range r.slots {
		if first != nil {
			s.err = &LoadError{Module: s.name, Path: s.cfg.Path, Err: fmt.Errorf("not loaded: module %s failed to load", first.name)}
			close(s.ready)
			continue
		}
		if beforeLoad != nil {
			beforeLoad(s.name)
		}
		m, err := r.host.Load(ctx, s.cfg)
		switch {
		case err != nil:
			s.err = &LoadError{Module: s.name, Path: s.cfg.Path, Err: err}
		case s.foretold && !wasm.SameManifest(m.Manifest(), s.manifest):
			s.err = &LoadError{Module: s.name, Path: s.cfg.Path, Err: fmt.Errorf(
				"it describes itself as %s, not as %s, the manifest the compilation cache recorded when it last loaded these bytes, already declared to the server; the cache now records the new one: run again",
				manifestJSON(m.Manifest()), manifestJSON(s.manifest))}
		default:
			s.m = m
			r.log.Debug("loaded wasm module", "module", m.Name(), "path", s.cfg.Path, "manifest", m.Manifest())
		}
		close(s.ready)
		if s.err != nil {
			first = s
		}
	}
	if first != nil {
		return first.index, first.err
	}
	return -1, nil
}

func manifestJSON(m abi.Manifest) string {
	b, _ := json.Marshal(m)
	return string(b)
}

// route gives each slot its part by its manifest: the request methods it
// answers, progress, events, interception. It returns the index of the
// first slot that cannot take its part, and why.
func (r *Runner) route() (int, error) {
	i := 0
	next := func() *slot { s := r.slots[i]; i++; return s }
	for _, h := range r.cfg.Handlers {
		s := next()
		methods := h.Methods
		if len(methods) == 0 {
			methods = s.manifest.Methods
		}
		if len(methods) == 0 {
			return s.index, &LoadError{Module: s.name, Path: h.Path, Err: errors.New("the module answers no request method (it declares none)")}
		}
		for _, method := range methods {
			if !abi.IsKnownMethod(method) {
				return s.index, &LoadError{Module: s.name, Path: h.Path, Err: fmt.Errorf("unknown method %q (known: %s)", method, strings.Join(abi.KnownMethods, ", "))}
			}
			if !s.manifest.Answers(method) {
				return s.index, &LoadError{Module: s.name, Path: h.Path, Err: fmt.Errorf("the module does not declare %s (it declares %v)", method, s.manifest.Methods)}
			}
			// A later module for the same method replaces an earlier one:
			// flags come after the configuration file.
			r.handlers[method] = s
		}
	}
	if r.cfg.Progress != nil {
		s := next()
		if !s.manifest.Progress {
			return s.index, &LoadError{Module: s.name, Path: r.cfg.Progress.Path, Err: errors.New(`the module does not consume progress (its manifest lacks "progress": true)`)}
		}
		r.progress = s
	}
	if r.cfg.Subscriber != nil {
		s := next()
		if !s.manifest.Events {
			return s.index, &LoadError{Module: s.name, Path: r.cfg.Subscriber.Path, Err: errors.New(`the module does not consume subscription events (its manifest lacks "events": true)`)}
		}
		r.subscriber = s
	}
	for _, mc := range r.cfg.Interceptors {
		s := next()
		if s.manifest.Intercept == nil {
			return s.index, &LoadError{Module: s.name, Path: mc.Path, Err: errors.New(`the module intercepts nothing (its manifest lacks "intercept", which needs "abi": 2)`)}
		}
		r.interceptors = append(r.interceptors, s)
	}
	return -1, nil
}

// startServer starts the server process with its stderr on a pipe of our
// own, so that the tail is kept and a grandchild holding stderr open never
// delays reaping the server.
func (r *Runner) startServer(ctx context.Context) error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	r.stderr = newTail(DefaultStderrTail)
	r.stderrR = pr
	r.stderrDone = make(chan struct{})
	var out io.Writer = r.stderr
	if r.cfg.ServerStderr != nil {
		out = io.MultiWriter(r.stderr, r.cfg.ServerStderr)
	}
	go func() {
		defer close(r.stderrDone)
		_, _ = io.Copy(out, pr)
	}()

	env := slices.Clone(r.cfg.Server.Env)
	// The connection is owned by the Runner, not by ctx: a cancelled call
	// (Ctrl-C) must still be able to tell the server before Close.
	connCtx, cancel := context.WithCancelCause(context.Background())
	r.cancelConn = cancel
	r.contained, err = startContained(r.cfg.Subreaper, func(attr *syscall.SysProcAttr, mark EnvVar) (int, error) {
		conn, err := r.startProcess(attr, func(command string, args []string, attr *syscall.SysProcAttr) (*stdio.Conn, error) {
			return stdio.Connect(connCtx, stdio.Config{
				Command:      command,
				Args:         args,
				Env:          append(env, stdio.Set(mark.Name, mark.Value)),
				Dir:          r.cfg.Server.Dir,
				Stderr:       pw,
				MaxLineBytes: r.cfg.MaxLineBytes,
				SysProcAttr:  attr,
			})
		})
		if err != nil {
			return 0, err
		}
		r.conn = conn
		return conn.Pid(), nil
	})
	pw.Close() // the server has its copy
	if err != nil {
		return &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeConnectionClosed,
			Message: fmt.Sprintf("cannot start the server %q", r.cfg.Server.Command), Cause: errors.Unwrap(err)}
	}
	r.log.Debug("server started", "command", r.cfg.Server.Command, "args", r.cfg.Server.Args, "pid", r.conn.Pid())
	return nil
}

// connect opens the client over the connection, with every handler.
func (r *Runner) connect(ctx context.Context) error {
	opts := r.clientOptions()
	// HTTP+SSE carries the legacy era only: no server/discover probe.
	sseOpts := opts
	if sseOpts.Era == snodo.EraAuto && sseOpts.ProtocolVersion == "" {
		sseOpts.Era = snodo.EraLegacy
	}
	if r.cfg.Server.Remote() && r.cfg.Server.Transport == TransportSSE {
		if err := r.dialSSE(ctx); err != nil {
			return err
		}
		opts = sseOpts
	}
	c, err := snodo.Connect(ctx, r.transport(), &opts)
	if status, ok := r.sseFallback(err); err != nil && ok {
		r.log.Info("the server refused the Streamable HTTP initialize; trying the HTTP+SSE transport of 2024-11-05 at the same URL",
			"url", redact.URL(r.cfg.Server.URL), "status", status)
		_ = r.remote.Close()
		r.remote = nil
		if err := r.dialSSE(ctx); err != nil {
			var je *jsonrpc.Error
			if errors.As(err, &je) {
				e := *je
				e.Message = fmt.Sprintf("the server answered the Streamable HTTP initialize with HTTP %d, and the HTTP+SSE transport (2024-11-05) at the same URL failed too: %s", status, je.Message)
				return &e
			}
			return err
		}
		c, err = snodo.Connect(ctx, r.remote, &sseOpts)
	}
	if err != nil {
		return err
	}
	r.client = c
	srv := c.Server()
	r.log.Debug("connected", "era", srv.Era, "version", srv.ProtocolVersion, "server", srv.Implementation)
	return nil
}

// clientOptions are the client's Options: the caller's ClientOptions
// first, then what this Config says where they leave a field unset, the
// handlers, consumers and interceptors of the modules loaded.
func (r *Runner) clientOptions() snodo.Options {
	// The caller's ClientOptions first, then what this Config says where
	// they leave a field unset.
	opts := r.cfg.ClientOptions
	opts.Handlers = map[string]snodo.Handler{}
	if opts.MaxServerRequests == 0 {
		opts.MaxServerRequests = r.cfg.MaxServerRequests
	}
	if opts.DefaultTimeout == 0 {
		opts.DefaultTimeout = r.cfg.Timeout
	}
	if opts.Keepalive == 0 {
		opts.Keepalive = r.cfg.Keepalive
	}
	if opts.Era == snodo.EraAuto && opts.ProtocolVersion == "" {
		switch r.cfg.Protocol {
		case "", "auto":
		case "legacy":
			opts.Era = snodo.EraLegacy
		case "modern":
			opts.Era = snodo.EraModern
		default:
			opts.ProtocolVersion = r.cfg.Protocol
		}
	}
	if opts.ClientInfo == (snodo.Implementation{}) {
		opts.ClientInfo = r.cfg.ClientInfo
	}
	if opts.Logger == nil && r.log != nil {
		// The client's own notes (a new HTTP session) at debug level:
		// shown by snodo-run --verbose.
		opts.Logger = r.log
	}
	if opts.OnLog == nil {
		opts.OnLog = r.cfg.OnLog
	}
	if opts.OnNotification == nil {
		opts.OnNotification = r.cfg.OnNotification
	}
	for method, s := range r.handlers {
		var h snodo.Handler = s
		if r.cfg.WrapModule != nil {
			h = r.cfg.WrapModule(method, s.name, h)
		}
		opts.Handlers[method] = r.roots.watch(method, r.recording(s.name, h))
		if method == abi.MethodSamplingCreate && s.manifest.SamplingTools && r.cfg.Native[method] == nil {
			// The module answers sampling requests with tools.
			opts.SamplingTools = true
		}
	}
	for method, h := range r.cfg.Native {
		opts.Handlers[method] = r.roots.watch(method, r.recording(method, h))
	}
	for method, h := range r.cfg.ClientOptions.Handlers {
		if h != nil {
			opts.Handlers[method] = h
		}
	}
	// The consumer modules attach to the client, so that every call and
	// every subscription uses them, whether made through the Runner or
	// through Client.
	if m := r.progress; m != nil {
		clienthook.SetProgressConsumer(&opts, func(ctx context.Context, params json.RawMessage) error {
			err := m.progress(ctx, params)
			if err != nil {
				r.log.Debug("progress module stopped the call", "module", m.Name(), "error", err)
			}
			return err
		})
	}
	if m := r.subscriber; m != nil {
		clienthook.SetEventConsumer(&opts, func(ctx context.Context, method string, params json.RawMessage) (bool, error) {
			stop, err := m.event(ctx, method, params)
			if stop {
				r.log.Debug("subscriber module ended the subscription", "module", m.Name())
			}
			return stop, err
		})
	}
	// The interceptor modules first, in the order given, then the
	// caller's own.
	opts.Interceptors = nil
	for _, m := range r.interceptors {
		var i intercept.Interceptor = m
		if r.cfg.OnIntercept != nil {
			i = intercept.Observe(m, r.cfg.OnIntercept)
		}
		opts.Interceptors = append(opts.Interceptors, i)
	}
	opts.Interceptors = append(opts.Interceptors, r.cfg.ClientOptions.Interceptors...)
	return opts
}

// recording wraps a handler so that its failures are remembered: a legacy
// server turns a handler's -32603 into an error of its own, and the caller
// should still learn that a handler failed.
func (r *Runner) recording(name string, h snodo.Handler) snodo.Handler {
	return snodo.HandlerFunc(func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		r.log.Info("the server asks", "method", method, "handler", name, "params", clip(params))
		res, err := h.HandleRequest(ctx, method, params)
		if err != nil {
			r.log.Info("handler failed", "handler", name, "method", method, "error", err)
			r.failMu.Lock()
			r.lastFailure = err
			r.failMu.Unlock()
		} else {
			r.log.Info("handler answered", "handler", name, "method", method, "result", clip(res))
		}
		return res, err
	})
}

// clip returns JSON for a log line, cut at 300 bytes.
func clip(b json.RawMessage) string {
	const max = 300
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// HandlerFailure returns the last error a handler answered the server with,
// or nil. A call that fails after a handler failed most likely failed
// because of it.
func (r *Runner) HandlerFailure() error {
	r.failMu.Lock()
	defer r.failMu.Unlock()
	return r.lastFailure
}

// Client returns the connected client.
func (r *Runner) Client() *snodo.Client { return r.client }

// transport is the client's connection: the process's or the remote
// server's.
func (r *Runner) transport() transport.Transport {
	if r.cfg.Server.Remote() {
		return r.remote
	}
	return r.conn
}

// Pid returns the server's process ID (also its process group ID); 0 for a
// remote server.
func (r *Runner) Pid() int {
	if r.conn == nil {
		return 0
	}
	return r.conn.Pid()
}

// StderrTail returns the last bytes the server wrote to stderr; "" for a
// remote server.
func (r *Runner) StderrTail() string {
	if r.stderr == nil {
		return ""
	}
	return r.stderr.String()
}

// Explain adds what is known about the server's end to a connection error
// (-32000): its exit status, and the tail of its stderr, in the message and
// as data {"exitCode", "stderr"}. The result is a copy whose message
// includes the original's cause (and whose Cause is nil). Other errors, and
// every error of a remote server (there is no process to tell of; the
// cause, such as a *transport.StatusError, stays for errors.As), are
// returned as they are.
func (r *Runner) Explain(err error) error {
	if r.cfg.Server.Remote() {
		return err
	}
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Kind != jsonrpc.KindTransport || je.Code != jsonrpc.CodeConnectionClosed {
		return err
	}
	if errors.Is(err, stdio.ErrQueueFull) || errors.Is(err, snodo.ErrClientClosed) {
		// The server is alive: there is no exit to explain.
		return err
	}
	e := *je
	// The cause goes into the message, before what the server left: the
	// message then reads in order, the server's last words at the end.
	if e.Cause != nil {
		e.Message = e.Detail()
		e.Cause = nil
	}
	data := map[string]any{}
	if r.conn != nil {
		// The server may still be on its way out; give it a moment (a
		// loaded machine may take that long to reap it).
		wctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		state, _ := r.conn.Wait(wctx)
		cancel()
		if state != nil {
			if !strings.Contains(e.Message, state.String()) {
				e.Message += fmt.Sprintf(" (server %s)", state)
			}
			data["exitCode"] = state.ExitCode()
		}
		select { // the rest of stderr, once the server's end is closed
		case <-r.stderrDone:
		case <-time.After(time.Second):
		}
	}
	if t := strings.TrimSpace(r.StderrTail()); t != "" {
		e.Message += "; server stderr:\n" + t
		data["stderr"] = t
	}
	if len(data) > 0 && len(e.Data) == 0 {
		e.Data, _ = json.Marshal(data)
	}
	return &e
}

// Close closes the client and stops the server: stdin closed, then after
// Config.ShutdownGrace SIGTERM to its process group, then after the same
// grace SIGKILL; whatever the server started is stopped with it. Then the
// Wasm host is closed. It returns the client's close error, if any.
func (r *Runner) Close(ctx context.Context) error {
	r.closeOnce.Do(func() {
		if r.contained != nil {
			// What runs below the server now, before closing the client
			// closes its stdin and it exits, orphaning it.
			r.contained.tree.alive()
		}
		if r.client != nil {
			r.closeErr = r.client.Close()
		} else if r.remote != nil {
			r.closeErr = r.remote.Close()
		}
		if r.conn != nil {
			state, how := stopServer(ctx, r.conn, r.cfg.ShutdownGrace, r.cfg.ShutdownGrace, r.log)
			r.exit = state
			r.log.Debug("server stopped", "how", how, "state", state)
		}
		if r.contained != nil {
			r.contained.done()
		}
		if r.cancelConn != nil {
			r.cancelConn(nil)
		}
		if r.stderrDone != nil {
			select {
			case <-r.stderrDone:
			case <-time.After(r.cfg.ShutdownGrace):
				// A process outside the group holds stderr open.
			}
			r.stderrR.Close()
		}
		if r.host != nil {
			_ = r.host.Close(ctx)
		}
	})
	return r.closeErr
}

// ExitState returns the server's exit state once Close has stopped it; nil
// for a remote server.
func (r *Runner) ExitState() *os.ProcessState { return r.exit }

// tail keeps the last n bytes written to it.
type tail struct {
	mu  sync.Mutex
	n   int
	buf []byte
}

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.n {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.n:]...)
	}
	t.mu.Unlock()
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
