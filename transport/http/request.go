package http

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	nethttp "net/http"
	"net/textproto"
	"net/url"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/snodo/snodo/internal/progq"
	"github.com/snodo/snodo/internal/redact"
	"github.com/snodo/snodo/internal/safetext"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/internal/rpc"
)

// methodInitialized opens the standalone GET stream once accepted.
const methodInitialized = "notifications/initialized"

// modernVersion is the first protocol version of the stateless era: a
// request whose MCP-Protocol-Version is this or later follows its rules.
const modernVersion = "2026-07-28"

// Resumption of a broken initialize-era stream.
const (
	// maxResumes is how many GET reconnections in a row, without progress
	// in between (see progressSpan), a stream gets before its request
	// fails.
	maxResumes = 5
	// progressSpan is how long a broken stream must have lasted, having
	// delivered a message, for its break to start a new count of
	// reconnections (of a request's stream, and of the standalone GET
	// stream). Counting any event as progress let a server that sends one
	// event and drops the stream each time be reconnected to without
	// limit, up to ten times a second (minRetry), until the caller's
	// timeout — which progress may reset for hours — or, for the GET
	// stream, until Close. A stream cut by a proxy's idle or maximum
	// duration lasts far longer than this, so it is still resumed as
	// often as it breaks; a server that cuts sooner gets maxResumes
	// reconnections in a row, as one that sends nothing does. The bound is
	// on what a server can make the client do, not on the caller's wait:
	// the reconnections of a request stay within its timeout.
	progressSpan = 10 * time.Second
	// defaultRetry is the wait before reconnecting when the server gave no
	// retry field.
	defaultRetry = time.Second
	// minRetry is the shortest wait, whatever the server says.
	minRetry = 100 * time.Millisecond
	// maxRetry is the longest: a server's retry field of days would
	// otherwise park the GET stream, or a request's resumption until its
	// timeout.
	maxRetry = time.Minute
)

// cancelTimeout bounds the POST of a notifications/cancelled.
const cancelTimeout = 5 * time.Second

// errorBodyCap is how much of a failure response's body an error shows.
const errorBodyCap = 256

// outcome is how a request ended, from the goroutine that reads its
// response.
type outcome struct {
	resp *jsonrpc.Response
	err  error
}

// call is one request waiting for its response.
type call struct {
	id     jsonrpc.ID
	method string
	token  jsonrpc.ID // progress token; zero without OnProgress
	result chan outcome
	cancel context.CancelCauseFunc // closes the response stream
	// values is the caller's context, for its values only: a server
	// request on the call's stream relates to the call (MCP 2025-11-25),
	// and its handler's context carries them.
	values context.Context

	hdrMu sync.Mutex
	hdrs  nethttp.Header // the response's headers, lowered by headers()

	// prog holds progress waiting for the caller (internal/progq); nil
	// without OnProgress.
	prog *progq.Queue
}

// Token and Progress make a call an rpc.Call.
func (cl *call) Token() jsonrpc.ID      { return cl.token }
func (cl *call) Progress() *progq.Queue { return cl.prog }

func (cl *call) setHeaders(h nethttp.Header) {
	cl.hdrMu.Lock()
	cl.hdrs = h
	cl.hdrMu.Unlock()
}

// headers returns the response's headers with lowercase names, or nil
// before the response; they are lowered only when asked for
// (opts.OnResponseHeaders).
func (cl *call) headers() []transport.Header {
	cl.hdrMu.Lock()
	h := cl.hdrs
	cl.hdrMu.Unlock()
	if h == nil {
		return nil
	}
	return lowerHeaders(h)
}

