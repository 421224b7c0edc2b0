package stdio

import (
	"errors"
	"fmt"
	"io"
	"slices"
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
	data []byte
	// pooled is the bufPool entry data came from, given back with it.
	pooled *[]byte
	// state moves from msgQueued under the queue's lock; it is read
	// without it.
	state atomic.Int32
	// written, when not nil, receives the result of the Write (buffered:
	// the writer never waits for the sender).
	written chan error

	q          *outQueue // the queue it was pushed to; nil for the fast path
	prev, next *outMsg   // neighbours in q, while queued
}

// abandon withdraws m if the writer has not taken it yet, and reports
// whether it did. A withdrawn message leaves the queue, and its bytes are
// released, at once.
func (m *outMsg) abandon() bool {
	if m.state.Load() != msgQueued {
		return false
	}
	q := m.q
	if q == nil {
		return false // written by the fast path of send
	}
	q.mu.Lock()
	if m.state.Load() != msgQueued {
		q.mu.Unlock()
		return false
	}
	m.state.Store(msgAbandoned)
	q.unlinkLocked(m)
	data, pooled := m.data, m.pooled
	m.data, m.pooled = nil, nil
	q.mu.Unlock()
	release(pooled, data)
	return true
}

// outQueue is the writer's queue: a list of messages in the order they
// were sent, and the bytes they hold. Senders never block on it: a server
// that does not read its stdin holds up the writer alone. A message that
// would take the queue past max is refused (see Config.MaxQueuedBytes).
type outQueue struct {
	mu         sync.Mutex
	head, tail *outMsg
	bytes      int // in the queued messages, taken ones not included
	max        int
	ready      chan struct{} // signalled when the queue becomes non-empty
}

func (q *outQueue) init(max int) {
	if max <= 0 {
		max = DefaultMaxQueuedBytes
	}
	q.max = max
	q.ready = make(chan struct{}, 1)
}

func (q *outQueue) empty() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.head == nil
}

// queued returns the bytes waiting in the queue.
func (q *outQueue) queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes
}

// push queues m, or returns the error for a full queue. A message larger
// than max is accepted when nothing else waits.
func (q *outQueue) push(m *outMsg) error {
	n := len(m.data)
	q.mu.Lock()
	if q.bytes > 0 && q.bytes+n > q.max {
		queued := q.bytes
		q.mu.Unlock()
		return &jsonrpc.Error{
			Kind: jsonrpc.KindTransport,
			Code: jsonrpc.CodeConnectionClosed,
			Message: fmt.Sprintf("the server is not reading its stdin: %d bytes are queued for it, and %d more would pass the limit of %d bytes (Config.MaxQueuedBytes); the connection is still up",
				queued, n, q.max),
			Cause: ErrQueueFull,
		}
	}
	m.q = q
	m.prev = q.tail
	if q.tail != nil {
		q.tail.next = m
	} else {
		q.head = m
	}
	q.tail = m
	q.bytes += n
	first := q.head == m
	q.mu.Unlock()
	if first {
		select {
		case q.ready <- struct{}{}:
		default:
		}
	}
	return nil
}

// unlinkLocked removes m from the queue.
func (q *outQueue) unlinkLocked(m *outMsg) {
	if m.prev != nil {
		m.prev.next = m.next
	} else {
		q.head = m.next
	}
	if m.next != nil {
		m.next.prev = m.prev
	} else {
		q.tail = m.prev
	}
	m.prev, m.next = nil, nil
	q.bytes -= len(m.data)
}

// take moves the messages at the head of the queue to dst (which it
// empties first) and marks them taken: as many as fit in batchBytes
// together, or one larger message alone. The rest stay queued, where their
// senders can still withdraw them. It returns dst empty when the queue is.
func (q *outQueue) take(dst []*outMsg) []*outMsg {
	dst = dst[:0]
	size := 0
	q.mu.Lock()
	for m := q.head; m != nil; m = q.head {
		n := len(m.data)
		if len(dst) > 0 && size+n > batchBytes {
			break
		}
		q.unlinkLocked(m)
		m.state.Store(msgTaken)
		dst = append(dst, m)
		size += n
		if size > batchBytes {
			break
		}
	}
	q.mu.Unlock()
	return dst
}

