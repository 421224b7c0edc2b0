package stdio

import (
	"context"
	"sync"
	"time"

	"github.com/snodo/snodo/internal/progq"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/internal/rpc"
)

// call is one request waiting for its response.
type call struct {
	req   jsonrpc.Request // the request while it is encoded (no allocation of its own)
	id    jsonrpc.ID
	token jsonrpc.ID // progress token; zero without OnProgress
	conn  *Conn      // the connection it was sent on
	// initialize marks the initialize request, which MCP forbids
	// cancelling: given up, it is dropped without notifications/cancelled.
	initialize bool
	// resp receives the one value sent to the call: its response, or a
	// sentinel (respTimeout, respContext, respStopped) saying why it was
	// given up. Whoever removes the call from Conn.pending sends it (see
	// claim).
	resp chan *jsonrpc.Response

	// prog holds progress waiting for the caller, which takes it in
	// batches (internal/progq); nil without OnProgress.
	prog *progq.Queue

	// timer runs timedOut at the response timeout of a caller that waits
	// without the baton. Made once for the call, it stays with it (stopped
	// before it fired) for the call's next requests; nil until needed.
	timer *time.Timer
	// stale is set when the timer's function may still be running for
	// the call: it is not to be recycled.
	stale bool
	// watch is the watch of the caller's context while the call is
	// pending (under Conn.mu); nil for a context that never ends. The
	// calls of a watch are a list, through watchPrev and watchNext.
	watch                *ctxWatch
	watchPrev, watchNext *call
}

// Token and Progress make a call an rpc.Call.
func (cl *call) Token() jsonrpc.ID      { return cl.token }
func (cl *call) Progress() *progq.Queue { return cl.prog }

// ctxWatch watches a context for the pending calls made with it (by its
// Done channel): when it ends, it claims them all and sends each
// respContext. Callers usually share a context: one context.AfterFunc
// serves all the calls made with it while any is pending, where one per
// call would lock the shared context twice and allocate for each.
type ctxWatch struct {
	c     *Conn
	done  <-chan struct{}
	calls *call       // the pending calls made with the context (a list)
	stop  func() bool // stops the context.AfterFunc
	ended func()      // w.fire, made once
}

func (w *ctxWatch) fire() { w.c.contextEnded(w) }

// watchLocked counts cl among the pending calls made with ctx, whose Done
// channel is done (not nil), starting a watch of ctx if there is none.
// The context's lock is taken under c.core.Mu, never the other way round: the
// watch's function runs in a goroutine of its own.
func (c *Conn) watchLocked(ctx context.Context, done <-chan struct{}, cl *call) {
	w := c.watches[done]
	if w == nil {
		if w, c.spareWatch = c.spareWatch, nil; w == nil {
			w = &ctxWatch{c: c}
			w.ended = w.fire
		}
		w.done = done
		c.watches[done] = w
		w.stop = context.AfterFunc(ctx, w.ended)
	}
	cl.watch, cl.watchPrev, cl.watchNext = w, nil, w.calls
	if w.calls != nil {
		w.calls.watchPrev = cl
	}
	w.calls = cl
}

// unwatchLocked uncounts cl, which is no longer pending, and stops the
// watch of its context when no pending call was made with it.
func (c *Conn) unwatchLocked(cl *call) {
	w := cl.watch
	if w == nil {
		return
	}
	if cl.watchPrev != nil {
		cl.watchPrev.watchNext = cl.watchNext
	} else {
		w.calls = cl.watchNext
	}
	if cl.watchNext != nil {
		cl.watchNext.watchPrev = cl.watchPrev
	}
	cl.watch, cl.watchPrev, cl.watchNext = nil, nil, nil
	if w.calls == nil {
		delete(c.watches, w.done)
		if w.stop() {
			// Its function will not run: the next watch may be this one.
			w.done, w.stop = nil, nil
			c.spareWatch = w
		}
	}
}

// contextEnded runs when the context of w ends: it claims the calls made
// with it and sends each respContext, and wakes a holder of the baton
// among their callers.
func (c *Conn) contextEnded(w *ctxWatch) {
	var calls []*call
	c.core.Mu.Lock()
	if c.watches[w.done] == w {
		// Each call leaves the list as it is claimed (the core's OnRemove
		// unwatches it); the last stops the watch.
		for cl := w.calls; cl != nil; cl = w.calls {
			calls = append(calls, cl)
			c.core.RemoveLocked(cl.id, cl)
		}
	}
	c.core.Mu.Unlock()
	for _, cl := range calls {
		cl.resp <- respContext
	}
	if len(calls) > 0 {
		c.poke()
	}
}

