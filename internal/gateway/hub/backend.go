package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/internal/exchange"
	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/internal/proxy"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/runtime"
)

// backend is one backend server and its supervisor.
type backend struct {
	name     string
	hub      *Hub
	cfg      runtime.Config
	disabled bool

	cancel context.CancelFunc
	done   chan struct{} // closed when the supervisor has ended

	mu      sync.Mutex
	rt      *runtime.Runner // nil while down
	everUp  bool
	fatal   error     // failed for good
	lastErr error     // why it is down
	next    time.Time // the next attempt
	starts  int       // connections made
	stopped bool      // Close has stopped it
	// listening is set while the list changes of a 2026-07-28 server are
	// watched (watchModern).
	listening bool
	changed   chan struct{}
	calls     []*call // in flight, oldest first
	// modules are the handlers of rt's Wasm modules by method (as
	// WrapModule wraps them); starting collects those of the runner being
	// started, which supervise moves to modules with rt.
	modules, starting map[string]snodo.Handler
}

// call is one host request in flight to a backend.
type call struct {
	req *gateway.Request
	ex  *exchange.Exchange // the call held open for a 2026-07-28 host (heldCall), or nil
}

type callKey struct{}

// callOf is the call a server request's context belongs to, else fallback.
func callOf(ctx context.Context, fallback *call) *call {
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		return c
	}
	return fallback
}

func (b *backend) start() {
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel, b.done = cancel, make(chan struct{})
	go b.supervise(ctx)
}

func (b *backend) stop() {
	if b.cancel == nil {
		return
	}
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	b.cancel()
	<-b.done
}

// signal wakes whoever waits for a change of state; b.mu is held.
func (b *backend) signalLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// supervise starts the server, waits for it to end, and starts it again
// after the backoff, until ctx ends.
func (b *backend) supervise(ctx context.Context) {
	defer close(b.done)
	pol := b.hub.opts.Backoff
	delay := pol.Min
	for {
		started := time.Now()
		b.mu.Lock()
		b.starting = map[string]snodo.Handler{}
		b.mu.Unlock()
		rt, err := runtime.Start(ctx, b.cfg)
		if err == nil {
			b.mu.Lock()
			b.rt, b.everUp, b.lastErr = rt, true, nil
			b.modules, b.starting = b.starting, nil
			b.starts++
			b.signalLocked()
			b.mu.Unlock()
			b.hub.log.Info("backend connected", "server", b.name)
			wctx, wcancel := context.WithCancel(ctx)
			watched := make(chan struct{})
			go func() {
				defer close(watched)
				if rt.Client().Server().Era == snodo.EraModern {
					b.watchModern(wctx, rt)
				}
			}()
			select {
			case <-rt.Done():
				err = rt.Explain(errors.New("the server's connection ended"))
			case <-ctx.Done():
			}
			wcancel()
			<-watched
			b.mu.Lock()
			b.rt, b.listening, b.modules = nil, false, nil
			b.mu.Unlock()
			_ = rt.Close(context.Background())
			if ctx.Err() != nil {
				return
			}
			if time.Since(started) >= pol.Reset {
				delay = pol.Min
			}
			if err == nil {
				err = errors.New("the server stopped")
			}
		}
		if ctx.Err() != nil {
			return
		}
		var le *runtime.LoadError
		if errors.As(err, &le) {
			b.mu.Lock()
			b.fatal, b.lastErr = err, err
			b.signalLocked()
			b.mu.Unlock()
			b.hub.log.Error("backend failed for good", "server", b.name, "error", err)
			return
		}
		wait := jitter(delay)
		b.mu.Lock()
		b.lastErr, b.next = err, time.Now().Add(wait)
		b.signalLocked()
		b.mu.Unlock()
		b.hub.log.Warn("backend down", "server", b.name, "error", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		delay = min(delay*2, pol.Max)
	}
}

// captureModule records h, the handler of a Wasm module of the runner
// being started for method (runtime.Config.WrapModule).
func (b *backend) captureModule(method string, h snodo.Handler) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.starting != nil {
		b.starting[method] = h
	}
}

