package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"time"

	"github.com/snodo/snodo/internal/safetext"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// maxGETFailures is how many times in a row the standalone GET stream may
// fail to deliver anything before the transport stops reopening it.
const maxGETFailures = 5

// Notify implements transport.Notifier: it POSTs n and waits for the
// server to accept it (202, or any 2xx). Headers are chosen as for
// Request. A failure status is an error: the JSON-RPC error of its body, or
// a -32000 error wrapping a *transport.StatusError.
//
// Once notifications/initialized has been accepted, the transport opens
// the standalone GET stream of the initialize era with the same version
// and session headers: the server's requests and notifications arrive on
// it (a server that offers none answers 405, and the transport does
// without).
func (t *Transport) Notify(ctx context.Context, n *jsonrpc.Notification, opts transport.NotifyOptions) error {
	if err := t.Err(); err != nil {
		return err
	}
	body, err := jsonrpc.Encode(n)
	if err != nil {
		return &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeInvalidRequest, Message: "cannot encode the notification", Cause: err}
	}
	h := t.requestHeaders(&jsonrpc.Request{Method: n.Method, Params: n.Params}, opts.Dialect, nil, opts.Headers)
	traceHeaders(ctx, h)
	ctx, cancel := t.bound(ctx, opts.Timeout)
	defer cancel()
	resp, err := t.do(ctx, nethttp.MethodPost, body, h, "")
	if err != nil {
		return t.exchangeError(ctx, opts.Timeout, "POST of "+n.Method+" failed", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		r, err := t.failure(resp, h, jsonrpc.ID{}, true)
		if err != nil {
			return err
		}
		return r.Error
	}
	drain(resp)
	if n.Method == methodInitialized && !isModern(h) {
		// A server sends its requests that belong to no call on the GET
		// stream, and drops them while it is not open (the TypeScript SDK
		// does): the requests after this one wait for its answer.
		ready := t.openGET(baseHeaders(h))
		wait := time.NewTimer(getReadyWait)
		defer wait.Stop()
		select {
		case <-ready:
		case <-wait.C:
		case <-ctx.Done():
		}
	}
	return nil
}

// getReadyWait bounds how long Notify of notifications/initialized waits
// for the standalone GET stream's answer.
const getReadyWait = 5 * time.Second

// bound returns ctx bounded by timeout (none when 0) and by the
// transport's life.
func (t *Transport) bound(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(t.life, cancel)
	if timeout > 0 {
		var tcancel context.CancelFunc
		ctx, tcancel = context.WithTimeout(ctx, timeout)
		return ctx, func() { tcancel(); stop(); cancel() }
	}
	return ctx, func() { stop(); cancel() }
}

// exchangeError is the error of a short exchange (Notify, DeleteSession)
// that failed with err under ctx.
func (t *Transport) exchangeError(ctx context.Context, timeout time.Duration, msg string, err error) error {
	if t.life.Err() != nil {
		return t.Err()
	}
	if ctx.Err() != nil {
		if timeout > 0 && ctx.Err() == context.DeadlineExceeded {
			return transport.TimeoutError(timeout)
		}
		return transport.ContextError(ctx)
	}
	return t.connError(ctx, msg, err)
}

// DeleteSession implements transport.SessionDeleter: it sends DELETE with
// opts.Headers (the Mcp-Session-Id) and waits up to opts.Timeout. A 2xx, a
// 404 (the session is already gone) and a 405 (the server does not let
// clients end sessions) are success.
func (t *Transport) DeleteSession(ctx context.Context, opts transport.SessionOptions) error {
	if err := t.Err(); err != nil {
		return err
	}
	h := t.requestHeaders(nil, nil, nil, opts.Headers)
	ctx, cancel := t.bound(ctx, opts.Timeout)
	defer cancel()
	resp, err := t.do(ctx, nethttp.MethodDelete, nil, h, "")
	if err != nil {
		return t.exchangeError(ctx, opts.Timeout, "DELETE of the session failed", err)
	}
	defer drain(resp)
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299,
		resp.StatusCode == nethttp.StatusNotFound,
		resp.StatusCode == nethttp.StatusMethodNotAllowed:
		return nil
	}
	data, _ := readBounded(resp.Body, errorBodyCap)
	return transport.ConnectionError(fmt.Sprintf("DELETE of the session: HTTP %d", resp.StatusCode),
		&transport.StatusError{Status: resp.StatusCode, Body: capText(data)})
}

// getStream is one run of the standalone GET stream's loop, for one
// session.
type getStream struct {
	session string        // the Mcp-Session-Id it carries, or ""
	ready   chan struct{} // closed once the first opening has its answer
	stop    context.CancelFunc
}