func lowerHeaders(h nethttp.Header) []transport.Header {
	out := make([]transport.Header, 0, len(h))
	for name, values := range h {
		ln := lower(name)
		for _, v := range values {
			out = append(out, transport.Header{Name: ln, Value: v})
		}
	}
	return out
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Request implements transport.Transport: it POSTs req and waits for its
// response, from a JSON body or the request's SSE stream. req is not
// modified; a zero req.ID is replaced by a fresh integer ID.
//
// The request follows the rules of its era, read from its
// MCP-Protocol-Version header (2026-07-28 or later: the stateless era;
// none or older: the initialize era).
//
// The headers sent are Config.Header, then those of
// opts.Dialect.TransportPolicy(req) and opts.Extension.TransportPolicy(req),
// then opts.Headers, each overriding the ones before. The response headers
// go to opts.OnResponseHeaders, lowercase, before Request returns.
//
// Server requests on the stream go to the dispatcher of SetInbound, or
// else Config.OnServerRequest, and are answered with a POST. Progress for opts.ProgressToken (or the token in
// params) is given to opts.OnProgress in the caller's goroutine.
//
// The Go error is a *jsonrpc.Error of kind transport: -32001 when
// opts.Timeout (or opts.MaxTotalTimeout) passes, -32001 or -32603 when ctx
// ends (a deadline or a cancellation), -32000 for the connection: a failed
// POST, a failure status without a JSON-RPC body (wrapping a
// *transport.StatusError), a stream that ended before the response, a
// message larger than Config.MaxMessageBytes, Close. A request given up
// that way is cancelled on the server: in the initialize era with a POST
// of notifications/cancelled, in the 2026-07-28 era by closing its stream.
func (t *Transport) Request(ctx context.Context, req *jsonrpc.Request, opts transport.RequestOptions) (*jsonrpc.Response, error) {
	r := *req
	cl := &call{method: r.Method, result: make(chan outcome, 1), values: ctx}
	cl.token, cl.prog = rpc.Progress(&opts, r.Params, t.maxMsg)
	h := t.requestHeaders(&r, opts.Dialect, opts.Extension, opts.Headers)
	traceHeaders(ctx, h)
	modern := isModern(h)
	// The stream's context exists before the call is in the table: a
	// response routed from another stream cancels it.
	sctx, cancel := context.WithCancelCause(t.life)
	cl.cancel = cancel

	// The ID is reserved first; the body is encoded outside the lock.
	t.core.Mu.Lock()
	if err := t.core.AddLocked(&r.ID, cl); err != nil {
		t.core.Mu.Unlock()
		cancel(nil)
		return nil, err
	}
	cl.id = r.ID
	t.core.Mu.Unlock()
	body, err := jsonrpc.Encode(&r)
	if err != nil {
		cancel(nil)
		t.core.Remove(cl.id, cl)
		return nil, &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeInvalidRequest, Message: "cannot encode the request", Cause: err}
	}
	var (
		elapsed time.Duration
		started bool
	)
	if cl.prog == nil {
		// Nothing to deliver while waiting: the POST is sent, and a JSON
		// answer read, in the caller's goroutine.
		elapsed, started = t.inline(ctx, sctx, cl, body, h, modern, opts.Timeout)
	} else {
		// Progress goes to the caller while the answer is read.
		started = t.goTracked(func() { t.roundTrip(sctx, cl, body, h, modern) })
	}
	if !started {
		cancel(nil)
		t.core.Remove(cl.id, cl)
		return nil, t.Err()
	}

	resp, err := await(ctx, cl, opts, elapsed, t.done,
		func(reason string) { t.abort(cl, h, modern, reason) },
		func() { t.core.Remove(cl.id, cl) }, t.Err)
	// The response may have come on another stream (a resumed one, the GET
	// stream): this request's own stream has nothing more to say.
	cancel(nil)
	if opts.OnResponseHeaders != nil {
		if hs := cl.headers(); hs != nil {
			opts.OnResponseHeaders(hs)
		}
	}
	return resp, err
}

// errGaveUp cancels the exchange of a caller whose context ended or whose
// timeout passed while it ran in the caller's goroutine (inline): await
// then says which, and cancels the request on the server.
var errGaveUp = errors.New("http: the caller stopped waiting")

