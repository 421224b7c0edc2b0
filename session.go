package snodo

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// session is the Mcp-Session-Id of an initialize-era connection over a
// transport that carries headers, and its renewal: a server may end a
// session at any time, answering 404 to the requests that name it, and the
// client then starts a new one with the handshake of Connect (the same
// initialize params: version offered, capabilities, client info) and
// sends a request refused so once more (streamable-http.mdx, "Session
// Management").
type session struct {
	mu    sync.Mutex
	id    string   // the server's session ID, or ""
	renew *renewal // the renewal under way, or nil

	// initParams and initDialect are those of Connect's initialize,
	// sent again as they were.
	initParams  json.RawMessage
	initDialect dialect
}

// renewal is one start of a new session, shared by every caller whose
// request the old one refused.
type renewal struct {
	done chan struct{}
	err  error // set before done is closed
}

func (s *session) current() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

func (s *session) set(id string) {
	s.mu.Lock()
	s.id = id
	s.mu.Unlock()
}

// sessionRenewalTimeout bounds the handshake of a new session when the
// client's default timeout does not.
const sessionRenewalTimeout = 60 * time.Second

// errSessionGone is the error emulated subscriptions end with when the
// client starts a new session: the server forgot them with the old one.
var errSessionGone = transport.ConnectionError("the server ended the session, and its subscriptions with it; listen again", transport.ErrSessionExpired)

// retryInNewSession reports whether err, the transport's error for a
// request of method, is a refusal for an expired session of a request the
// server did not handle (a 404 to its POST): the one case in which the
// request is sent again, once, in a new session. A request whose stream
// the server had begun, or any other failure, is not sent again.
func retryInNewSession(method string, err error) bool {
	return method != "initialize" && errors.Is(err, transport.ErrSessionExpired) && errors.Is(err, transport.ErrNotDelivered)
}

// renewSession starts a new session in place of stale, the session ID a
// refused request carried, unless another caller already has; callers
// refused at once share one handshake. It runs under the client's life and
// its own bound, not under ctx, which only bounds this caller's wait.
func (c *Client) renewSession(ctx context.Context, stale, method string) error {
	s := &c.session
	s.mu.Lock()
	if s.id != stale {
		s.mu.Unlock() // renewed meanwhile: retry in the new one
		return nil
	}
	r := s.renew
	if r == nil {
		r = &renewal{done: make(chan struct{})}
		s.renew = r
		go c.runRenewal(r, stale, method)
	}
	s.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return transport.ContextError(ctx)
	}
}

func (c *Client) runRenewal(r *renewal, stale, method string) {
	s := &c.session
	timeout := c.cfg.timeout
	if timeout <= 0 {
		timeout = sessionRenewalTimeout
	}
	ctx, cancel := context.WithTimeout(c.life, timeout)
	defer cancel()
	c.debug("the server ended the session (HTTP 404 for its Mcp-Session-Id); starting a new one", "method", method)
	id, err := c.startSession(ctx)
	if err != nil {
		c.debug("starting a new session failed", "error", err)
		err = transport.ConnectionError("the server ended the session, and starting a new one failed", err)
	} else {
		c.debug("new session started; the refused request is sent again once", "method", method)
	}
	s.mu.Lock()
	if err == nil {
		s.id = id
	}
	s.renew = nil
	r.err = err
	s.mu.Unlock()
	close(r.done)
	if err == nil && stale != id {
		// The server forgot the resource subscriptions with the session.
		c.subs.endAll(errSessionGone)
	}
}

// startSession runs the handshake of Connect again, with its initialize
// params, and returns the new session ID. The server must choose the
// protocol version the connection speaks.
func (c *Client) startSession(ctx context.Context) (string, error) {
	n, ok := c.t.(transport.Notifier)
	if !ok {
		return "", protocolError(jsonrpc.CodeInternalError, nil, "the transport cannot send notifications")
	}
	var id string
	resp, err := c.t.Request(ctx, &jsonrpc.Request{Method: "initialize", Params: c.session.initParams}, transport.RequestOptions{
		Timeout: c.cfg.timeout,
		Dialect: c.session.initDialect,
		OnResponseHeaders: func(hs []transport.Header) {
			for _, h := range hs {
				if h.Name == "mcp-session-id" {
					id = h.Value
				}
			}
		},
	})
	if err != nil {
		return "", err
	}
	if resp.Error != nil {
		return "", c.serverError("initialize", resp.Error)
	}
	if id != "" && !validSessionID(id) {
		return "", protocolError(jsonrpc.CodeInternalError, nil,
			"the server issued an Mcp-Session-Id that is not visible ASCII (%d bytes)", len(id))
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := unmarshalOnce(resp.Result, &res); err != nil {
		return "", badResult("initialize", err)
	}
	if v := c.dialect.ProtocolVersion(); res.ProtocolVersion != v {
		return "", protocolError(jsonrpc.CodeUnsupportedProtocolVersion, ErrUnsupportedVersion,
			"the server chose protocol version %q for the new session; the connection speaks %s: connect again", res.ProtocolVersion, v)
	}
	err = n.Notify(ctx, &jsonrpc.Notification{Method: "notifications/initialized", Params: json.RawMessage(`{}`)},
		transport.NotifyOptions{Timeout: c.cfg.timeout, Dialect: c.dialect, Headers: c.dialect.sessionHeaders(id)})
	if err != nil {
		return "", err
	}
	return id, nil
}

// sessionOf returns the session ID among a request's headers.
func sessionOf(hs []transport.Header) string {
	for _, h := range hs {
		if h.Name == transport.HeaderSessionID {
			return h.Value
		}
	}
	return ""
}

// onStreamLost ends the emulated subscriptions when the stream that
// carried the server's notifications ends for good (transport.StreamWatcher):
// they would otherwise wait for ever. Later ones may be opened: the next
// request may start a new session, whose stream carries them.
func (c *Client) onStreamLost(err error) {
	c.debug("the server's notification stream ended", "error", err)
	c.subs.endAll(transport.ConnectionError("the stream that carried the subscription's events ended", err))
}

// debug logs a note to Options.Logger.
func (c *Client) debug(msg string, args ...any) {
	if c.cfg.logger != nil {
		c.cfg.logger.Debug("snodo: "+msg, args...)
	}
}