// OnStreamLost implements transport.StreamWatcher: fn is called when the
// standalone GET stream ends for good while the transport runs — a 404
// for its session (the error wraps ErrSessionExpired), another failure
// status, or maxGETFailures reopenings in a row without progress — but not
// when the server answers 405 (it offers no such stream), nor when a new
// session's stream replaces it, nor at Close.
func (t *Transport) OnStreamLost(fn func(err error)) {
	t.core.Mu.Lock()
	t.onLost = fn
	t.core.Mu.Unlock()
}

// openGET starts the standalone GET stream for the session of h, unless it
// runs already, and returns a channel closed once its first opening has an
// answer (the stream, a refusal, or a failure). The stream of another
// session — one the server ended, replaced by a new one — is stopped.
func (t *Transport) openGET(h nethttp.Header) <-chan struct{} {
	t.core.Mu.Lock()
	defer t.core.Mu.Unlock()
	if t.core.ErrLocked() != nil {
		return closedChan
	}
	session := h.Get(transport.HeaderSessionID)
	if g := t.get; g != nil {
		if g.session == session {
			return g.ready
		}
		g.stop()
	}
	ctx, stop := context.WithCancel(t.life)
	g := &getStream{session: session, ready: make(chan struct{}), stop: stop}
	t.get = g
	t.goLocked(func() { t.getLoop(ctx, g, h) })
	return g.ready
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// getLoop keeps the standalone GET stream open, closing g.ready once the
// first opening has its answer: server requests and notifications arrive
// on it, and responses of resumed streams are routed to their requests.
// When the stream ends it is reopened after the server's retry time, with
// Last-Event-ID, until ctx ends (Close, or a new session's stream), the
// server answers 405 (no stream) or another failure status, or
// maxGETFailures openings in a row bring no progress (a message on a
// stream that lasted progressSpan). The ends other than ctx's and 405 are
// reported to the StreamWatcher hook: whoever waits for events of this
// stream would otherwise wait for ever.
func (t *Transport) getLoop(ctx context.Context, g *getStream, h nethttp.Header) {
	var (
		lastID   string
		retry    time.Duration
		failures int
		lastErr  error
		lost     error
		readyC   = g.ready
	)
	closeReady := func() {
		if readyC != nil {
			close(readyC)
			readyC = nil
		}
	}
	defer func() {
		closeReady()
		if ctx.Err() != nil {
			lost = nil // stopped: Close, or a new session's stream
		}
		g.stop()
		t.core.Mu.Lock()
		if t.get == g {
			t.get = nil
		}
		fn := t.onLost
		t.core.Mu.Unlock()
		if lost != nil && fn != nil {
			fn(lost)
		}
	}()
	for {
		resp, err := t.do(ctx, nethttp.MethodGet, nil, h, lastID)
		closeReady()
		if ctx.Err() != nil {
			if err == nil {
				resp.Body.Close()
			}
			return
		}
		if err == nil {
			if resp.StatusCode == nethttp.StatusMethodNotAllowed {
				drain(resp)
				return
			}
			if resp.StatusCode < 200 || resp.StatusCode > 299 || mediaType(resp.Header) != "text/event-stream" {
				lost = t.getRefused(resp, h)
				return
			}
			opened := time.Now()
			sr := newSSEReader(resp.Body, t.maxMsg)
			sr.lastID, sr.sawID = lastID, lastID != ""
			_, events, perr := t.pump(sr, nil, h)
			resp.Body.Close()
			lastErr = streamEnd(perr)
			if sr.sawID {
				lastID = sr.lastID
			}
			if sr.retry > 0 {
				retry = sr.retry
			}
			// Progress as for a request's stream (progressSpan): a stream
			// dropped after each event is not reopened for ever.
			if (events > 0 || sr.sawID) && time.Since(opened) >= progressSpan {
				failures = 0
			}
		} else {
			lastErr = err
		}
		failures++
		if failures > maxGETFailures {
			lost = t.connError(ctx, fmt.Sprintf("the standalone GET stream could not be reopened after %d attempts", maxGETFailures), lastErr)
			return
		}
		if !sleep(ctx, retryDelay(retry)) {
			return
		}
	}
}

// getRefused is the error of a GET stream refused with resp: a 404 for the
// session wraps ErrSessionExpired.
func (t *Transport) getRefused(resp *nethttp.Response, h nethttp.Header) error {
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return transport.ConnectionError(fmt.Sprintf("the standalone GET stream was answered with HTTP %d and not an SSE stream", resp.StatusCode),
			&transport.StatusError{Status: resp.StatusCode})
	}
	r, err := t.failure(resp, h, jsonrpc.ID{}, false)
	if err != nil {
		return err
	}
	return transport.ConnectionError("the server refused the standalone GET stream: "+capString(safetext.Escape(r.Error.Message, false)), r.Error)
}