// inline runs cl's exchange in the caller's goroutine, as one of the
// transport's goroutines that Close waits for: the POST, and the reading of
// a JSON answer, which settles cl. An SSE answer's stream is handed to a
// goroutine of its own, as roundTrip reads it. The caller's context and
// timeout interrupt the exchange (with errGaveUp); elapsed is how much of
// the timeout it used, for await. started is false, and nothing sent, once
// the transport has stopped.
//
// A fresh goroutine per request would grow its stack anew each time
// through net/http's client, a good part of the CPU of a small call; the
// caller's has grown already.
func (t *Transport) inline(ctx, sctx context.Context, cl *call, body []byte, h nethttp.Header, modern bool, timeout time.Duration) (elapsed time.Duration, started bool) {
	if !t.enter() {
		return 0, false
	}
	defer t.wg.Done()
	var begin time.Time
	if timeout > 0 {
		begin = time.Now()
		tm := time.AfterFunc(timeout, func() { cl.cancel(errGaveUp) })
		defer tm.Stop()
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() { cl.cancel(errGaveUp) })
		defer stop()
	}
	if stream := t.exchange(sctx, cl, body, h); stream != nil {
		read := func() {
			defer cl.cancel(nil)
			t.readCallStream(sctx, cl, stream, h, modern)
		}
		if !t.goTracked(read) {
			stream.Close()
		}
	}
	if timeout > 0 {
		elapsed = time.Since(begin)
	}
	return elapsed, true
}

// requestHeaders returns the protocol headers of one message.
func (t *Transport) requestHeaders(req *jsonrpc.Request, d, e transport.PolicySource, extra []transport.Header) nethttp.Header {
	h := make(nethttp.Header, 4+len(extra))
	if d != nil {
		for _, x := range d.TransportPolicy(req).Headers {
			h[canonicalKey(x.Name)] = []string{x.Value}
		}
	}
	if e != nil {
		for _, x := range e.TransportPolicy(req).Headers {
			h[canonicalKey(x.Name)] = []string{x.Value}
		}
	}
	for _, x := range extra {
		h[canonicalKey(x.Name)] = []string{x.Value}
	}
	return h
}

// The canonical forms of the protocol's header names that are not
// canonical as spelt.
var canonProtocolVersion = textproto.CanonicalMIMEHeaderKey(transport.HeaderProtocolVersion)

// canonicalKey returns name as nethttp.Header.Set would key it: the
// protocol's own header names come canonical already, instead of being
// canonicalised (MCP-Protocol-Version: a new string) per request.
func canonicalKey(name string) string {
	switch name {
	case transport.HeaderProtocolVersion:
		return canonProtocolVersion
	case transport.HeaderSessionID, transport.HeaderMethod, transport.HeaderName:
		return name
	}
	return textproto.CanonicalMIMEHeaderKey(name)
}

// isModern reports whether headers h belong to the 2026-07-28 era.
func isModern(h nethttp.Header) bool {
	v := h[canonProtocolVersion]
	return len(v) > 0 && v[0] != "" && v[0] >= modernVersion
}

// baseHeaders keeps, of a request's headers, those that describe the
// connection rather than the request (version and session), for the
// messages sent on its behalf: answers, cancellations, resumptions.
func baseHeaders(h nethttp.Header) nethttp.Header {
	b := make(nethttp.Header, 2)
	for _, name := range []string{canonProtocolVersion, transport.HeaderSessionID} {
		if v := h[name]; len(v) > 0 && v[0] != "" {
			b[name] = []string{v[0]}
		}
	}
	return b
}

// do sends one HTTP request. body nil means none. The request's body is
// replayable (GetBody is set), for an authorizing RoundTripper that
// retries. The request is built from the URL parsed at New (a copy of it,
// which a RoundTripper may not share with the next request) and headers
// already in canonical form, as nethttp.NewRequestWithContext would build
// it, without parsing the URL again.
func (t *Transport) do(ctx context.Context, method string, body []byte, h nethttp.Header, lastEventID string) (*nethttp.Response, error) {
	u := new(url.URL)
	*u = *t.url
	hdr := make(nethttp.Header, len(t.header)+len(h)+2)
	for name, values := range t.header {
		hdr[name] = append([]string(nil), values...)
	}
	for name, values := range h {
		hdr[name] = values
	}
	switch method {
	case nethttp.MethodPost:
		hdr["Accept"] = acceptPost[:1:1]
		hdr["Content-Type"] = contentTypeJSON[:1:1]
	case nethttp.MethodGet:
		hdr["Accept"] = acceptSSE[:1:1]
	}
	if lastEventID != "" {
		hdr["Last-Event-Id"] = []string{lastEventID}
	}
	tmpl := nethttp.Request{
		Method:     method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     hdr,
		Host:       u.Host,
	}
	if body != nil {
		tmpl.ContentLength = int64(len(body))
		tmpl.Body = nethttp.NoBody
		tmpl.GetBody = noBody
		if len(body) > 0 {
			tmpl.Body = io.NopCloser(bytes.NewReader(body))
			tmpl.GetBody = func() (io.ReadCloser, error) {
				return io.NopCloser(bytes.NewReader(body)), nil
			}
		}
	}
	resp, err := t.client.Do(tmpl.WithContext(ctx))
	// The error names the URL, whose query may hold a credential.
	return resp, redact.Error(err)
}

