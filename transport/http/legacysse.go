package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/url"
	"strings"

	"github.com/snodo/snodo/internal/redact"
	"github.com/snodo/snodo/internal/safetext"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/internal/rpc"
)

// ErrNoEndpoint is the cause of the error of DialSSE when the server's SSE
// stream does not begin with an endpoint event.
var ErrNoEndpoint = errors.New("http: the SSE stream did not begin with an endpoint event")

// ErrCrossOriginEndpoint is the cause of the error of DialSSE when the
// server's endpoint event names a message endpoint of another origin
// (scheme, host or port) than the SSE URL, or one with user information:
// nothing is POSTed there.
var ErrCrossOriginEndpoint = errors.New("http: the SSE endpoint event names another origin")

// ErrStreamEnded is the cause of the error of the requests in flight, and
// of every later one, once the SSE stream of an SSE transport has ended:
// the HTTP+SSE transport has no resumption.
var ErrStreamEnded = errors.New("http: the SSE stream ended")

// SSE is a client's connection to a server that speaks only the HTTP+SSE
// transport of protocol 2024-11-05, which Streamable HTTP replaced
// (basic/transports, "Backwards Compatibility"): one GET opens an SSE
// stream whose first event, endpoint, names the URL to POST messages to;
// each message is POSTed there (the server answers 202), and every
// response, server request and notification arrives as a message event of
// the one stream. It carries the initialize era only. It is safe for
// concurrent use.
//
// Requests, progress, cancellation, server requests and subscriptions go
// through the same call core as the other transports; Config.HTTPClient
// and Config.Header (an OAuth client, an Authorization header) apply to
// the GET and to every POST, and redirects stay within the origin, as for
// Transport. The stream's events, and its lines, are bounded by
// Config.MaxMessageBytes.
//
// When the stream ends, for whatever reason, the transport stops: every
// request in flight, and every later one, fails with a -32000 error that
// wraps ErrStreamEnded and names the cause. The old transport has no way
// to resume a stream; a new connection starts with DialSSE and initialize.
type SSE struct {
	url  string // the SSE endpoint (GET)
	post string // the message endpoint (POST), set once by DialSSE
	base
}

// Compile-time checks of the capabilities SSE offers.
var (
	_ transport.Transport = (*SSE)(nil)
	_ transport.Notifier  = (*SSE)(nil)
	_ transport.Listener  = (*SSE)(nil)
	_ transport.Inbound   = (*SSE)(nil)
)