// runner returns the backend's runner, or the -32000 error of a backend
// that is down.
func (b *backend) runner() (*runtime.Runner, error) {
	rt, _, err := b.conn()
	return rt, err
}

// conn returns the backend's runner and its Wasm modules' handlers by
// method, or the -32000 error of a backend that is down.
func (b *backend) conn() (*runtime.Runner, map[string]snodo.Handler, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rt != nil {
		return b.rt, b.modules, nil
	}
	return nil, nil, b.downLocked()
}

// downLocked is the -32000 error of a backend that is down; b.mu is held.
func (b *backend) downLocked() error {
	switch {
	case b.stopped:
		return &jsonrpc.Error{Code: jsonrpc.CodeConnectionClosed, Message: fmt.Sprintf("server %q is stopped: the gateway is shutting down", b.name)}
	case b.disabled:
		return &jsonrpc.Error{Code: jsonrpc.CodeConnectionClosed, Message: fmt.Sprintf("server %q is disabled in the gateway's config", b.name)}
	case b.fatal != nil:
		return &jsonrpc.Error{Code: jsonrpc.CodeConnectionClosed, Message: fmt.Sprintf("server %q cannot be started: %v; fix the gateway's config and restart it", b.name, b.fatal)}
	case b.lastErr == nil:
		return &jsonrpc.Error{Code: jsonrpc.CodeConnectionClosed, Message: fmt.Sprintf("server %q is starting; try again shortly", b.name)}
	}
	in := max(time.Until(b.next), 0).Round(time.Millisecond)
	return &jsonrpc.Error{Code: jsonrpc.CodeConnectionClosed,
		Message: fmt.Sprintf("server %q is down (%v); the next attempt to start it is in %v (at %s)", b.name, b.lastErr, in, b.next.UTC().Format(time.RFC3339))}
}

func (b *backend) readiness() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.disabled:
		return nil
	case b.fatal != nil:
		return fmt.Errorf("%s failed: %v", b.name, b.fatal)
	case !b.everUp && b.lastErr != nil:
		return fmt.Errorf("%s not connected yet: %v", b.name, b.lastErr)
	case !b.everUp:
		return fmt.Errorf("%s not connected yet", b.name)
	}
	return nil
}

// request sends one request to the backend for host request r, under the
// policy's admission and a client span.
func (b *backend) request(ctx context.Context, r *gateway.Request, method, target string, params json.RawMessage, opts ...snodo.CallOption) (json.RawMessage, error) {
	return b.admitted(ctx, r, method, target, func(ctx context.Context, rt *runtime.Runner, _ map[string]snodo.Handler) (json.RawMessage, error) {
		return rt.Client().Request(ctx, method, params, opts...)
	})
}

// admitted runs f, which sends host request r's requests to the backend
// (rt, whose Wasm modules' handlers by method are modules), under the
// policy's admission, a client span, and as a call in flight, which the
// server's requests made under f's ctx belong to.
func (b *backend) admitted(ctx context.Context, r *gateway.Request, method, target string,
	f func(ctx context.Context, rt *runtime.Runner, modules map[string]snodo.Handler) (json.RawMessage, error)) (res json.RawMessage, err error) {
	rt, modules, err := b.conn()
	if err != nil {
		return nil, err
	}
	h := b.hub
	if h.opts.Policy != nil {
		release, err := h.opts.Policy.Admit(ctx, r.Identity, b.name)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	if h.opts.Telemetry != nil {
		var end func(error)
		ctx, end = h.opts.Telemetry.ClientSpan(ctx, method, target, b.name)
		defer func() { end(err) }()
	}
	c := &call{req: r, ex: exchange.FromContext(ctx)}
	b.mu.Lock()
	b.calls = append(b.calls, c)
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		for i, x := range b.calls {
			if x == c {
				b.calls = append(b.calls[:i], b.calls[i+1:]...)
				break
			}
		}
		b.mu.Unlock()
	}()
	ctx = context.WithValue(ctx, callKey{}, c)
	if r.Identity != nil {
		// The server's interceptors see which host identity asked.
		ctx = intercept.WithCaller(ctx, r.Identity.Name)
	}
	return f(ctx, rt, modules)
}