// The values of the fixed request headers, shared by every request with a
// capacity of their length: an append by a RoundTripper copies them.
var (
	acceptPost      = []string{"application/json, text/event-stream"}
	acceptSSE       = []string{"text/event-stream"}
	contentTypeJSON = []string{"application/json"}
)

func noBody() (io.ReadCloser, error) { return nethttp.NoBody, nil }

// mediaType returns the media type of h's Content-Type, lowercase, or ""
// when it is missing or not valid.
func mediaType(h nethttp.Header) string {
	v := h["Content-Type"]
	if len(v) == 0 {
		return ""
	}
	// The usual answers, without parameters, need no parsing.
	switch v[0] {
	case "application/json":
		return "application/json"
	case "text/event-stream":
		return "text/event-stream"
	}
	mt, _, err := mime.ParseMediaType(v[0])
	if err != nil {
		return ""
	}
	return mt
}

// roundTrip POSTs a request and reads its answer, delivering the outcome
// to cl unless cl was given up first.
func (t *Transport) roundTrip(sctx context.Context, cl *call, body []byte, h nethttp.Header, modern bool) {
	defer cl.cancel(nil)
	if stream := t.exchange(sctx, cl, body, h); stream != nil {
		t.readCallStream(sctx, cl, stream, h, modern)
	}
}

// exchange POSTs a request and settles cl with its answer: a JSON body, a
// failure status. An SSE stream's body is returned instead, for
// readCallStream, which closes it. A failure after cl was given up (its
// stream's context cancelled while the transport runs) settles nothing:
// whoever gave it up answers the caller.
func (t *Transport) exchange(sctx context.Context, cl *call, body []byte, h nethttp.Header) (stream io.ReadCloser) {
	resp, err := t.do(sctx, nethttp.MethodPost, body, h, "")
	if err != nil {
		t.settleFailed(sctx, cl, "POST failed", err)
		return nil
	}
	cl.setHeaders(resp.Header)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		r, err := t.failure(resp, h, cl.id, true)
		t.settle(cl, outcome{resp: r, err: err})
		return nil
	}
	switch mediaType(resp.Header) {
	case "text/event-stream":
		return resp.Body
	case "application/json":
		defer resp.Body.Close()
		data, err := readBody(resp, t.maxMsg)
		if err != nil {
			t.settleFailed(sctx, cl, "reading the response failed", err)
			return nil
		}
		msg, err := jsonrpc.Decode(data)
		if err != nil {
			// The decoder's error quotes the body: only its capped, escaped
			// text goes into the error.
			t.settle(cl, outcome{err: transport.ConnectionError("the response body is not a JSON-RPC message: "+capText(data), errors.New(capString(safetext.Escape(err.Error(), false))))})
			return nil
		}
		r, ok := msg.(*jsonrpc.Response)
		if !ok || (r.ID != cl.id && r.ID.IsValid()) {
			t.settle(cl, outcome{err: transport.ConnectionError("the response body is not the response to the request: "+capText(data), nil)})
			return nil
		}
		r.ID = cl.id
		t.settle(cl, outcome{resp: r})
	default:
		defer resp.Body.Close()
		data, _ := readBounded(resp.Body, errorBodyCap)
		what := fmt.Sprintf("the server answered the request with HTTP %d and Content-Type %q", resp.StatusCode, safetext.Escape(capString(resp.Header.Get("Content-Type")), false))
		if len(bytes.TrimSpace(data)) == 0 {
			what = fmt.Sprintf("the server answered the request with HTTP %d and no response", resp.StatusCode)
		}
		t.settle(cl, outcome{err: transport.ConnectionError(what, &transport.StatusError{Status: resp.StatusCode, Body: capText(data)})})
	}
	return nil
}

