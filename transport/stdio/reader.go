package stdio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// exitReportWait is how long the end of stdout waits for the server's exit
// status, to say how it ended.
const exitReportWait = 100 * time.Millisecond

// Reading stdout. Whoever holds the baton reads: a caller of Request
// waiting for its response, which then needs no other goroutine to wake it,
// or the connection's background reader. The baton is a token in
// Conn.baton. A caller takes it if it is free when it starts waiting;
// otherwise it is read for, and waits on its response channel, where its
// timer, its context and the connection's stop also send (see claim). A holder that lets it go
// while calls are waiting (or after the connection stopped) hands it to the
// background reader at once; otherwise it stays free for the next caller,
// and the background reader takes it when it has been free for the watch
// delay. Reading never waits for anyone: responses go to buffered
// channels, progress and subscription events to queues, server requests
// to the dispatcher. A holder blocked in read(2) is woken by a read
// deadline: its own timeout, or a past deadline set by poke (its context,
// Close, the server's exit).

// watchDelay is how long stdout may go unread, after the last holder of
// the baton has let it go, before the background reader takes it: the
// longest a message from the server waits while no call is in flight.
const watchDelay = time.Millisecond

// What readStep did.
const (
	readMsg   = iota // read a line (and dispatched it, unless it was not a message)
	readWoken        // the read deadline passed: the holder looks at why
	readEnded        // stdout has ended; nobody reads again
)

// readStep reads one line and dispatches its message; only the holder of
// the baton calls it. Lines that are too long, not JSON or not JSON-RPC are
// skipped: the request a lost line answered times out. It reports whether
// a response went to a waiting call. At readEnded the baton is gone.
func (c *Conn) readStep(holder *holdState) (status int, routed bool, inline func()) {
	line, err := c.lr.ReadLine()
	if err != nil {
		var tooLong *jsonrpc.LineTooLongError
		switch {
		case errors.As(err, &tooLong):
			return readMsg, false, nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			if g := c.grace.Load(); g == 0 || time.Now().UnixNano() < g {
				return readWoken, false, nil
			}
		}
		c.endRead(err)
		return readEnded, false, nil
	}
	if c.stopped() != nil {
		return readMsg, false, nil // drain stdout so the server can finish and exit
	}
	msg, derr := jsonrpc.Decode(line)
	if derr != nil {
		return readMsg, false, nil
	}
	routed, inline = c.dispatch(msg, holder)
	return readMsg, routed, inline
}

// endRead ends reading at the end of stdout (or a read error, or the grace
// after the server's exit).
func (c *Conn) endRead(err error) {
	c.watch.Stop()
	c.stop(c.readEndError(err))
	c.stdout.Close()
}

// armRead sets stdout's read deadline for a new holder of the baton, or
// after it was woken: its own deadline (zero: none), or the end of the
// grace after the server's exit if that is earlier. The holder then looks
// at what it waits for before reading, so a poke is never missed.
func (c *Conn) armRead(own time.Time) {
	for {
		g := c.grace.Load()
		d := own
		if g != 0 {
			if gt := time.Unix(0, g); d.IsZero() || gt.Before(d) {
				d = gt
			}
		}
		c.stdout.SetReadDeadline(d)
		if c.grace.Load() == g {
			return
		}
	}
}

// pastDeadline is a read deadline that has passed.
var pastDeadline = time.Unix(1, 0)

// poke wakes the holder of the baton if it is blocked in a read, so that it
// looks at what changed; a holder that is not blocked sees it at its next
// read and arms again.
func (c *Conn) poke() { c.stdout.SetReadDeadline(pastDeadline) }

// release hands the baton on. Calls still waiting for their responses
// get the background reader at once (they wait for their responses, not
// for the baton), as does a stopped connection (to drain stdout); otherwise the
// baton stays free for the next caller, and the background reader takes
// it after the watch delay unless a caller does first.
func (c *Conn) release() {
	if c.letGo() {
		go c.background()
	}
}