// DialSSE opens the SSE stream at cfg.URL and waits, under ctx, for its
// endpoint event. It fails with a -32000 error when the GET fails or is
// refused (wrapping a *transport.StatusError), when the answer is not an
// SSE stream, when the first event is not endpoint (wrapping
// ErrNoEndpoint), and when the endpoint is not a URL of cfg.URL's origin
// (wrapping ErrCrossOriginEndpoint). ctx bounds the wait only: give it a
// deadline, since a server may send nothing.
func DialSSE(ctx context.Context, cfg Config) (*SSE, error) {
	u, err := cfg.check()
	if err != nil {
		return nil, err
	}
	s := &SSE{url: u.String()}
	s.init(cfg)
	ready := make(chan error, 1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.read(ready)
	}()
	select {
	case err = <-ready:
	case <-ctx.Done():
		ce := transport.ContextError(ctx)
		ce.Message = "no endpoint event on the SSE stream of " + redact.URL(s.url) + " in time: " + ce.Message
		err = ce
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Endpoint returns the message endpoint the server named, redacted.
func (s *SSE) Endpoint() string { return redact.URL(s.post) }

// read opens the stream, reports its endpoint (or the failure) on ready,
// then dispatches its messages until it ends, which stops the transport.
func (s *SSE) read(ready chan<- error) {
	resp, err := s.do(s.life, nethttp.MethodGet, s.url, nil)
	if err != nil {
		ready <- s.connError("GET of the SSE stream failed", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		ready <- s.refused(resp, "the GET of the SSE stream")
		return
	}
	if mt := mediaType(resp.Header); mt != "text/event-stream" {
		ready <- transport.ConnectionError(fmt.Sprintf("the server answered the GET of %s with Content-Type %q, not an SSE stream (text/event-stream): it does not serve the HTTP+SSE transport (2024-11-05) there", redact.URL(s.url), safetext.Escape(capString(resp.Header.Get("Content-Type")), false)), nil)
		return
	}
	sr := newSSEReader(resp.Body, s.maxMsg)
	ev, err := sr.next()
	if err != nil {
		if s.life.Err() != nil {
			ready <- s.Err()
		} else if errors.Is(err, errEventTooLarge) {
			ready <- transport.ConnectionError("the first event of the SSE stream is too large", fmt.Errorf("%w: %w", ErrTooLarge, err))
		} else {
			ready <- transport.ConnectionError("the SSE stream ended before its endpoint event: "+safetext.Escape(streamEnd(err).Error(), false), fmt.Errorf("%w: %w", ErrNoEndpoint, streamEnd(err)))
		}
		return
	}
	if ev.typ != "endpoint" {
		ready <- transport.ConnectionError(fmt.Sprintf("the first event of the SSE stream is %q, not endpoint: the server does not follow the HTTP+SSE transport (2024-11-05)", safetext.Escape(capString(ev.typ), false)), ErrNoEndpoint)
		return
	}
	if s.post, err = s.endpoint(ev.data); err != nil {
		ready <- err
		return
	}
	ready <- nil

	for {
		ev, err := sr.next()
		if err != nil {
			what := "the SSE stream ended: " + safetext.Escape(streamEnd(err).Error(), false)
			if errors.Is(err, errEventTooLarge) {
				what = "an event of the SSE stream is too large"
				err = fmt.Errorf("%w: %w", ErrTooLarge, err)
			}
			s.stop(transport.ConnectionError(what+"; the HTTP+SSE transport cannot resume it, so its calls in flight fail", fmt.Errorf("%w: %w", ErrStreamEnded, streamEnd(err))))
			return
		}
		if (ev.typ != "" && ev.typ != "message") || len(bytes.TrimSpace(ev.data)) == 0 {
			continue // another endpoint event among them: the first one stands
		}
		msg, err := jsonrpc.Decode(ev.data)
		if err != nil {
			continue // not a message: the request it answered times out
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			switch cl, ok, ls := s.core.TakeResponse(m); {
			case ok:
				cl.result <- outcome{resp: m}
			case ls != nil:
				ls.Respond(m)
			}
		case *jsonrpc.Request:
			s.serverRequest(m)
		case *jsonrpc.Notification:
			s.core.RouteNotification(m)
		}
	}
}

// endpoint resolves the data of the endpoint event against the SSE URL and
// checks that it stays within its origin.
func (s *SSE) endpoint(data []byte) (string, error) {
	raw := string(bytes.TrimSpace(data))
	base, _ := url.Parse(s.url)
	ref, err := url.Parse(raw)
	if raw == "" || err != nil {
		return "", transport.ConnectionError("the endpoint event of the SSE stream is not a URL: "+capText(data), ErrNoEndpoint)
	}
	u := base.ResolveReference(ref)
	u.Fragment, u.RawFragment = "", ""
	if !sameOrigin(base, u) || u.User != nil {
		return "", transport.ConnectionError(fmt.Sprintf("the SSE stream of %s names %s as its message endpoint: messages, and the configured headers and credentials, go only to the origin (scheme, host and port) of the URL given; if the server is to be reached there, give that URL",
			origin(base), redact.URL(strings.ToValidUTF8(u.Redacted(), "\uFFFD"))), ErrCrossOriginEndpoint)
	}
	return u.String(), nil
}

// do sends one HTTP request to target: a GET of the stream, or a POST of a
// message (body). Config.Header goes with each.
func (s *SSE) do(ctx context.Context, method, target string, body []byte) (*nethttp.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := nethttp.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, redact.Error(err)
	}
	for name, values := range s.header {
		req.Header[name] = append([]string(nil), values...)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	} else {
		req.Header.Set("Accept", "text/event-stream")
	}
	resp, err := s.client.Do(req)
	// The error names the URL, whose query may hold a credential (the
	// message endpoint's usually holds the session).
	return resp, redact.Error(err)
}

// postMessage POSTs one message to the message endpoint. It returns the
// failure status as the server's JSON-RPC error response when its body is
// one, and otherwise as a -32000 error.
func (s *SSE) postMessage(ctx context.Context, body []byte, what string) (*jsonrpc.Response, error) {
	resp, err := s.do(ctx, nethttp.MethodPost, s.post, body)
	if err != nil {
		return nil, s.connError("POST of "+what+" failed", err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		drain(resp)
		return nil, nil
	}
	defer resp.Body.Close()
	data, _ := readBounded(resp.Body, s.maxMsg)
	if msg, err := jsonrpc.Decode(data); err == nil {
		if r, ok := msg.(*jsonrpc.Response); ok && r.Error != nil {
			return r, nil
		}
	}
	return nil, s.statusError(resp, data, "the POST of "+what)
}

// refused is the error of a failure status to the GET.
func (s *SSE) refused(resp *nethttp.Response, what string) error {
	data, _ := readBounded(resp.Body, errorBodyCap)
	return s.statusError(resp, data, what)
}

func (s *SSE) statusError(resp *nethttp.Response, data []byte, what string) error {
	se := &transport.StatusError{Status: resp.StatusCode, Body: capText(data)}
	if resp.StatusCode == nethttp.StatusUnauthorized || resp.StatusCode == nethttp.StatusForbidden {
		se.WWWAuthenticate = capString(safetext.Escape(resp.Header.Get("WWW-Authenticate"), false))
	}
	return transport.ConnectionError(fmt.Sprintf("the server answered %s with HTTP %d %s", what, resp.StatusCode, nethttp.StatusText(resp.StatusCode)), se)
}

// connError is the -32000 error of a failed exchange; once stopped, the
// transport's own error.
func (s *SSE) connError(msg string, err error) error {
	if s.life.Err() != nil {
		return s.Err()
	}
	return transport.ConnectionError(msg+": "+safetext.Escape(err.Error(), false), err)
}

// Request implements transport.Transport: it POSTs req to the message
// endpoint and waits for its response on the SSE stream. req is not
// modified; a zero req.ID is replaced by a fresh integer ID. Progress
// for opts.ProgressToken (or the token in params) is given to
// opts.OnProgress in the caller's goroutine. The header options
// (Dialect, Extension, Headers, OnResponseHeaders) do not apply: the
// transport has no per-message headers.
//
// A request given up (opts.Timeout, ctx, a failing progress function) is
// cancelled on the server with a POST of notifications/cancelled. A
// failure status to the POST fails the request: with the server's JSON-RPC
// error response when its body is one, otherwise with a -32000 error
// wrapping a *transport.StatusError.
func (s *SSE) Request(ctx context.Context, req *jsonrpc.Request, opts transport.RequestOptions) (*jsonrpc.Response, error) {
	r := *req
	cl := &call{method: r.Method, result: make(chan outcome, 1)}
	cl.token, cl.prog = rpc.Progress(&opts, r.Params, s.maxMsg)
	s.core.Mu.Lock()
	if err := s.core.AddLocked(&r.ID, cl); err != nil {
		s.core.Mu.Unlock()
		return nil, err
	}
	cl.id = r.ID
	s.core.Mu.Unlock()
	body, err := jsonrpc.Encode(&r)
	if err != nil {
		s.forget(cl)
		return nil, &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeInvalidRequest, Message: "cannot encode the request", Cause: err}
	}
	// The POST ends with the transport, or when the caller gives the
	// call up (abort): a server that never answers it holds nothing.
	var pctx context.Context
	pctx, cl.cancel = context.WithCancelCause(s.life)
	if !s.goTracked(func() {
		defer cl.cancel(nil)
		resp, err := s.postMessage(pctx, body, r.Method)
		if resp != nil || err != nil {
			if resp != nil {
				resp.ID = cl.id
			}
			s.settle(cl, outcome{resp: resp, err: err})
		}
	}) {
		cl.cancel(nil)
		s.forget(cl)
		return nil, s.Err()
	}
	return await(ctx, cl, opts, 0, s.done,
		func(reason string) { s.abort(cl, reason) },
		func() { s.forget(cl) }, s.Err)
}

// abort gives up on cl, ending its POST if the server has not answered
// it, and tells the server with a POST of notifications/cancelled (never for initialize, which cannot be
// cancelled).
func (s *SSE) abort(cl *call, reason string) {
	s.forget(cl)
	cl.cancel(errors.New(reason))
	if cl.method != "initialize" {
		s.sendCancelled(cl.id, reason)
	}
}

// sendCancelled POSTs notifications/cancelled for id in the background.
func (s *SSE) sendCancelled(id jsonrpc.ID, reason string) {
	body, err := jsonrpc.Encode(rpc.Cancelled(id, reason))
	if err != nil {
		return
	}
	s.goTracked(func() {
		ctx, cancel := context.WithTimeout(s.life, cancelTimeout)
		defer cancel()
		_, _ = s.postMessage(ctx, body, rpc.MethodCancelled)
	})
}

// settle delivers the outcome of cl once, if cl is still waiting.
func (s *SSE) settle(cl *call, o outcome) {
	s.core.Mu.Lock()
	mine := s.core.RemoveLocked(cl.id, cl)
	s.core.Mu.Unlock()
	if mine {
		cl.result <- o
	}
}

// forget removes cl from the call table, if it is still there.
func (s *SSE) forget(cl *call) {
	s.core.Mu.Lock()
	s.core.RemoveLocked(cl.id, cl)
	s.core.Mu.Unlock()
}

// Notify implements transport.Notifier: it POSTs n to the message endpoint
// and waits up to opts.Timeout for the server to accept it (any 2xx). A
// failure status is an error: the JSON-RPC error of its body, or a -32000
// error wrapping a *transport.StatusError.
func (s *SSE) Notify(ctx context.Context, n *jsonrpc.Notification, opts transport.NotifyOptions) error {
	if err := s.Err(); err != nil {
		return err
	}
	body, err := jsonrpc.Encode(n)
	if err != nil {
		return &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeInvalidRequest, Message: "cannot encode the notification", Cause: err}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer context.AfterFunc(s.life, cancel)()
	if opts.Timeout > 0 {
		var tcancel context.CancelFunc
		ctx, tcancel = context.WithTimeout(ctx, opts.Timeout)
		defer tcancel()
	}
	defer cancel()
	resp, err := s.postMessage(ctx, body, n.Method)
	switch {
	case s.life.Err() != nil:
		return s.Err()
	case err != nil && ctx.Err() == context.DeadlineExceeded && opts.Timeout > 0:
		return transport.TimeoutError(opts.Timeout)
	case err != nil && ctx.Err() != nil:
		return transport.ContextError(ctx)
	case err != nil:
		return err
	case resp != nil:
		return resp.Error
	}
	return nil
}

// Listen implements transport.Listener on the one stream: it POSTs req,
// a subscriptions/listen request, and waits up to opts.Timeout for the
// server's notifications/subscriptions/acknowledged naming its ID. The
// subscription receives the notifications carrying that ID, and ends as
// stdio's does (see stdio.Conn.Listen); closing it, or ctx ending, POSTs
// notifications/cancelled.
func (s *SSE) Listen(ctx context.Context, req *jsonrpc.Request, opts transport.ListenOptions) (filter json.RawMessage, sub *transport.Subscription, err error) {
	r := *req
	if !r.ID.IsValid() {
		r.ID = s.core.NewID()
	}
	ls := rpc.NewListen(ctx, r.ID, opts, func(ls *rpc.Listen) error {
		s.core.RemoveListen(ls)
		if err := s.Err(); err != nil {
			return err
		}
		s.sendCancelled(ls.ID(), "subscription closed")
		return nil
	})
	s.core.Mu.Lock()
	err = s.core.AddListenLocked(ls)
	s.core.Mu.Unlock()
	var refusal *jsonrpc.Response
	if err == nil {
		body, eerr := jsonrpc.Encode(&r)
		if eerr != nil {
			err = &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeInvalidRequest, Message: "cannot encode the request", Cause: eerr}
		} else {
			pctx, cancel := context.WithCancel(ctx)
			stop := context.AfterFunc(s.life, cancel)
			refusal, err = s.postMessage(pctx, body, r.Method)
			stop()
			cancel()
		}
	}
	if err == nil && refusal != nil {
		e := *refusal.Error
		e.Kind = jsonrpc.KindServer
		err = &e
	}
	if err != nil {
		s.core.RemoveListen(ls)
		ls.Finish(err)
		return nil, nil, err
	}
	return ls.Wait(ctx, opts.Timeout, s.done, s.Err, func(error) { s.core.RemoveListen(ls) })
}

// serverRequest hands a request from the server to the dispatcher, and
// answers it with a POST of the response.
func (s *SSE) serverRequest(req *jsonrpc.Request) {
	sr, dispatch := s.core.StartServerRequest(s.life, req)
	if sr == nil {
		return // the transport has stopped
	}
	work := dispatch(sr.Ctx, req, s.core.Reply(sr, func(resp *jsonrpc.Response) {
		body := rpc.EncodeAnswer(resp)
		send := func() {
			ctx, cancel := context.WithTimeout(s.life, answerTimeout)
			defer cancel()
			_, _ = s.postMessage(ctx, body, "an answer")
		}
		s.answer(send)
	}))
	if work != nil {
		go work()
	}
}

// SetInbound implements transport.Inbound: onRequest receives every server
// request of the stream, instead of Config.OnServerRequest; onNotification
// receives the notifications not routed to a request or a subscription.
func (s *SSE) SetInbound(onRequest transport.DispatchFunc, onNotification transport.NotificationFunc) {
	s.core.SetInbound(onRequest, onNotification)
}

// Close stops the transport: requests in flight and later ones fail with a
// -32000 connection error wrapping ErrClosed, the stream is closed,
// subscriptions end with that error, and Close waits for the transport's
// goroutines — so it must not be called from a NotificationFunc or
// DispatchFunc, which run in them.
func (s *SSE) Close() error {
	s.stop(transport.ConnectionError("transport closed", ErrClosed))
	s.wg.Wait()
	s.closeIdle()
	return nil
}

// stop records why the transport stopped, fails what waits, and ends the
// stream and every exchange; it does not wait for the goroutines (the
// stream's reader calls it).
func (s *SSE) stop(err *jsonrpc.Error) { s.halt(err, func() {}) }