// settleFailed settles cl with the -32000 error of a failed exchange,
// unless cl was given up (its stream's context cancelled while the
// transport runs): its caller is answered by whoever gave it up.
func (t *Transport) settleFailed(sctx context.Context, cl *call, msg string, err error) {
	if sctx.Err() != nil && t.life.Err() == nil {
		return
	}
	t.settle(cl, outcome{err: t.connError(sctx, msg, err)})
}

// settle delivers the outcome of cl once, if cl is still waiting.
func (t *Transport) settle(cl *call, o outcome) {
	if t.core.Remove(cl.id, cl) {
		cl.result <- o
	}
}

// connError is the -32000 error of a failed exchange; after Close, the
// transport's own error.
func (t *Transport) connError(ctx context.Context, msg string, err error) error {
	if t.life.Err() != nil {
		return t.Err()
	}
	if errors.Is(err, ErrTooLarge) {
		return transport.ConnectionError(msg, err)
	}
	return transport.ConnectionError(msg+": "+safetext.Escape(err.Error(), false), err)
}

// failure turns a failure status into the request's outcome: a JSON-RPC
// error response in the body is returned as the response; otherwise a
// -32000 error wrapping a *transport.StatusError. refused says the status
// answers the message itself (its POST), not the resumption of a stream:
// a 404 for the session then also wraps transport.ErrNotDelivered.
func (t *Transport) failure(resp *nethttp.Response, h nethttp.Header, id jsonrpc.ID, refused bool) (*jsonrpc.Response, error) {
	data, _ := readBounded(resp.Body, t.maxMsg)
	se := &transport.StatusError{Status: resp.StatusCode, Body: capText(data)}
	switch resp.StatusCode {
	case nethttp.StatusUnauthorized, nethttp.StatusForbidden:
		se.WWWAuthenticate = capString(safetext.Escape(resp.Header.Get("WWW-Authenticate"), false))
		return nil, transport.ConnectionError(fmt.Sprintf("the server refused the request: HTTP %d %s", resp.StatusCode, nethttp.StatusText(resp.StatusCode)), se)
	case nethttp.StatusNotFound:
		if h.Get(transport.HeaderSessionID) != "" {
			var cause error = fmt.Errorf("%w: %w", ErrSessionExpired, se)
			if refused {
				cause = undelivered{cause}
			}
			return nil, transport.ConnectionError("the session has expired: HTTP 404 for its Mcp-Session-Id", cause)
		}
	}
	if msg, err := jsonrpc.Decode(data); err == nil {
		if r, ok := msg.(*jsonrpc.Response); ok && r.Error != nil {
			r.ID = id
			return r, nil
		}
	}
	return nil, transport.ConnectionError(fmt.Sprintf("the server answered HTTP %d %s", resp.StatusCode, nethttp.StatusText(resp.StatusCode)), se)
}

// undelivered marks its error with transport.ErrNotDelivered, adding no
// text.
type undelivered struct{ error }

func (u undelivered) Unwrap() error { return u.error }

func (u undelivered) Is(target error) bool { return target == transport.ErrNotDelivered }

// readBounded reads r to its end, failing with ErrTooLarge past max bytes.
func readBounded(r io.Reader, max int) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > max {
		return data[:max], fmt.Errorf("%w (%d bytes)", ErrTooLarge, max)
	}
	return data, nil
}

// presizeMax is the largest Content-Length readBody allocates for before
// the bytes arrive: a server declaring 16 MiB and sending nothing would
// otherwise make each request allocate 16 MiB for free. Larger bodies
// grow the buffer as they come.
const presizeMax = 64 << 10

