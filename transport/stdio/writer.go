package stdio

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// The states of an outgoing message.
const (
	msgQueued    int32 = iota
	msgTaken           // the writer has it: it will be written or fail
	msgAbandoned       // its sender gave up before the writer took it
)

// batchBytes is the most bytes the writer joins into one Write. A message
// is never split across Writes; a larger one is written on its own.
const batchBytes = 64 << 10

// outMsg is one line for the server's stdin, newline included.
type outMsg struct {
	data  []byte
	state atomic.Int32
	// written, when not nil, receives the result of the Write (buffered:
	// the writer never waits for the sender).
	written chan error
}

// abandon withdraws m if the writer has not taken it yet, and reports
// whether it did.
func (m *outMsg) abandon() bool { return m.state.CompareAndSwap(msgQueued, msgAbandoned) }

// outQueue is the writer's queue. Senders never block on it: a server that
// does not read its stdin holds up the writer alone.
type outQueue struct {
	mu    sync.Mutex
	msgs  []*outMsg
	ready chan struct{} // signalled when msgs becomes non-empty
}

func (q *outQueue) init() { q.ready = make(chan struct{}, 1) }

func (q *outQueue) empty() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.msgs) == 0
}

func (q *outQueue) push(m *outMsg) {
	q.mu.Lock()
	q.msgs = append(q.msgs, m)
	first := len(q.msgs) == 1
	q.mu.Unlock()
	if first {
		select {
		case q.ready <- struct{}{}:
		default:
		}
	}
}

// take moves the queued messages to dst (which it empties first).
func (q *outQueue) take(dst []*outMsg) []*outMsg {
	q.mu.Lock()
	dst, q.msgs = q.msgs, dst[:0]
	q.mu.Unlock()
	return dst
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// encode returns the line for m, in a buffer from bufPool.
func encode(m jsonrpc.Message) ([]byte, error) {
	bp := bufPool.Get().(*[]byte)
	b, err := jsonrpc.Append((*bp)[:0], m)
	if err != nil {
		bufPool.Put(bp)
		return nil, err
	}
	return append(b, '\n'), nil
}

func release(b []byte) {
	if cap(b) <= batchBytes {
		b = b[:0]
		bufPool.Put(&b)
	}
}

// send queues m for the writer. It returns the queued message, or the
// connection's error if it has stopped.
func (c *Conn) send(m jsonrpc.Message, wait bool) (*outMsg, error) {
	if err := c.stopped(); err != nil {
		return nil, err
	}
	data, err := encode(m)
	if err != nil {
		return nil, &jsonrpc.Error{Kind: jsonrpc.KindProtocol, Code: jsonrpc.CodeInvalidRequest, Message: "cannot encode message", Cause: err}
	}
	om := &outMsg{data: data}
	if wait {
		om.written = make(chan error, 1)
	}
	if len(data) <= pipeAtomic && c.tryWrite(om) {
		return om, nil
	}
	c.out.push(om)
	return om, nil
}

// tryWrite is the fast path of send: when the writer is idle with nothing
// queued, a small message is written at once from the sender's goroutine,
// without a hand-off. The write never waits: if the pipe has no room for
// the whole message (the server is not reading), it writes nothing and the
// message goes to the writer's queue. It reports whether m was dealt with.
func (c *Conn) tryWrite(m *outMsg) bool {
	if !c.writeMu.TryLock() {
		return false
	}
	defer c.writeMu.Unlock()
	if !c.out.empty() {
		return false // keep the order of what is queued
	}
	var (
		n    int
		werr error
	)
	err := c.rawStdin.Write(func(fd uintptr) bool {
		n, werr = syscall.Write(int(fd), m.data)
		return true // never wait for room: the writer does that
	})
	if err == nil {
		err = werr
	}
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
		return false
	}
	if err == nil && n != len(m.data) {
		// Cannot happen for an atomic write; if it did, the stream would
		// hold a partial line.
		err = io.ErrShortWrite
	}
	m.state.Store(msgTaken)
	if err != nil {
		c.stop(transport.ConnectionError("writing to the server failed", err))
		err = c.Err()
	}
	if m.written != nil {
		m.written <- err
	}
	release(m.data)
	m.data = nil
	return true
}

// writeLoop writes queued messages to the server's stdin until the
// connection stops. Small messages queued together go out in one Write; a
// message is never split across Writes.
func (c *Conn) writeLoop() {
	var (
		batch []*outMsg
		group []*outMsg // the messages in buf
		buf   = make([]byte, 0, batchBytes)
	)
	for {
		select {
		case <-c.out.ready:
		case <-c.done:
			c.failQueued()
			return
		}
		// Held while writing, so that the fast path of send never
		// overtakes a message the writer has taken.
		c.writeMu.Lock()
		batch = c.out.take(batch)
		for _, m := range batch {
			if !m.state.CompareAndSwap(msgQueued, msgTaken) {
				continue
			}
			if len(buf)+len(m.data) > batchBytes && len(group) > 0 {
				if !c.write(buf, group) {
					c.writeMu.Unlock()
					return
				}
				buf, group = buf[:0], group[:0]
			}
			if len(m.data) > batchBytes {
				if !c.write(m.data, []*outMsg{m}) {
					c.writeMu.Unlock()
					return
				}
				continue
			}
			buf = append(buf, m.data...)
			release(m.data)
			m.data = nil
			group = append(group, m)
		}
		if len(group) > 0 {
			if !c.write(buf, group) {
				c.writeMu.Unlock()
				return
			}
			buf, group = buf[:0], group[:0]
		}
		c.writeMu.Unlock()
		clear(batch)
	}
}

// write writes b, which holds the messages of group, and reports whether
// the connection goes on.
func (c *Conn) write(b []byte, group []*outMsg) bool {
	_, err := c.stdin.Write(b)
	if err != nil {
		// A server that closed its stdin (or exited) fails the write;
		// the connection is gone.
		c.stop(transport.ConnectionError("writing to the server failed", err))
		err = c.Err()
	}
	for _, m := range group {
		if m.written != nil {
			m.written <- err
		}
	}
	if err != nil {
		c.failQueued()
		return false
	}
	return true
}

// failQueued tells the senders still waiting that their messages will not
// be written.
func (c *Conn) failQueued() {
	err := c.Err()
	for _, m := range c.out.take(nil) {
		if m.state.CompareAndSwap(msgQueued, msgTaken) && m.written != nil {
			m.written <- err
		}
	}
}