// The sentinels a call may be sent instead of its response, by the claimer
// that gave up on it for its caller, which then does the rest (tells the
// server, builds the error) in its own goroutine. Compared by pointer;
// they never leave the package.
var (
	respTimeout = &jsonrpc.Response{} // the armed timeout passed (call.timer)
	respContext = &jsonrpc.Response{} // the caller's context ended (ctxWatch)
	respStopped = &jsonrpc.Response{} // the connection stopped (Conn.stop)
)

// claim removes cl from the call table if it is still there, and reports whether
// it did. Whoever claims a call, and only they, sends it its one value:
// the reader its response (handleResponse), the timer and the context's
// watch their sentinels, Conn.stop the connection's, so a call gets
// exactly one value and the first to claim it wins. A holder of the baton
// that gives up itself (its context, its deadline) claims its call too,
// and then needs no value; if it loses, it takes the winner's.
func (c *Conn) claim(cl *call) bool { return c.core.Remove(cl.id, cl) }

// timedOut is the function of cl's timer.
func (cl *call) timedOut() {
	if cl.conn.claim(cl) {
		cl.resp <- respTimeout
	}
}

// Request sends req and waits for its response, which it returns as it
// came: an error response is a *jsonrpc.Response with Error set. req is not
// modified; when req.ID is zero the request goes out with a fresh integer
// ID, which the response carries.
//
// The Go error is a *jsonrpc.Error of kind transport:
//   - -32001 (transport.TimeoutError) when opts.Timeout passes, or
//     transport.MaxTotalTimeoutError when progress kept resetting it past
//     opts.MaxTotalTimeout; the server is sent notifications/cancelled;
//   - when ctx ends: -32001 for a deadline, -32603 for a cancellation,
//     wrapping ctx's error and cause; the server is sent
//     notifications/cancelled;
//   - -32000 (transport.ConnectionError) when the connection has stopped or
//     stops before the response arrives.
//
// With opts.OnProgress, each notifications/progress whose progressToken is
// req's params._meta.progressToken is passed to it in this goroutine, in
// order, before the response is returned: every notification, as long as
// those waiting for a slow function hold no more bytes than the
// connection's line limit (Config.MaxLineBytes); past that, the oldest
// waiting notification is dropped, since MCP progress is cumulative. The
// token is opts.ProgressToken, or when that is zero, the one read from
// req's params. A progress function that returns an error or panics cancels the
// request on the server, and Request returns that error (a panic becomes a
// -32603 error of kind handler).
//
// Note: RequestOptions.Dialect, Extension, Headers and OnResponseHeaders
// are for transports with headers; stdio ignores them.
func (c *Conn) Request(ctx context.Context, req *jsonrpc.Request, opts transport.RequestOptions) (*jsonrpc.Response, error) {
	cl := callPool.Get().(*call)
	r := &cl.req
	*r = *req
	cl.token, cl.prog = rpc.Progress(&opts, r.Params, c.maxLine)
	c.core.Mu.Lock()
	if err := c.core.AddLocked(&r.ID, cl); err != nil {
		c.core.Mu.Unlock()
		return nil, err
	}
	cl.id = r.ID
	cl.conn = c
	cl.initialize = r.Method == "initialize"
	if done := ctx.Done(); done != nil {
		c.watchLocked(ctx, done, cl)
	}
	c.core.Mu.Unlock()

	om, err := c.send(r, false)
	cl.req = jsonrpc.Request{} // encoded: not needed any more
	if err != nil {
		c.claim(cl) // gives it up
		return nil, err
	}
	resp, err := c.await(ctx, cl, om, opts)
	if err == nil {
		cl.recycle()
	}
	return resp, err
}

// callPool keeps calls, with their response channels and timers, for later
// requests.
var callPool = sync.Pool{New: func() any { return &call{resp: make(chan *jsonrpc.Response, 1)} }}

// recycle gives cl back to callPool once its response has been received
// from cl.resp. Each call is sent at most one value, by whoever removed it
// from Conn.pending, so nothing can reach a recycled call: a call given up
// (a timeout, a context, a closed connection) may still be sent its
// response, and is never recycled, nor is one whose timer function may
// still be running (stale). Calls with progress are not either.
func (cl *call) recycle() {
	if cl.prog != nil || cl.stale || len(cl.resp) != 0 {
		return
	}
	*cl = call{resp: cl.resp, timer: cl.timer}
	callPool.Put(cl)
}