// readBody is readBounded of resp's body into one buffer sized by its
// Content-Length, when that is given and at most presizeMax and max,
// instead of a buffer grown as it fills. Past the declared length (which
// net/http does not let through) it reads on as readBounded does.
func readBody(resp *nethttp.Response, max int) ([]byte, error) {
	n := resp.ContentLength
	if n < 0 || n > int64(min(max, presizeMax)) {
		return readBounded(resp.Body, max)
	}
	buf := make([]byte, 0, n+1) // + the read that sees the end
	for len(buf) < cap(buf) {
		m, err := resp.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	if len(buf) > max {
		return buf[:max], fmt.Errorf("%w (%d bytes)", ErrTooLarge, max)
	}
	rest, err := readBounded(resp.Body, max-len(buf))
	buf = append(buf, rest...)
	if errors.Is(err, ErrTooLarge) {
		return buf, fmt.Errorf("%w (%d bytes)", ErrTooLarge, max)
	}
	return buf, err
}

// capText returns the start of a server's text, escaped, for an error.
func capText(b []byte) string {
	b = bytes.TrimSpace(b)
	cut := len(b) > errorBodyCap
	if cut {
		b = b[:errorBodyCap]
	}
	return capString(safetext.Escape(string(b), false), cut)
}

// capString cuts s to errorBodyCap bytes, on a rune boundary, marking a
// cut (or an earlier one) with an ellipsis.
func capString(s string, cut ...bool) string {
	if len(s) > errorBodyCap {
		n := errorBodyCap
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return s[:n] + "…"
	}
	if len(cut) > 0 && cut[0] {
		return s + "…"
	}
	return s
}

// readCallStream reads a request's SSE stream until its response; in the
// initialize era a stream that breaks first is resumed with GET and
// Last-Event-ID.
func (t *Transport) readCallStream(sctx context.Context, cl *call, body io.ReadCloser, h nethttp.Header, modern bool) {
	sr := newSSEReader(body, t.maxMsg)
	defer func() { body.Close() }()
	resumes := 0
	opened := time.Now()
	for {
		done, events, err := t.pump(sr, cl, h)
		if done || sctx.Err() != nil {
			return
		}
		if errors.Is(err, errEventTooLarge) {
			t.settle(cl, outcome{err: transport.ConnectionError("an event of the response stream is too large", fmt.Errorf("%w: %w", ErrTooLarge, err))})
			return
		}
		if modern {
			t.settle(cl, outcome{err: t.connError(sctx, "the response stream ended before the response", streamEnd(err))})
			return
		}
		if !sr.sawID {
			t.settle(cl, outcome{err: t.connError(sctx, "the response stream ended before the response, without an event ID to resume from", streamEnd(err))})
			return
		}
		if events > 0 && time.Since(opened) >= progressSpan {
			resumes = 0
		}
		for {
			resumes++
			if resumes > maxResumes {
				t.settle(cl, outcome{err: t.connError(sctx, fmt.Sprintf("the response stream could not be resumed after %d attempts", maxResumes), streamEnd(err))})
				return
			}
			if !sleep(sctx, retryDelay(sr.retry)) {
				return
			}
			resp, gerr := t.do(sctx, nethttp.MethodGet, nil, baseHeaders(h), sr.lastID)
			if gerr != nil {
				if sctx.Err() != nil {
					return
				}
				err = gerr
				continue
			}
			if resp.StatusCode < 200 || resp.StatusCode > 299 || mediaType(resp.Header) != "text/event-stream" {
				r, ferr := t.failure(resp, baseHeaders(h), cl.id, false)
				resp.Body.Close()
				if ferr == nil {
					ferr = transport.ConnectionError("resuming the response stream failed: "+capString(safetext.Escape(r.Error.Message, false)), r.Error)
				} else if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
					ferr = transport.ConnectionError("resuming the response stream failed: the server did not answer with an SSE stream", nil)
				}
				t.settle(cl, outcome{err: ferr})
				return
			}
			body.Close()
			body = resp.Body
			sr = sr.resumed(resp.Body)
			opened = time.Now()
			break
		}
	}
}

// resumed returns a reader for the body of a resumed stream, keeping the
// event ID and retry time.
func (r *sseReader) resumed(body io.Reader) *sseReader {
	n := newSSEReader(body, r.max)
	n.lastID, n.sawID, n.retry = r.lastID, r.sawID, r.retry
	n.idBuf, n.idBufSet = r.idBuf, r.idBufSet
	return n
}

func streamEnd(err error) error {
	if err == nil {
		return io.EOF
	}
	return err
}

