package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/jsonrpc"
)

// ErrConnectTimeout is wrapped by the error of Start when the server did not
// complete the protocol handshake within Config.ConnectTimeout.
var ErrConnectTimeout = errors.New("connect timeout")

// connectWithin connects the client within Config.ConnectTimeout, then, in
// the legacy era with a roots/list handler, waits for the server's first
// roots/list (see Config.RootsWait).
func (r *Runner) connectWithin(ctx context.Context) error {
	cctx, cancel := context.WithTimeoutCause(ctx, r.cfg.ConnectTimeout, ErrConnectTimeout)
	err := r.connect(cctx)
	timedOut := errors.Is(context.Cause(cctx), ErrConnectTimeout) && ctx.Err() == nil
	cancel()
	if err != nil {
		if timedOut {
			return &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeRequestTimeout,
				Message: fmt.Sprintf("connecting timed out: the server %q did not complete the MCP handshake (server/discover probe, initialize) within %v", r.serverName(), r.cfg.ConnectTimeout),
				Cause:   ErrConnectTimeout}
		}
		return r.Explain(err)
	}
	r.awaitRoots(ctx)
	return nil
}

// rootsSettle is how long Start waits after the first roots/list was
// answered, for the server to apply the roots.
const rootsSettle = 200 * time.Millisecond

// rootsGate is closed when the first roots/list request has been answered.
type rootsGate struct {
	once     sync.Once
	answered chan struct{}
}

func (g *rootsGate) init() { g.answered = make(chan struct{}) }

// watch wraps the handler of method so that, for roots/list, its first
// answer opens the gate.
func (g *rootsGate) watch(method string, h snodo.Handler) snodo.Handler {
	if method != "roots/list" {
		return h
	}
	return snodo.HandlerFunc(func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		res, err := h.HandleRequest(ctx, method, params)
		g.once.Do(func() { close(g.answered) })
		return res, err
	})
}

// awaitRoots waits, in the legacy era with a roots/list handler, up to
// Config.RootsWait for the server's first roots/list to be answered. A
// legacy server asks for the roots after notifications/initialized and
// applies them asynchronously: without the wait, the first request races
// the roots (the reference filesystem server then answers it with the
// directories of its command line instead of the client's roots).
func (r *Runner) awaitRoots(ctx context.Context) {
	if r.cfg.RootsWait < 0 || r.client.Server().Era != snodo.EraLegacy || !r.hasRootsHandler() {
		return
	}
	start := time.Now()
	t := time.NewTimer(r.cfg.RootsWait)
	defer t.Stop()
	select {
	case <-r.roots.answered:
		// The server applies the roots after it has them (the reference
		// filesystem server resolves and stats each directory first), and
		// the protocol has no signal for it: give it a moment.
		s := time.NewTimer(rootsSettle)
		defer s.Stop()
		select {
		case <-s.C:
		case <-ctx.Done():
		}
		r.log.Debug("the server asked for the roots", "after", time.Since(start))
	case <-t.C:
		r.log.Debug("the server did not ask for the roots", "waited", r.cfg.RootsWait)
	case <-ctx.Done():
	}
}

func (r *Runner) hasRootsHandler() bool {
	if _, ok := r.handlers["roots/list"]; ok {
		return true
	}
	_, ok := r.cfg.Native["roots/list"]
	return ok
}