// await waits for cl's response, delivering its progress. When nobody
// else reads stdout, it reads it itself (see reader.go): it holds the
// baton, routing whatever arrives, until its own response comes, and then
// hands the baton on (waiter.hold).
//
// A caller that waits without the baton receives on cl.resp alone, or with
// its progress queue's channel when it has progress (waiter.wait): its
// timer, its context's watch (ctxWatch) and the connection's stop claim
// the call and send it a sentinel rather than being watched in a select,
// which with many callers waiting costs more than the rest of the wait.
func (c *Conn) await(ctx context.Context, cl *call, om *outMsg, opts transport.RequestOptions) (*jsonrpc.Response, error) {
	w := waiter{c: c, ctx: ctx, cl: cl, om: om}
	w.pol.Start(&opts, cl.prog)
	w.arm()
	defer w.stopTimer()
	defer w.drop(true)
	select {
	case <-c.baton:
		w.take()
	default:
	}
	if resp, err := w.hold(); resp != nil || err != nil {
		return resp, err
	}
	return w.wait()
}

// waiter is one caller of await, on its stack: the timeout of its call and
// whether it holds the baton.
type waiter struct {
	c   *Conn
	ctx context.Context
	cl  *call
	om  *outMsg
	pol rpc.Await // the timeout, its reset by progress, the delivery

	deadline time.Time // when the armed timeout passes; zero: none
	watching bool      // the timer claims the call
	timerOn  bool      // cl.timer is set and has not been stopped
	holding  bool      // stdout is read in this goroutine
}

// The timeout. A holder of the baton reads stdout with a read deadline at
// w.deadline and looks at the time itself; a caller without the baton
// has the call's timer claim the call (watching).

// startTimer starts the call's timer for d.
func (w *waiter) startTimer(d time.Duration) {
	if w.cl.timer == nil {
		w.cl.timer = time.AfterFunc(d, w.cl.timedOut)
	} else {
		w.cl.timer.Reset(d)
	}
	w.timerOn = true
}

// arm arms the timeout the policy says, from now: the request's start or
// the progress just delivered.
func (w *waiter) arm() {
	if w.timerOn {
		if !w.cl.timer.Stop() {
			// It fired: its sentinel is in cl.resp or on its way, for
			// the timeout armed, which stays as it was.
			return
		}
		w.timerOn = false
	}
	d, ok := w.pol.Next()
	if !ok {
		w.deadline = time.Time{}
		return
	}
	w.deadline = time.Now().Add(d)
	if w.watching {
		w.startTimer(d)
	}
}

// stopTimer stops the call's timer as the caller leaves. A timer stopped
// before it fired stays with the call for its next request; one that
// fired may still be looking at the call, which is then not recycled.
func (w *waiter) stopTimer() {
	if w.timerOn && !w.cl.timer.Stop() {
		w.cl.stale = true
	}
}

// The baton. The watch of the caller's context pokes its holder when the
// context ends.

// take holds the baton: stdout is read in this goroutine.
func (w *waiter) take() {
	w.holding = true
	w.c.armRead(w.deadline)
}

// drop lets the baton go, handing it on when release is set (it is not
// when it is already gone: lent, or stdout ended).
func (w *waiter) drop(release bool) {
	if !w.holding {
		return
	}
	w.holding = false
	if release {
		w.c.release()
	}
}

// The outcome.

// received returns what the value sent to the call says: its response,
// with the progress still waiting delivered first, or the error of the
// sentinel sent by whoever gave up on the call, which claimed it: what is
// left to do is done here, in the caller's goroutine.
func (w *waiter) received(resp *jsonrpc.Response) (*jsonrpc.Response, error) {
	switch resp {
	case respTimeout:
		err := w.pol.TimeoutError()
		w.c.cancelRequest(w.cl, w.om, err.Message)
		return nil, err
	case respContext:
		err := transport.ContextError(w.ctx)
		w.c.cancelRequest(w.cl, w.om, err.Message)
		return nil, err
	case respStopped:
		return nil, w.c.Err()
	}
	if err := w.pol.Deliver(); err != nil {
		return nil, err
	}
	return resp, nil
}

// giveUp is the caller giving up for why (a sentinel): it claims the
// call, unless a response or another sentinel claimed it first, which then
// wins. A holder that gives up claims its call before it lets the baton
// go, so that it is not counted among those waiting.
func (w *waiter) giveUp(why *jsonrpc.Response) (*jsonrpc.Response, error) {
	if !w.c.claim(w.cl) {
		w.drop(true)
		// Its claimer sends it at once.
		return w.received(<-w.cl.resp)
	}
	w.drop(true)
	return w.received(why)
}