func retryDelay(d time.Duration) time.Duration {
	if d == 0 {
		return defaultRetry
	}
	return min(max(d, minRetry), maxRetry)
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// pump dispatches the events of an SSE stream until owner's response (done)
// or the stream's end (err, io.EOF for a clean end). owner nil reads the
// whole stream. events counts the messages read.
func (t *Transport) pump(sr *sseReader, owner *call, h nethttp.Header) (done bool, events int, err error) {
	for {
		ev, err := sr.next()
		if err != nil {
			return false, events, err
		}
		if ev.typ != "" && ev.typ != "message" {
			continue
		}
		if len(bytes.TrimSpace(ev.data)) == 0 {
			continue
		}
		events++
		msg, derr := jsonrpc.Decode(ev.data)
		if derr != nil {
			continue // not a message: the request it answered times out
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			if owner != nil && m.ID == owner.id {
				t.settle(owner, outcome{resp: m})
				return true, events, nil
			}
			t.routeResponse(m)
		case *jsonrpc.Request:
			t.serverRequest(m, h, owner)
		case *jsonrpc.Notification:
			t.core.RouteNotification(m)
		}
	}
}

// routeResponse delivers a response that arrived on another request's
// stream (or the GET stream) to its request or listen.
func (t *Transport) routeResponse(r *jsonrpc.Response) {
	cl, ok, ls := t.core.TakeResponse(r)
	switch {
	case ok:
		cl.result <- outcome{resp: r}
		// Its own POST has nothing more to say; a caller waiting in it
		// (inline) returns.
		cl.cancel(nil)
	case ls != nil:
		ls.Respond(r)
	}
}

// await waits for cl's outcome, delivering its progress; giving up, it
// aborts cl with abort's reason. elapsed is how much of the timeout has
// passed already (the exchange ran in the caller's goroutine). done is the
// transport's end, after which forget drops cl and ended says why.
func await(ctx context.Context, cl *call, opts transport.RequestOptions, elapsed time.Duration, done <-chan struct{}, abort func(reason string), forget func(), ended func() error) (*jsonrpc.Response, error) {
	var pol rpc.Await // the timeout, its reset by progress, the delivery
	pol.Start(&opts, cl.prog)
	select {
	case o := <-cl.result: // settled already: no timer
		if err := pol.Deliver(); err != nil {
			return nil, err
		}
		return o.resp, o.err
	default:
	}
	var (
		timer  *time.Timer
		timerC <-chan time.Time
	)
	arm := func() {
		d, ok := pol.Next()
		if !ok {
			return
		}
		d, elapsed = d-elapsed, 0
		if timer == nil {
			timer = time.NewTimer(d)
			timerC = timer.C
		} else {
			timer.Reset(d)
		}
	}
	arm()
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case o := <-cl.result:
			if err := pol.Deliver(); err != nil {
				return nil, err
			}
			return o.resp, o.err
		case <-pol.Ready():
			if err := pol.Deliver(); err != nil {
				abort(rpc.ProgressFailed(err))
				return nil, err
			}
			if pol.ResetOnProgress() {
				arm()
			}
		case <-timerC:
			err := pol.TimeoutError()
			abort(err.Message)
			return nil, err
		case <-ctx.Done():
			err := transport.ContextError(ctx)
			abort(err.Message)
			return nil, err
		case <-done:
			select {
			case o := <-cl.result:
				return o.resp, o.err
			default:
			}
			forget()
			return nil, ended()
		}
	}
}

// abort gives up on cl: its stream is closed, which in the 2026-07-28 era
// is the cancellation; in the initialize era the server is also sent
// notifications/cancelled (never for initialize, which cannot be
// cancelled).
func (t *Transport) abort(cl *call, h nethttp.Header, modern bool, reason string) {
	t.core.Remove(cl.id, cl)
	cl.cancel(errors.New(reason))
	if modern || cl.method == "initialize" {
		return
	}
	body, err := jsonrpc.Encode(rpc.Cancelled(cl.id, reason))
	if err != nil {
		return
	}
	bh := baseHeaders(h)
	t.goTracked(func() {
		ctx, cancel := context.WithTimeout(t.life, cancelTimeout)
		defer cancel()
		if resp, err := t.do(ctx, nethttp.MethodPost, body, bh, ""); err == nil {
			drain(resp)
		}
	})
}

// drain reads a little of an unwanted body and closes it.
func drain(resp *nethttp.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
}