// takeAll moves every queued message to a new slice, and marks them taken.
func (q *outQueue) takeAll() []*outMsg {
	var all []*outMsg
	q.mu.Lock()
	for m := q.head; m != nil; m = q.head {
		q.unlinkLocked(m)
		m.state.Store(msgTaken)
		all = append(all, m)
	}
	q.mu.Unlock()
	return all
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// encode returns the line for m, in a buffer from bufPool, and the pool's
// entry, which release gives back with the line.
func encode(m jsonrpc.Message) (*[]byte, []byte, error) {
	bp := bufPool.Get().(*[]byte)
	b, err := jsonrpc.Append((*bp)[:0], m)
	if err != nil {
		bufPool.Put(bp)
		return nil, nil, err
	}
	return bp, append(b, '\n'), nil
}

// release gives a line made by encode back to bufPool, in its pool entry
// (so that giving it back allocates nothing), unless it grew too large to
// keep.
func release(bp *[]byte, b []byte) {
	if bp != nil && b != nil && cap(b) <= batchBytes {
		*bp = b[:0]
		bufPool.Put(bp)
	}
}

// send queues m for the writer. It returns the queued message, the
// connection's error if it has stopped, or the error for a full queue.
func (c *Conn) send(m jsonrpc.Message, wait bool) (*outMsg, error) {
	if err := c.stopped(); err != nil {
		return nil, err
	}
	pooled, data, err := encode(m)
	if err != nil {
		return nil, &jsonrpc.Error{Kind: jsonrpc.KindProtocol, Code: jsonrpc.CodeInvalidRequest, Message: "cannot encode message", Cause: err}
	}
	om := &outMsg{data: data, pooled: pooled}
	if wait {
		om.written = make(chan error, 1)
	}
	if len(data) <= pipeAtomic && c.tryWrite(om) {
		return om, nil
	}
	if err := c.out.push(om); err != nil {
		release(om.pooled, om.data)
		return nil, err
	}
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
	c.fast.data = m.data
	err := c.rawStdin.Write(c.fast.write)
	n, werr := c.fast.n, c.fast.err
	c.fast.data, c.fast.err = nil, nil
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
	release(m.pooled, m.data)
	m.data, m.pooled = nil, nil
	return true
}

// fastWrite is the state of the fast path's one write(2), kept in the
// connection (under writeMu) so that the function given to
// syscall.RawConn.Write is made once, not once per message with what it
// captures.
type fastWrite struct {
	data  []byte
	n     int
	err   error
	write func(fd uintptr) bool // f.do, made once
}

func (f *fastWrite) init() { f.write = f.do }

// do writes f.data once; it never waits for room (the writer does that).
func (f *fastWrite) do(fd uintptr) bool {
	f.n, f.err = syscall.Write(int(fd), f.data)
	return true
}

// writeLoop writes queued messages to the server's stdin until the
// connection stops. Small messages queued together go out in one Write; a
// message is never split across Writes. It takes one Write's worth of
// messages at a time, so that those behind a Write that waits for a server
// that does not read stay in the queue, where their senders can withdraw
// them.
func (c *Conn) writeLoop() {
	// buf is made on the first join, on the heap, as large as that
	// needs: made here at batchBytes, it would sit in the goroutine's
	// stack, which would grow to 128 KiB on every connection, idle ones
	// too.
	var batch []*outMsg
	var buf []byte
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
		for {
			batch = c.out.take(batch)
			if len(batch) == 0 {
				break
			}
			// One message is written from its own buffer; several are
			// joined in buf.
			b := batch[0].data
			if len(batch) > 1 {
				size := 0
				for _, m := range batch {
					size += len(m.data)
				}
				buf = slices.Grow(buf[:0], size)
				for _, m := range batch {
					buf = append(buf, m.data...)
				}
				b = buf
			}
			ok := c.write(b, batch)
			for _, m := range batch {
				release(m.pooled, m.data)
				m.data, m.pooled = nil, nil
			}
			clear(batch)
			if !ok {
				c.writeMu.Unlock()
				return
			}
		}
		c.writeMu.Unlock()
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
	for _, m := range c.out.takeAll() {
		if m.written != nil {
			m.written <- err
		}
		release(m.pooled, m.data)
		m.data, m.pooled = nil, nil
	}
}