// oldestCall is the oldest host request in flight to the backend, but
// for a call held open for a 2026-07-28 host that waits for its host's
// answer to a request of the server (a server asks one thing at a time in
// a call) while another does not; ambiguous when requests of more than
// one host (identity and session) are in flight: a request a server sends
// without naming its call must not reach a host other than the one that
// caused it.
func (b *backend) oldestCall() (c *call, ambiguous bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.calls) == 0 {
		return nil, false
	}
	c = b.calls[0]
	for _, x := range b.calls {
		if x.ex == nil || !x.ex.Waiting() {
			c = x
			break
		}
	}
	for _, x := range b.calls {
		if identityName(x.req.Identity) != identityName(c.req.Identity) || x.req.Session != c.req.Session {
			return nil, true
		}
	}
	return c, false
}

// serverRequest forwards a server request no Wasm module answers to the
// host whose request caused it (see the package doc).
func (b *backend) serverRequest(ctx context.Context, method string, params json.RawMessage) (res json.RawMessage, err error) {
	started := time.Now()
	rec := gateway.AuditRecord{Direction: "server", Server: b.name, Method: method, Decision: "allow"}
	defer func() { b.hub.finishAudit(&rec, started, err) }()
	c := callOf(ctx, nil)
	if c == nil {
		var ambiguous bool
		if c, ambiguous = b.oldestCall(); ambiguous {
			rec.Decision = "deny"
			return nil, noHandler(b.name, method, "and requests of more than one host are in flight to the server, which does not say which one it asks for (a legacy server over stdio)")
		}
	}
	if c == nil {
		rec.Decision = "deny"
		return nil, noHandler(b.name, method, "and no host request is in flight to carry it to a host")
	}
	r := c.req
	rec.Identity, rec.Session = identityName(r.Identity), r.Session
	switch {
	case r.Ask != nil:
		if !proxy.Declares(r.ClientCapabilities, method) {
			rec.Decision = "deny"
			return nil, noHandler(b.name, method, fmt.Sprintf("and the host did not declare the %s capability", proxy.CapabilityName(method)))
		}
		return r.Ask(ctx, method, params)
	case r.Modern:
		return b.hub.askModern(ctx, c, b.name, method, params, &rec)
	}
	rec.Decision = "deny"
	return nil, noHandler(b.name, method, "and the host cannot be asked")
}

func noHandler(server, method, why string) *jsonrpc.Error {
	return &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeMethodNotFound,
		Message: fmt.Sprintf("%s asked by server %q: no Wasm handler module is configured for it in the gateway (mcpServers.%s.handlers), %s", method, server, server, why)}
}

// watchModern carries a 2026-07-28 server's list changes, which it sends
// only on a subscription, to the legacy sessions' Watch, until ctx ends or
// the subscription does.
func (b *backend) watchModern(ctx context.Context, rt *runtime.Runner) {
	_, sub, err := rt.Client().Listen(ctx, snodo.SubscriptionFilter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true})
	if err != nil {
		if ctx.Err() == nil {
			b.hub.log.Warn("cannot watch the server's list changes", "server", b.name, "error", err)
		}
		return
	}
	defer sub.Close()
	b.mu.Lock()
	b.listening = true
	b.signalLocked()
	b.mu.Unlock()
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			return
		}
		b.hub.onNotification(b.name, ev.Method, ev.Params)
	}
}