// hold is the caller holding the baton: it looks at what it waits for,
// then reads one line, until it has its outcome or lets the baton go
// without one, when it returns nil and nil (a response is never nil). The
// progress function runs without the baton: it may take its time.
func (w *waiter) hold() (*jsonrpc.Response, error) {
	cl := w.cl
	for w.holding {
		select {
		case resp := <-cl.resp:
			// Its response, or the sentinel of the connection's stop (the
			// baton then goes to the background reader, which drains
			// stdout).
			w.drop(true)
			return w.received(resp)
		default:
		}
		switch {
		case w.c.stopped() != nil:
			// stop has claimed the call, and sent it its sentinel, unless
			// its response came first.
			w.drop(true)
			return w.received(<-cl.resp)
		case w.ctx.Err() != nil:
			return w.giveUp(respContext)
		case !w.deadline.IsZero() && !time.Now().Before(w.deadline):
			return w.giveUp(respTimeout)
		case cl.prog != nil && cl.prog.Pending():
			w.drop(true) // the background reader reads while it runs
			return nil, nil
		}
		w.readLine()
	}
	return nil, nil
}

// readLine is one read of the holder: it routes one line, or wakes at
// its read deadline. A server request to answer in this goroutine is
// answered here, the baton lent meanwhile, and taken back if still free.
func (w *waiter) readLine() {
	c := w.c
	hold := holdState{ctx: w.ctx, deadline: w.deadline}
	holder := &hold
	if w.cl.prog != nil {
		holder = nil // it stays free to deliver progress
	}
	st, _, inline := c.readStep(holder)
	switch st {
	case readWoken:
		c.armRead(w.deadline)
	case readEnded:
		w.drop(false) // the baton is gone
	}
	if inline == nil {
		return
	}
	w.drop(false)
	c.lend()
	inline()
	select {
	case <-c.baton:
		c.unwatch()
		w.take()
	default:
	}
}

// wait is the caller waiting without the baton, which it does not hold
// again: for its response or a sentinel, delivering its progress as it
// comes.
func (w *waiter) wait() (*jsonrpc.Response, error) {
	cl := w.cl
	if !w.deadline.IsZero() {
		// From now on the timer claims the call when its timeout passes.
		// A timeout that passed meanwhile (this caller may come back late
		// from a server request it ran) fires at once, and loses to a
		// response that came first.
		w.startTimer(time.Until(w.deadline))
	}
	w.watching = true
	progReady := w.pol.Ready() // nil (never ready) without progress
	if progReady == nil {
		return w.received(<-cl.resp)
	}
	for {
		select {
		case resp := <-cl.resp:
			return w.received(resp)
		case <-progReady:
			if err := w.pol.Deliver(); err != nil {
				w.c.abort(cl, w.om, rpc.ProgressFailed(err))
				return nil, err
			}
			if w.pol.ResetOnProgress() {
				w.arm()
			}
		}
	}
}

// abort gives up on cl: its response will be dropped, and the server is
// told with notifications/cancelled, unless the request was never written.
func (c *Conn) abort(cl *call, om *outMsg, reason string) {
	c.claim(cl)
	c.cancelRequest(cl, om, reason)
}

// cancelRequest tells the server, with notifications/cancelled, that cl's
// request is given up, or withdraws it if it has not been written yet. The
// call is no longer pending.
func (c *Conn) cancelRequest(cl *call, om *outMsg, reason string) {
	if om.abandon() || cl.initialize {
		return
	}
	c.sendCancelled(cl.id, reason)
}

// sendCancelled queues notifications/cancelled for id.
func (c *Conn) sendCancelled(id jsonrpc.ID, reason string) {
	c.send(rpc.Cancelled(id, reason), false)
}

// Notify writes a notification and returns once the line has been written
// to the server's stdin. When opts.Timeout passes or ctx ends first, the
// notification is withdrawn if it has not started to be written, and
// Notify returns a timeout or context error; when the connection stops, the
// -32000 connection error.
func (c *Conn) Notify(ctx context.Context, n *jsonrpc.Notification, opts transport.NotifyOptions) error {
	om, err := c.send(n, true)
	if err != nil {
		return err
	}
	var timerC <-chan time.Time
	if opts.Timeout > 0 {
		t := time.NewTimer(opts.Timeout)
		defer t.Stop()
		timerC = t.C
	}
	select {
	case err := <-om.written:
		return err
	case <-timerC:
		om.abandon()
		return transport.TimeoutError(opts.Timeout)
	case <-ctx.Done():
		om.abandon()
		return transport.ContextError(ctx)
	case <-c.done:
		select {
		case err := <-om.written:
			return err
		default:
			return c.Err()
		}
	}
}
