package rpc

import (
	"encoding/json"
	"time"

	"github.com/snodo/snodo/internal/jsoncodec"
	"github.com/snodo/snodo/internal/progq"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// Progress returns the progress token and queue of a request with params
// made with opts: none without opts.OnProgress; otherwise the token is
// opts.ProgressToken or, when that is zero, params._meta.progressToken,
// and the queue holds up to limit bytes of notifications waiting for a
// slow progress function (past that the oldest is dropped: MCP progress
// is cumulative).
func Progress(opts *transport.RequestOptions, params json.RawMessage, limit int) (jsonrpc.ID, *progq.Queue) {
	if opts.OnProgress == nil {
		return jsonrpc.ID{}, nil
	}
	tok, ok := opts.ProgressToken, opts.ProgressToken.IsValid()
	if !ok {
		tok, ok = progressToken(params)
	}
	if !ok {
		return jsonrpc.ID{}, nil
	}
	return tok, progq.New(limit)
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

// Await is the await policy of one request: its timeout, restarted by
// each delivered progress notification when opts.ResetTimeoutOnProgress
// is set, up to opts.MaxTotalTimeout after the request started; and the
// delivery of its progress to opts.OnProgress, in the caller's goroutine.
// A transport arms its own timer (or read deadline) for what Next says,
// and calls Deliver when the progress queue is ready.
//
// It copies what it needs of the options rather than keeping a pointer to
// them: a pointer would move the caller's RequestOptions to the heap, an
// allocation per request on stdio's hot path.
type Await struct {
	timeout    time.Duration
	maxTotal   time.Duration
	onProgress transport.ProgressFunc
	prog       *progq.Queue
	reset      bool
	total      time.Time // the max-total deadline; zero: none
	hitTotal   bool      // the timeout armed last is the max-total one
	buf        []json.RawMessage
}

// Start starts the policy of a request made with opts, whose progress
// queue is prog (nil without progress), at the time it is sent.
func (a *Await) Start(opts *transport.RequestOptions, prog *progq.Queue) {
	a.timeout, a.maxTotal, a.onProgress, a.prog = opts.Timeout, opts.MaxTotalTimeout, opts.OnProgress, prog
	a.reset = opts.ResetTimeoutOnProgress && prog != nil
	if a.reset && opts.MaxTotalTimeout > 0 {
		a.total = time.Now().Add(opts.MaxTotalTimeout)
	}
}

// Next returns the timeout to arm now, from the request's start or its
// last delivered progress; ok is false when there is none.
func (a *Await) Next() (d time.Duration, ok bool) {
	d = a.timeout
	a.hitTotal = false
	if !a.total.IsZero() {
		if left := time.Until(a.total); d <= 0 || left <= d {
			d, a.hitTotal = max(left, 0), true
		}
	}
	return d, d > 0 || a.hitTotal
}

// ResetOnProgress reports whether delivered progress restarts the
// timeout (Next is then asked again).
func (a *Await) ResetOnProgress() bool { return a.reset }

// TimeoutError is the error of the timeout armed last: TimeoutError, or
// MaxTotalTimeoutError when that one was the max-total limit.
func (a *Await) TimeoutError() *jsonrpc.Error {
	if a.hitTotal {
		return transport.MaxTotalTimeoutError(a.maxTotal)
	}
	return transport.TimeoutError(a.timeout)
}

// Ready returns the channel that is ready when progress waits for
// delivery; nil (never ready) without progress.
func (a *Await) Ready() <-chan struct{} {
	if a.prog == nil {
		return nil
	}
	return a.prog.Ready()
}

// Deliver passes the progress waiting to opts.OnProgress, in order. An
// error returned (or a panic, as a -32603 error of kind handler) stops it:
// the transport then gives the request up, cancelling it on the server,
// and returns that error.
func (a *Await) Deliver() error {
	if a.prog == nil {
		return nil
	}
	a.buf = a.prog.Take(a.buf)
	for i, p := range a.buf {
		a.buf[i] = nil
		if err := progq.Call(a.onProgress, p); err != nil {
			return err
		}
	}
	return nil
}