// letGo puts the baton back. It reports whether its holder is to go on
// reading as the background reader: it took the baton back because calls
// are waiting (or the connection has stopped) and no caller took it.
func (c *Conn) letGo() bool {
	c.baton <- struct{}{} // never blocks: only the holder releases
	// A caller counts itself among the pending calls before it tries the
	// baton: if it failed to take it, it is counted here.
	if c.stopped() != nil || c.core.Pending() > 0 {
		select {
		case <-c.baton:
			return true
		default:
			return false
		}
	}
	if len(c.baton) > 0 && c.watchArmed.CompareAndSwap(false, true) {
		c.watch.Reset(time.Duration(c.watchDelay.Load()))
	}
	return false
}

// lend puts the baton back while its holder, a caller, runs a server
// request's work: a caller that starts waiting takes it, and the
// background reader does after the watch delay, so that a slow handler
// holds up no other message. The caller takes the baton back afterwards if
// it is still free (unwatch).
func (c *Conn) lend() {
	c.baton <- struct{}{} // never blocks: only the holder releases
	// Armed or not, the watch is set to the delay from now.
	c.watchArmed.Store(true)
	c.watch.Reset(time.Duration(c.watchDelay.Load()))
}

// unwatch stops the watch after a caller took the baton back from a lend:
// the baton is held again, and the timer need not start a goroutine to
// find that out.
func (c *Conn) unwatch() {
	if c.watch.Stop() {
		c.watchArmed.Store(false)
	}
}

// drain starts the background reader if the baton is free.
func (c *Conn) drain() {
	select {
	case <-c.baton:
		go c.background()
	default:
	}
}

// onWatch runs watchDelay after the baton was left free: if it still is,
// this goroutine becomes the background reader.
func (c *Conn) onWatch() {
	// Cleared before looking at the baton: a release from now on arms the
	// watch again.
	c.watchArmed.Store(false)
	select {
	case <-c.baton:
		c.background()
	default:
	}
}

// background reads stdout while no caller does, holding the baton. When
// it has routed the response of the last call waiting, it lets the baton
// go: the next caller is likely to send another request and read for
// itself. Once the connection has stopped it drains stdout until it ends.
func (c *Conn) background() {
	c.armRead(time.Time{})
	for {
		switch st, routed, _ := c.readStep(nil); {
		case st == readEnded:
			return
		case st == readWoken:
			c.armRead(time.Time{})
		case routed && c.stopped() == nil && c.core.Pending() == 0:
			if !c.letGo() {
				return
			}
		}
	}
}

// readEndError describes the end of stdout. A server usually closes stdout
// by exiting: its exit status is worth a short wait.
func (c *Conn) readEndError(err error) *jsonrpc.Error {
	t := time.NewTimer(exitReportWait)
	defer t.Stop()
	select {
	case <-c.exited:
		return transport.ConnectionError(fmt.Sprintf("server exited (%v)", c.cmd.ProcessState), c.waitErr)
	case <-t.C:
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, io.EOF) {
		return transport.ConnectionError("server closed its stdout", io.EOF)
	}
	return transport.ConnectionError("reading from the server failed", err)
}

// dispatch routes msg; it reports whether it was a response for a call,
// and returns the work of a server request that holder is to run (see
// handleServerRequest). holder is nil for the background reader.
func (c *Conn) dispatch(msg jsonrpc.Message, holder *holdState) (routed bool, inline func()) {
	switch m := msg.(type) {
	case *jsonrpc.Response:
		return c.handleResponse(m), nil
	case *jsonrpc.Request:
		return false, c.handleServerRequest(m, holder)
	case *jsonrpc.Notification:
		c.core.RouteNotification(m)
	}
	return false, nil
}

func (c *Conn) handleResponse(resp *jsonrpc.Response) bool {
	cl, ok, ls := c.core.TakeResponse(resp)
	switch {
	case ok:
		cl.resp <- resp // buffered; claimed, so sent nothing else
	case ls != nil:
		ls.Respond(resp)
	}
	return ok
}
