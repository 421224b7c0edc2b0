package snodo

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snodo/snodo/internal/subbuf"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// ErrKeepalive is wrapped by the -32000 error of every call and
// subscription of a connection that Options.Keepalive ended because the
// server did not answer a keepalive ping.
var ErrKeepalive = errors.New("keepalive ping failed")

// keepalive is the state of Options.Keepalive: the pinger, and the error that
// ended the connection when a ping failed.
type keepalive struct {
	interval time.Duration // between pings; 0: no pings
	timeout  time.Duration // wait for one ping's answer

	dead atomic.Pointer[jsonrpc.Error] // set once, when a ping failed
	done chan struct{}                 // closed when the pinger returns; nil if none

	// streams are the open subscriptions/listen streams, ended with the
	// failure before the transport is closed (the transport would end them
	// with its own, vaguer, error).
	mu      sync.Mutex
	streams map[*subbuf.Buffer[Event]]struct{}
}

// keepaliveCause says why a ping failed; it matches ErrKeepalive. It
// does not wrap the ping's own error: the calls it fails did not time out
// (-32001), the connection ended (-32000).
type keepaliveCause struct{ why string }

func (e *keepaliveCause) Error() string        { return e.why }
func (e *keepaliveCause) Is(target error) bool { return target == ErrKeepalive }

// keepaliveMethod is the request a keepalive ping sends: ping in the
// legacy era; server/discover in 2026-07-28, which removed ping
// (changelog, "Major changes" 5) and requires every server to answer
// server/discover.
func (c *Client) keepaliveMethod() string {
	if c.dialect.Era() == EraModern {
		return "server/discover"
	}
	return "ping"
}

// startKeepalive starts the pinger of Options.Keepalive, once Connect has
// succeeded. A client without an interval sends no pings.
func (c *Client) startKeepalive() {
	if c.cfg.keepalive <= 0 {
		return
	}
	c.ka.interval = c.cfg.keepalive
	c.ka.timeout = c.cfg.keepaliveTimeout
	if c.ka.timeout <= 0 {
		c.ka.timeout = c.ka.interval
	}
	c.ka.done = make(chan struct{})
	go c.pingLoop()
}

// stopKeepalive waits for the pinger to return; the client's life has
// ended, which stops it.
func (c *Client) stopKeepalive() {
	if c.ka.done != nil {
		<-c.ka.done
	}
}

// pingLoop sends one ping every interval, the next only after the last
// has been answered (one outstanding at most), until the client's life
// ends or a ping fails.
func (c *Client) pingLoop() {
	defer close(c.ka.done)
	timer := time.NewTimer(c.ka.interval)
	defer timer.Stop()
	for {
		select {
		case <-c.life.Done():
			return
		case <-timer.C:
		}
		sent := time.Now()
		err := c.ping()
		if c.life.Err() != nil {
			return // closed meanwhile: not a failure
		}
		if err != nil {
			c.keepaliveFailed(err)
			return
		}
		timer.Reset(max(c.ka.interval-time.Since(sent), 0))
	}
}

// ping sends one keepalive ping and waits for its answer. Any answer, a
// result or an error response, shows the server alive, as does an HTTP
// 404 for an expired session (the next call starts a new one); what the
// answer says is not read.
func (c *Client) ping() error {
	method := c.keepaliveMethod()
	d := c.dialect
	params, err := buildParams(d, &callConfig{}, nil, nil, nil, false)
	if err != nil {
		return err
	}
	_, err = c.t.Request(c.life, &jsonrpc.Request{Method: method, Params: params}, transport.RequestOptions{
		Timeout: c.ka.timeout,
		Dialect: d,
		Headers: c.messageHeaders(method, nil),
	})
	if err != nil && errors.Is(err, transport.ErrSessionExpired) {
		return nil
	}
	return err
}

// keepaliveFailed ends the connection after a failed ping: the handlers
// running for server requests are cancelled, subscriptions end, the
// transport is closed (which fails the calls in flight), and every call
// returns the same -32000 error, which says why.
func (c *Client) keepaliveFailed(err error) {
	method := c.keepaliveMethod()
	why := fmt.Sprintf("%s failed: %v", method, err)
	if errors.Is(err, transport.ErrTimeout) {
		why = fmt.Sprintf("the server did not answer %s within %v", method, c.ka.timeout)
	}
	kerr := transport.ConnectionError("the keepalive ping failed, so the connection was closed; connect again",
		&keepaliveCause{why: why})
	c.ka.dead.Store(kerr)
	c.debug("keepalive ping failed; closing the connection", "error", err)
	c.endLife(kerr)
	c.subs.failAll(kerr)
	c.ka.mu.Lock()
	streams := c.ka.streams
	c.ka.streams = nil
	c.ka.mu.Unlock()
	for s := range streams {
		s.Finish(kerr)
	}
	if cc, ok := c.t.(interface{ CloseWithCause(error) error }); ok {
		_ = cc.CloseWithCause(kerr)
	} else {
		_ = c.t.Close()
	}
}

// keepaliveErr is the error that ended the connection after a failed
// ping, or nil.
func (c *Client) keepaliveErr() error {
	if e := c.ka.dead.Load(); e != nil {
		return e
	}
	return nil
}

// trackStream keeps a subscriptions/listen stream to end with a keepalive
// failure; streams that have ended meanwhile are let go. Without
// Options.Keepalive it does nothing.
func (c *Client) trackStream(sub *subbuf.Buffer[Event]) {
	if c.ka.done == nil {
		return
	}
	c.ka.mu.Lock()
	if c.ka.dead.Load() == nil {
		if c.ka.streams == nil {
			c.ka.streams = map[*subbuf.Buffer[Event]]struct{}{}
		}
		for s := range c.ka.streams {
			if s.Ended() {
				delete(c.ka.streams, s)
			}
		}
		c.ka.streams[sub] = struct{}{}
	}
	c.ka.mu.Unlock()
	if kerr := c.ka.dead.Load(); kerr != nil {
		sub.Finish(kerr)
	}
}
