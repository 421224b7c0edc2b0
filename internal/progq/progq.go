// Package progq is the queue that holds a request's progress notifications
// between the transport's reader, which must never wait, and the caller,
// which takes them in batches and runs its progress function on them. The
// stdio and Streamable HTTP transports share it.
//
// Every notification is kept while the bytes waiting stay within the
// queue's limit (the transport's line or message limit); past it, the
// oldest waiting one is dropped: MCP progress is cumulative, so the newest
// says the most. The newest is never dropped.
package progq

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// Queue is one request's waiting progress. The zero value is not usable:
// make one with New. It is safe for one pusher and one taker at a time.
type Queue struct {
	mu      sync.Mutex
	q       []json.RawMessage
	bytes   int
	limit   int
	dropped int64
	ready   chan struct{}
}

// New returns a queue that holds at most limit bytes of waiting
// notifications (and always the newest one).
func New(limit int) *Queue {
	return &Queue{limit: limit, ready: make(chan struct{}, 1)}
}

// Push adds params and signals Ready. It never blocks.
func (q *Queue) Push(params json.RawMessage) {
	q.mu.Lock()
	q.q = append(q.q, params)
	q.bytes += len(params)
	for q.bytes > q.limit && len(q.q) > 1 {
		q.bytes -= len(q.q[0])
		q.q[0] = nil
		q.q = q.q[1:]
		q.dropped++
	}
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// Take returns the waiting notifications, oldest first, and empties the
// queue; dst's storage is reused for the next batch.
func (q *Queue) Take(dst []json.RawMessage) []json.RawMessage {
	q.mu.Lock()
	dst, q.q = q.q, dst[:0]
	q.bytes = 0
	q.mu.Unlock()
	return dst
}

// Ready receives a value after a Push; a value may be pending with nothing
// left to take (a Take after the Push emptied the queue).
func (q *Queue) Ready() <-chan struct{} { return q.ready }

// Pending reports whether a Push signalled Ready since Ready was last
// received from.
func (q *Queue) Pending() bool { return len(q.ready) > 0 }

// Dropped returns how many notifications were dropped to stay within the
// limit.
func (q *Queue) Dropped() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dropped
}

// Call runs a request's progress function on params, turning a panic into
// a -32603 error of kind handler.
func Call(fn transport.ProgressFunc, params json.RawMessage) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("progress function panicked: %v", r)}
		}
	}()
	return fn(params)
}
