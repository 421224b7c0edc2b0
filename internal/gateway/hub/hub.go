package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/handlers/wasm"
	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/internal/exchange"
	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/internal/gateway/mrtr"
	"github.com/snodo/snodo/internal/mcpconfig"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/runtime"
)

// Backoff is the restart policy of a backend that failed.
type Backoff struct {
	Min   time.Duration // first delay (default 250 ms)
	Max   time.Duration // longest delay (default 30 s)
	Reset time.Duration // up this long, the delay starts again at Min (default 1 min)
}

// Options configure a Hub.
type Options struct {
	Policy    gateway.Policy    // nil allows everything
	Telemetry gateway.Telemetry // nil records nothing
	Auditor   gateway.Auditor   // nil: the audit section's file, or none
	Logger    *slog.Logger      // nil discards
	// Dir is the base of relative module paths (the config file's
	// directory); "" is the working directory.
	Dir string
	// CacheDir is where compiled Wasm modules are cached ("": the user's
	// cache directory).
	CacheDir string
	// Backoff is the restart policy; zero fields take the defaults.
	Backoff Backoff
	// ResumeTimeout is how long a legacy server's call held open for a
	// 2026-07-28 host's input (see the package doc) waits for the host's
	// retry before it is cancelled on the server (default 5 minutes).
	ResumeTimeout time.Duration
	// MaxHeldCalls is the most such calls one identity (or the anonymous
	// hosts together) may hold open at once (default 64); past it a new
	// one is refused with -32029.
	MaxHeldCalls int
}

// serverEntry is one mcpServers entry: the desktop-host shape and the
// gateway's own members.
type serverEntry struct {
	mcpconfig.Server
	Handlers     []string `json:"handlers"`
	Interceptors []string `json:"interceptors"`
	Timeout      string   `json:"timeout"`
	Protocol     string   `json:"protocol"`
}

// auditSection is the audit section: where the JSON lines go.
type auditSection struct {
	File string `json:"file"`
}

// Hub implements gateway.Hub.
type Hub struct {
	opts     Options
	log      *slog.Logger
	backends map[string]*backend
	names    []string // sorted
	stateKey string
	rounds   *mrtr.Rounds // the multi round-trip, sealed under stateKey
	auditF   *os.File
	// exchanges are the legacy servers' calls held open for 2026-07-28
	// hosts, by requestState.
	exchanges       *exchange.Table
	exchangeTimeout time.Duration
	heldMu          sync.Mutex // serializes the bound on held calls and their start

	mu       sync.Mutex
	watchers map[*watcher]struct{}
	subs     map[string]map[string]bool // session -> merged URIs subscribed
	closed   bool
}

var _ gateway.Hub = (*Hub)(nil)

var serverName = regexp.MustCompile(gateway.ServerNamePattern)

// New decodes the hub's sections (mcpServers, modules, stateKey, audit)
// and starts every backend that is not disabled, in parallel; it does not
// wait for them to connect (see Ready).
func New(ctx context.Context, sections gateway.Sections, opts Options) (*Hub, error) {
	var servers map[string]serverEntry
	if err := sections.Decode("mcpServers", &servers); err != nil {
		return nil, err
	}
	if len(servers) == 0 {
		return nil, errors.New("config mcpServers: no server configured: add at least one entry (a command, or a url)")
	}
	var modules map[string]mcpconfig.Module
	if err := sections.Decode("modules", &modules); err != nil {
		return nil, err
	}
	h := &Hub{opts: opts, log: opts.Logger, backends: map[string]*backend{},
		watchers: map[*watcher]struct{}{}, subs: map[string]map[string]bool{}}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if err := sections.Decode("stateKey", &h.stateKey); err != nil {
		return nil, err
	}
	key, err := mrtr.ParseKey(h.stateKey)
	if err != nil {
		return nil, fmt.Errorf("config %w", err)
	}
	if h.rounds, err = mrtr.New(key); err != nil {
		return nil, fmt.Errorf("config stateKey: %w", err)
	}
	var as auditSection
	if err := sections.Decode("audit", &as); err != nil {
		return nil, err
	}
	b := &h.opts.Backoff
	if b.Min <= 0 {
		b.Min = 250 * time.Millisecond
	}
	if b.Max < b.Min {
		b.Max = max(30*time.Second, b.Min)
	}
	if b.Reset <= 0 {
		b.Reset = time.Minute
	}
	h.exchangeTimeout = opts.ResumeTimeout
	if h.exchangeTimeout <= 0 {
		h.exchangeTimeout = exchange.DefaultResumeTimeout
	}
	if h.opts.MaxHeldCalls <= 0 {
		h.opts.MaxHeldCalls = defaultMaxHeldCalls
	}
	h.exchanges = exchange.NewTable(exchange.Config{Prefix: exchangePrefix, ResumeTimeout: h.exchangeTimeout})
	for name, e := range servers {
		if !serverName.MatchString(name) {
			return nil, fmt.Errorf("config mcpServers: server name %q is not allowed: use 1 to 63 lower-case letters, digits and '-', starting with a letter or digit (the gateway lists its tools as name__tool and its resources as name+uri)", name)
		}
		cfg, err := h.runtimeConfig(ctx, name, e, modules)
		if err != nil {
			return nil, err
		}
		h.backends[name] = &backend{name: name, hub: h, cfg: cfg, disabled: e.Disabled, changed: make(chan struct{})}
		h.names = append(h.names, name)
	}
	slices.Sort(h.names)
	if as.File != "" && opts.Auditor == nil {
		f, err := os.OpenFile(h.path(as.File), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("config audit.file: %w", err)
		}
		h.auditF = f
		h.opts.Auditor = &fileAuditor{f: f}
	}
	for _, name := range h.names {
		if b := h.backends[name]; !b.disabled {
			b.start()
		}
	}
	return h, nil
}

