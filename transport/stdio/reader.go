package stdio

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/snodo/snodo/internal/jsoncodec"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// Methods the reader routes itself.
const (
	methodProgress     = "notifications/progress"
	methodCancelled    = "notifications/cancelled"
	methodAcknowledged = "notifications/subscriptions/acknowledged"
)

// exitReportWait is how long the end of stdout waits for the server's exit
// status, to say how it ended.
const exitReportWait = 100 * time.Millisecond

// routing is what the reader looks at in a notification's params.
type routing struct {
	Meta *struct {
		// SubscriptionID names the notification's subscription: the ID
		// of its subscriptions/listen request.
		SubscriptionID json.RawMessage `json:"io.modelcontextprotocol/subscriptionId"`
	} `json:"_meta"`
	ProgressToken json.RawMessage `json:"progressToken"`
	RequestID     json.RawMessage `json:"requestId"`
	Notifications json.RawMessage `json:"notifications"`
}

// readLoop reads the server's stdout until it ends, dispatching each
// message without waiting for anyone. Lines that are too long, not JSON or
// not JSON-RPC are skipped: the request a lost line answered times out.
func (c *Conn) readLoop() {
	lr := jsonrpc.NewLineReader(c.stdout, c.maxLine)
	var err error
	for {
		var line []byte
		line, err = lr.ReadLine()
		if err != nil {
			var tooLong *jsonrpc.LineTooLongError
			if errors.As(err, &tooLong) {
				continue
			}
			break
		}
		if c.stopped() != nil {
			continue // drain stdout so the server can finish and exit
		}
		msg, derr := jsonrpc.Decode(line)
		if derr != nil {
			continue
		}
		c.dispatch(msg)
	}
	c.stop(c.readEndError(err))
	c.stdout.Close()
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

func (c *Conn) dispatch(msg jsonrpc.Message) {
	switch m := msg.(type) {
	case *jsonrpc.Response:
		c.handleResponse(m)
	case *jsonrpc.Request:
		c.handleServerRequest(m)
	case *jsonrpc.Notification:
		c.handleNotification(m)
	}
}

func (c *Conn) handleResponse(resp *jsonrpc.Response) {
	c.mu.Lock()
	cl := c.pending[resp.ID]
	var ls *listenState
	if cl != nil {
		c.forgetLocked(cl)
	} else if ls = c.listens[resp.ID]; ls != nil {
		delete(c.listens, resp.ID)
	}
	c.mu.Unlock()
	switch {
	case cl != nil:
		cl.resp <- resp // buffered; each call gets one response
	case ls != nil:
		ls.respond(resp)
	}
}

func (c *Conn) handleNotification(n *jsonrpc.Notification) {
	var rt routing
	if len(n.Params) > 0 {
		// Params that do not parse are not routed; the hook may see them.
		_ = jsoncodec.Unmarshal(n.Params, &rt)
	}
	switch n.Method {
	case methodProgress:
		if id, ok := parseID(rt.ProgressToken); ok {
			c.mu.Lock()
			cl := c.progress[id]
			c.mu.Unlock()
			if cl != nil {
				cl.pushProgress(n.Params)
				return
			}
		}
	case methodCancelled:
		if id, ok := parseID(rt.RequestID); ok && c.cancelledByServer(id) {
			return
		}
	}
	if rt.Meta != nil {
		if id, ok := parseID(rt.Meta.SubscriptionID); ok {
			c.mu.Lock()
			ls := c.listens[id]
			c.mu.Unlock()
			if ls != nil {
				ls.notify(n, rt.Notifications)
				return
			}
		}
	}
	c.mu.Lock()
	hook := c.onNotify
	c.mu.Unlock()
	if hook != nil {
		hook(n)
	}
}

// cancelledByServer handles a notifications/cancelled from the server for
// id: it cancels the server-to-client request running under that ID, or
// ends the subscription opened by the listen request with that ID. It
// reports whether id named either.
func (c *Conn) cancelledByServer(id jsonrpc.ID) bool {
	c.mu.Lock()
	sr := c.serverReqs[id]
	ls := c.listens[id]
	if ls != nil {
		delete(c.listens, id)
	}
	c.mu.Unlock()
	if sr != nil {
		sr.cancel()
	}
	if ls != nil {
		ls.endByServer()
	}
	return sr != nil || ls != nil
}

// parseID parses a raw JSON string or integer as an ID.
func parseID(raw json.RawMessage) (jsonrpc.ID, bool) {
	if len(raw) == 0 {
		return jsonrpc.ID{}, false
	}
	var id jsonrpc.ID
	if err := id.UnmarshalJSON(raw); err != nil || !id.IsValid() {
		return jsonrpc.ID{}, false
	}
	return id, true
}
