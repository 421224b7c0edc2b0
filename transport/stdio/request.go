package stdio

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/snodo/snodo/internal/jsoncodec"
	"github.com/snodo/snodo/internal/progq"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// call is one request waiting for its response.
type call struct {
	req   jsonrpc.Request // the request while it is encoded (no allocation of its own)
	id    jsonrpc.ID
	token jsonrpc.ID // progress token; zero without OnProgress
	resp  chan *jsonrpc.Response

	// prog holds progress waiting for the caller, which takes it in
	// batches (internal/progq); nil without OnProgress.
	prog *progq.Queue

	// timer is the response timeout of a caller that waits without the
	// baton, stopped before it fired, kept with the call for its next
	// request; nil when there is none to reuse.
	timer *time.Timer
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
// Note: RequestOptions.Dialect, Extension, Headers, OnResponseHeaders and
// OnServerRequest are for transports with headers or per-request server
// requests; stdio ignores them (see Config.OnServerRequest and SetInbound).
func (c *Conn) Request(ctx context.Context, req *jsonrpc.Request, opts transport.RequestOptions) (*jsonrpc.Response, error) {
	cl := callPool.Get().(*call)
	r := &cl.req
	*r = *req
	if opts.OnProgress != nil {
		tok, ok := opts.ProgressToken, opts.ProgressToken.IsValid()
		if !ok {
			tok, ok = progressToken(r.Params)
		}
		if ok {
			cl.token = tok
			cl.prog = progq.New(c.maxLine)
		}
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	if !r.ID.IsValid() {
		r.ID = c.newIDLocked() // in flight nowhere
	} else if c.pending[r.ID] != nil || c.listens[r.ID] != nil {
		c.mu.Unlock()
		return nil, &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("request id %v is already in flight", r.ID)}
	}
	cl.id = r.ID
	c.pending[r.ID] = cl
	c.npending.Store(int32(len(c.pending)))
	if cl.token.IsValid() {
		c.progress[cl.token] = cl
	}
	c.mu.Unlock()

	om, err := c.send(r, false)
	cl.req = jsonrpc.Request{} // encoded: not needed any more
	if err != nil {
		c.forget(cl)
		return nil, err
	}
	resp, err := c.await(ctx, cl, om, opts)
	if err == nil {
		cl.recycle()
	}
	return resp, err
}

// callPool keeps calls, with their response channels, for later requests.
var callPool = sync.Pool{New: func() any { return &call{resp: make(chan *jsonrpc.Response, 1)} }}

// recycle gives cl back to callPool once its response has been received
// from cl.resp. Each call is sent at most one response, by whoever removed
// it from Conn.pending, so nothing can reach a recycled call: a call given
// up (a timeout, a context, a closed connection) may still be sent its
// response, and is never recycled. Calls with progress are not either.
func (cl *call) recycle() {
	if cl.prog != nil || len(cl.resp) != 0 {
		return
	}
	*cl = call{resp: cl.resp, timer: cl.timer}
	callPool.Put(cl)
}

// newIDLocked returns an integer ID that no request in flight uses, not
// even one whose caller chose it.
func (c *Conn) newIDLocked() jsonrpc.ID {
	for {
		id := jsonrpc.Int64ID(c.nextID.Add(1))
		if c.pending[id] == nil && (len(c.listens) == 0 || c.listens[id] == nil) {
			return id
		}
	}
}

// await waits for cl's response, delivering its progress. When nobody
// else reads stdout, it reads it itself (see reader.go): it holds the
// baton, routing whatever arrives, until its own response comes, and then
// hands the baton on.
func (c *Conn) await(ctx context.Context, cl *call, om *outMsg, opts transport.RequestOptions) (*jsonrpc.Response, error) {
	var progReady <-chan struct{} // nil (never ready) without progress
	if cl.prog != nil {
		progReady = cl.prog.Ready()
	}
	resetOnProgress := opts.ResetTimeoutOnProgress && cl.prog != nil
	var totalDeadline time.Time
	if resetOnProgress && opts.MaxTotalTimeout > 0 {
		totalDeadline = time.Now().Add(opts.MaxTotalTimeout)
	}
	var (
		deadline time.Time // when the armed timeout passes; zero: none
		hitTotal bool      // the armed timeout is the max-total one
		timer    *time.Timer
		timerC   <-chan time.Time
	)
	arm := func() {
		d := opts.Timeout
		hitTotal = false
		if !totalDeadline.IsZero() {
			if left := time.Until(totalDeadline); d <= 0 || left <= d {
				d, hitTotal = max(left, 0), true
			}
		}
		if d <= 0 && !hitTotal {
			deadline = time.Time{}
			return
		}
		deadline = time.Now().Add(d)
		if timer != nil {
			timer.Reset(d)
		}
	}
	arm()
	defer func() {
		if timer != nil && timer.Stop() {
			// Stopped before it fired: nothing is in its channel, nor
			// will be, so the call's next request may reset it.
			cl.timer = timer
		}
	}()
	timeout := func() error {
		var err error
		if hitTotal {
			err = transport.MaxTotalTimeoutError(opts.MaxTotalTimeout)
		} else {
			err = transport.TimeoutError(opts.Timeout)
		}
		c.abort(cl, om, err.(*jsonrpc.Error).Message)
		return err
	}

	// Holding the baton: stdout is read in this goroutine.
	var (
		holding  bool
		stopPoke func() bool // ends the poke of ctx's end
	)
	take := func() {
		holding = true
		if ctx.Done() != nil {
			stopPoke = context.AfterFunc(ctx, c.poke)
		}
		c.armRead(deadline)
	}
	drop := func(release bool) {
		if !holding {
			return
		}
		holding = false
		if stopPoke != nil {
			stopPoke()
			stopPoke = nil
		}
		if release {
			c.release()
		}
	}
	defer drop(true)

	var progBuf []json.RawMessage
	deliver := func() error {
		progBuf = cl.prog.Take(progBuf)
		for i, p := range progBuf {
			progBuf[i] = nil
			if err := progq.Call(opts.OnProgress, p); err != nil {
				return err
			}
		}
		return nil
	}
	select {
	case <-c.baton:
		take()
	default:
	}
	for {
		if holding {
			// What this caller waits for, then one line. The progress
			// function runs without the baton: it may take its time.
			select {
			case resp := <-cl.resp:
				drop(true)
				if cl.prog != nil {
					if err := deliver(); err != nil {
						return nil, err
					}
				}
				return resp, nil
			default:
			}
			switch {
			// A caller that gives up is forgotten before it lets the
			// baton go, so that it is not counted among those waiting.
			case c.stopped() != nil:
				c.forget(cl)
				drop(true) // for the background reader, which drains stdout
				return nil, c.Err()
			case ctx.Err() != nil:
				c.forget(cl)
				drop(true)
				err := transport.ContextError(ctx)
				c.abort(cl, om, err.Message)
				return nil, err
			case !deadline.IsZero() && !time.Now().Before(deadline):
				c.forget(cl)
				drop(true)
				return nil, timeout()
			case cl.prog != nil && cl.prog.Pending():
				drop(true) // the background reader reads while it runs
				continue
			}
			hold := holdState{ctx: ctx, deadline: deadline}
			holder := &hold
			if cl.prog != nil {
				holder = nil // it stays free to deliver progress
			}
			st, _, inline := c.readStep(holder)
			switch st {
			case readWoken:
				c.armRead(deadline)
			case readEnded:
				drop(false) // the baton is gone
			}
			if inline != nil {
				// A server request to answer in this goroutine: the baton
				// is lent meanwhile, and taken back if still free.
				drop(false)
				c.lend()
				inline()
				select {
				case <-c.baton:
					c.unwatch()
					take()
				default:
				}
			}
			continue
		}
		if !deadline.IsZero() && timer == nil {
			if timer, cl.timer = cl.timer, nil; timer != nil {
				timer.Reset(time.Until(deadline))
			} else {
				timer = time.NewTimer(time.Until(deadline))
			}
			timerC = timer.C
		}
		received := func(resp *jsonrpc.Response) (*jsonrpc.Response, error) {
			if cl.prog != nil {
				if err := deliver(); err != nil {
					return nil, err
				}
			}
			return resp, nil
		}
		select {
		case resp := <-cl.resp:
			return received(resp)
		case <-progReady:
			if err := deliver(); err != nil {
				c.abort(cl, om, "progress function failed: "+err.Error())
				return nil, err
			}
			if resetOnProgress {
				arm()
			}
		case <-timerC:
			// A response that came meanwhile wins (this caller may come
			// back late from a server request it ran).
			select {
			case resp := <-cl.resp:
				return received(resp)
			default:
			}
			return nil, timeout()
		case <-ctx.Done():
			select {
			case resp := <-cl.resp:
				return received(resp)
			default:
			}
			err := transport.ContextError(ctx)
			c.abort(cl, om, err.Message)
			return nil, err
		case <-c.done:
			select {
			case resp := <-cl.resp:
				return resp, nil
			default:
			}
			c.forget(cl)
			return nil, c.Err()
		}
	}
}

// abort gives up on cl: its response will be dropped, and the server is
// told with notifications/cancelled, unless the request was never written.
func (c *Conn) abort(cl *call, om *outMsg, reason string) {
	c.forget(cl)
	if om.abandon() {
		return
	}
	c.sendCancelled(cl.id, reason)
}

// sendCancelled queues notifications/cancelled for id.
func (c *Conn) sendCancelled(id jsonrpc.ID, reason string) {
	params := append([]byte(`{"requestId":`), id.AppendJSON(nil)...)
	if reason != "" {
		r, _ := json.Marshal(reason)
		params = append(append(params, `,"reason":`...), r...)
	}
	params = append(params, '}')
	c.send(&jsonrpc.Notification{Method: methodCancelled, Params: params}, false)
}

func (c *Conn) forget(cl *call) {
	c.mu.Lock()
	c.forgetLocked(cl)
	c.mu.Unlock()
}

func (c *Conn) forgetLocked(cl *call) {
	if c.pending[cl.id] == cl {
		delete(c.pending, cl.id)
		c.npending.Store(int32(len(c.pending)))
	}
	if cl.token.IsValid() && c.progress[cl.token] == cl {
		delete(c.progress, cl.token)
	}
}

// progressToken returns params._meta.progressToken.
func progressToken(params json.RawMessage) (jsonrpc.ID, bool) {
	if len(params) == 0 {
		return jsonrpc.ID{}, false
	}
	var p struct {
		Meta *struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if jsoncodec.Unmarshal(params, &p) != nil || p.Meta == nil {
		return jsonrpc.ID{}, false
	}
	return jsonrpc.ParseID(p.Meta.ProgressToken)
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