// StateKey is the config file's stateKey, for the stateless multi
// round-trip (package mrtr).
func (h *Hub) StateKey() string { return h.stateKey }

func (h *Hub) path(p string) string {
	if p == "" || filepath.IsAbs(p) || h.opts.Dir == "" {
		return p
	}
	return filepath.Join(h.opts.Dir, p)
}

// runtimeConfig makes the runtime.Config of server name.
func (h *Hub) runtimeConfig(ctx context.Context, name string, e serverEntry, modules map[string]mcpconfig.Module) (runtime.Config, error) {
	cfg := runtime.Config{Logger: h.log.With("server", name), Protocol: e.Protocol, CacheDir: h.opts.CacheDir}
	if err := e.Resolve(name, &cfg.Server); err != nil {
		return cfg, fmt.Errorf("config %w", err)
	}
	if err := runtime.CheckProtocol(e.Protocol); err != nil {
		return cfg, fmt.Errorf("config mcpServers.%s.protocol: %w", name, err)
	}
	if e.Timeout != "" {
		d, err := time.ParseDuration(e.Timeout)
		if err != nil || d <= 0 {
			return cfg, fmt.Errorf("config mcpServers.%s.timeout must be a positive Go duration such as \"30s\", not %q", name, e.Timeout)
		}
		cfg.Timeout = d
	}
	module := func(what, p string) (runtime.ModuleConfig, []string, error) {
		if p == "" {
			return runtime.ModuleConfig{}, nil, fmt.Errorf("config mcpServers.%s.%s: an empty module path", name, what)
		}
		p = h.path(p)
		mn := wasm.ModuleName(wasm.ModuleConfig{Path: p})
		mc := runtime.ModuleConfig{Name: mn, Path: p}
		ms, ok := modules[mn]
		if !ok {
			return mc, nil, nil
		}
		if ms.Trusted {
			return mc, nil, fmt.Errorf("config modules.%s.trusted: the gateway does not run modules trusted (without interruption): one that loops would stall every host; remove \"trusted\"", mn)
		}
		methods, err := ms.Apply(mn, &mc)
		if err != nil {
			return mc, nil, fmt.Errorf("config %w", err)
		}
		return mc, methods, nil
	}
	covered := map[string]bool{}
	for _, p := range e.Handlers {
		mc, methods, err := module("handlers", p)
		if err != nil {
			return cfg, err
		}
		if len(methods) == 0 {
			rep, err := runtime.CheckModule(ctx, mc, h.opts.CacheDir)
			if err != nil {
				return cfg, fmt.Errorf("config mcpServers.%s.handlers: %w", name, err)
			}
			methods = rep.Manifest.Methods
		}
		for _, m := range methods {
			covered[m] = true
		}
		cfg.Handlers = append(cfg.Handlers, runtime.HandlerModule{ModuleConfig: mc, Methods: methods})
	}
	for _, p := range e.Interceptors {
		mc, _, err := module("interceptors", p)
		if err != nil {
			return cfg, err
		}
		cfg.Interceptors = append(cfg.Interceptors, mc)
	}
	if !covered[abi.MethodRootsList] {
		// The roots come from a host, which no request carries while the
		// server connects: waiting for the server's first roots/list
		// (runtime.Config.RootsWait) would only delay every start.
		cfg.RootsWait = -1
	}
	cfg.Native = map[string]snodo.Handler{}
	for _, m := range []string{abi.MethodElicitationCreate, abi.MethodSamplingCreate, abi.MethodRootsList} {
		if !covered[m] {
			cfg.Native[m] = snodo.HandlerFunc(func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
				return h.backends[name].serverRequest(ctx, method, params)
			})
		}
	}
	// Each runner start wraps its modules' handlers, which the backend
	// keeps for the multi round-trip's input requests (multiRound).
	cfg.WrapModule = func(method, module string, hd snodo.Handler) snodo.Handler {
		w := snodo.HandlerFunc(func(ctx context.Context, m string, params json.RawMessage) (json.RawMessage, error) {
			started := time.Now()
			res, err := hd.HandleRequest(ctx, m, params)
			rec := gateway.AuditRecord{Direction: "server", Server: name, Method: m, Module: module, Decision: "allow"}
			if c := callOf(ctx, nil); c != nil {
				rec.Identity, rec.Session = identityName(c.req.Identity), c.req.Session
			}
			h.finishAudit(&rec, started, err)
			return res, err
		})
		h.backends[name].captureModule(method, w)
		return w
	}
	cfg.OnIntercept = func(e intercept.Event) { h.auditIntercept(name, e) }
	cfg.OnNotification = func(method string, params json.RawMessage) { h.onNotification(name, method, params) }
	return cfg, nil
}

