package http

import (
	"context"
	nethttp "net/http"
	"strings"
	"sync"

	"github.com/snodo/snodo/internal/admit"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport/internal/rpc"
)

// base is what both HTTP transports, Streamable HTTP (Transport) and
// HTTP+SSE (SSE), hold beside their framing: the HTTP client and
// configuration, the call core, and the life of the transport's goroutines.
type base struct {
	client  *nethttp.Client
	own     *nethttp.Transport // the default client's transport, nil otherwise
	header  nethttp.Header
	maxMsg  int
	answers chan struct{} // slots for answering server requests in the background

	life     context.Context // ends when the transport stops; every HTTP request runs under it
	stopLife context.CancelCauseFunc
	done     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup // background goroutines; Add only under core.Mu while running

	// core is the call table, the routing of what the server sends, the
	// listens and server requests, and the transport's error. Its Mu also
	// guards the Add of wg and the framing's own fields that say so.
	core rpc.Core[*call]
}

// init sets b up for cfg, whose check has passed.
func (b *base) init(cfg Config) {
	b.header = cfg.Header.Clone()
	b.maxMsg = cfg.MaxMessageBytes
	if b.maxMsg == 0 {
		b.maxMsg = DefaultMaxMessageBytes
	}
	b.answers = make(chan struct{}, 2*admit.DefaultLimit)
	b.done = make(chan struct{})
	b.core.Init(admit.Serve(cfg.OnServerRequest, admit.New(0)), cfg.OnNotification)
	b.client, b.own = clientFor(cfg.HTTPClient, strings.EqualFold(cfg.URL[:min(len(cfg.URL), 5)], "http:"))
	b.life, b.stopLife = context.WithCancelCause(context.Background())
}

// halt records why the transport stopped, fails the calls waiting (they
// see done; a response settled before it is in their channel) and the
// listens, and ends every HTTP request; then, once, it runs after.
func (b *base) halt(err *jsonrpc.Error, after func()) {
	b.stopOnce.Do(func() {
		b.core.Mu.Lock()
		_, listens := b.core.StopLocked(err)
		b.core.Mu.Unlock()
		close(b.done)
		b.stopLife(err)
		for _, ls := range listens {
			ls.Fail(err)
		}
		after()
	})
}

// Done returns a channel that is closed once the transport has stopped.
func (b *base) Done() <-chan struct{} { return b.done }

// Err returns why the transport stopped (a -32000 *jsonrpc.Error), or nil
// while it runs.
func (b *base) Err() error { return b.core.Err() }

// goLocked starts fn as a background goroutine that Close waits for.
// b.core.Mu must be held, and the transport running.
func (b *base) goLocked(fn func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		fn()
	}()
}

// enter counts the caller's goroutine among the background goroutines
// that Close waits for, until it calls b.wg.Done; it reports false, without
// counting it, once the transport has stopped.
func (b *base) enter() bool {
	b.core.Mu.Lock()
	defer b.core.Mu.Unlock()
	if b.core.ErrLocked() != nil {
		return false
	}
	b.wg.Add(1)
	return true
}

// goTracked is goLocked taking b.core.Mu; it reports false, without
// starting fn, once the transport has stopped.
func (b *base) goTracked(fn func()) bool {
	b.core.Mu.Lock()
	defer b.core.Mu.Unlock()
	if b.core.ErrLocked() != nil {
		return false
	}
	b.goLocked(fn)
	return true
}

// closeIdle closes the idle connections of the transport's own client.
func (b *base) closeIdle() {
	if b.own != nil {
		b.own.CloseIdleConnections()
	}
}

// answer runs send, which POSTs the answer to a server request: in the
// background while slots last; past that in the caller (possibly a
// stream's reader), which slows a flooding server down.
func (b *base) answer(send func()) {
	select {
	case b.answers <- struct{}{}:
		if !b.goTracked(func() { defer func() { <-b.answers }(); send() }) {
			<-b.answers
		}
	default:
		send()
	}
}