// errClosing cancels the calls held open for 2026-07-28 hosts at Close.
var errClosing = errors.New("the gateway is shutting down")

// Close stops every backend, one after the other in name order, and
// returns once their processes and goroutines have ended.
func (h *Hub) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.exchanges.DropAll(errClosing)
	for _, name := range h.names {
		h.backends[name].stop()
	}
	h.exchanges.Wait()
	if h.auditF != nil {
		return h.auditF.Close()
	}
	return nil
}

// Info returns what hosts are told of the gateway.
func (h *Hub) Info() gateway.Info {
	si, _ := json.Marshal(map[string]string{"name": "snodo-gateway", "title": "Snodo MCP gateway", "version": snodo.Version})
	return gateway.Info{
		ServerInfo:   si,
		Capabilities: json.RawMessage(`{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"completions":{},"logging":{}}`),
	}
}

// Ready reports nil once every enabled backend has connected at least once
// and none has failed for good.
func (h *Hub) Ready() error {
	var not []string
	for _, name := range h.names {
		if err := h.backends[name].readiness(); err != nil {
			not = append(not, err.Error())
		}
	}
	if len(not) > 0 {
		return errors.New("not ready: " + strings.Join(not, "; "))
	}
	return nil
}

// fileAuditor writes audit records as JSON lines to a file.
type fileAuditor struct {
	mu sync.Mutex
	f  *os.File
}

func (a *fileAuditor) Audit(r gateway.AuditRecord) {
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = a.f.Write(append(b, '\n'))
}

func identityName(id *gateway.Identity) string {
	if id == nil {
		return ""
	}
	return id.Name
}

// finishAudit completes rec with its duration and err's code, and writes it.
func (h *Hub) finishAudit(rec *gateway.AuditRecord, started time.Time, err error) {
	if h.opts.Auditor == nil {
		return
	}
	if rec.Time.IsZero() {
		rec.Time = started
	}
	rec.DurationMS = float64(time.Since(started).Microseconds()) / 1000
	if err != nil {
		je := wireError(err)
		rec.ErrorCode = je.Code
		if rec.Decision == "allow" {
			rec.Decision = "fail"
		}
		switch je.Code {
		case gateway.CodeRateLimited:
			rec.Decision = "rate-limited"
		case intercept.CodeDenied:
			// An interceptor refused the request: nothing was sent.
			rec.Decision = "deny"
		}
	}
	h.opts.Auditor.Audit(*rec)
}

// maxAuditReason bounds the reason an interceptor gives in the audit log:
// a module's message may carry what a server sent, of any length.
const maxAuditReason = 1024

// auditIntercept writes an interceptor's decision on a request to server
// (deny, rewrite, replace) or its failure; its reason starts with the
// phase ("request" or "result"). The host request it was made for has its
// own line, written when that request is done, with the identity, the tool
// and the outcome; the interceptor's line has the identity too, its caller
// (backend.request puts it in the call's context).
func (h *Hub) auditIntercept(server string, e intercept.Event) {
	if h.opts.Auditor == nil {
		return
	}
	rec := gateway.AuditRecord{Time: time.Now().UTC(), Direction: "interceptor", Server: server, Method: e.Method,
		Module: e.Interceptor, Identity: e.Caller, Decision: e.Action.String()}
	phase := "request"
	if e.Results {
		phase = "result"
	}
	switch {
	case e.Err != nil:
		rec.Decision, rec.Reason = "fail", phase+": "+e.Err.Error()
	case e.Action == intercept.Deny:
		rec.Decision, rec.Reason, rec.ErrorCode = "deny", phase+": "+e.Message, intercept.CodeDenied
	default:
		rec.Reason = phase
	}
	if len(rec.Reason) > maxAuditReason {
		rec.Reason = strings.ToValidUTF8(rec.Reason[:maxAuditReason], "") + "…"
	}
	h.opts.Auditor.Audit(rec)
}

// wireError is the error object err is answered with.
func wireError(err error) *jsonrpc.Error {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		if je.Code == 0 {
			return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: je.Message, Data: je.Data}
		}
		return je
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

func invalidParams(format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// jitter spreads d by ±20 %.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
