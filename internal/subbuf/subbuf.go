// Package subbuf is the bounded event buffer behind transport.Subscription,
// with its producer side: the methods a Snodo transport calls to deliver
// events (Push) and to end the stream (Finish). It is internal so that
// users of a subscription can only consume it.
//
// transport.Subscription is defined as Buffer[transport.Event], so a
// transport makes one with New and hands the consumer its end by
// conversion, keeping the *Buffer for itself:
//
//	buf := subbuf.New[transport.Event](ctx, id, subbuf.Config{...}, cancel)
//	sub := (*transport.Subscription)(buf)
package subbuf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/snodo/snodo/jsonrpc"
)

// DefaultMax is the number of events a buffer holds when Config.Max is 0
// (transport.DefaultMaxBuffer).
const DefaultMax = 1024

// Policy says what a buffer does with an event that arrives when it is
// full; its values are those of transport.OverflowPolicy.
type Policy int

const (
	// Fail ends the stream with an error wrapping ErrOverflow and cancels
	// it on the server.
	Fail Policy = iota
	// DropOldest discards the oldest buffered event to make room.
	DropOldest
	// DropNewest discards the arriving event.
	DropNewest
)

// ErrOverflow is the cause of the error that ends a buffer that overflowed
// under Fail (transport.ErrOverflow).
var ErrOverflow = errors.New("subscription buffer overflow")

// Config bounds a buffer.
type Config struct {
	Max      int // events held for the consumer; 0 means DefaultMax
	Overflow Policy
}

// Buffer is one subscription stream: the transport pushes events into it,
// the consumer pulls them. It is safe for concurrent use.
type Buffer[E any] struct {
	id       jsonrpc.ID
	max      int
	overflow Policy
	cancel   func() error
	stopOwn  func() bool
	tap      func(context.Context, E) (stop bool, err error)
	observe  func(E) // under mu

	mu      sync.Mutex
	queue   []E
	head    int
	ready   chan struct{} // signalled when an event or the end arrives
	ended   bool          // no more events will be pushed
	closed  bool          // the consumer closed it: buffered events dropped
	err     error         // the end: io.EOF or an error
	dropped int64
}

// New returns a buffer for the listen request id. cancel tells the server
// to stop the stream (it is called at most once: by Close, when owner
// ends, or on overflow under Fail), and not after Finish.
func New[E any](owner context.Context, id jsonrpc.ID, cfg Config, cancel func() error) *Buffer[E] {
	b := &Buffer[E]{
		id:       id,
		max:      cfg.Max,
		overflow: cfg.Overflow,
		cancel:   cancel,
		ready:    make(chan struct{}, 1),
	}
	if b.max <= 0 {
		b.max = DefaultMax
	}
	// Under the lock: an owner that has already ended runs the Close at
	// once, in a goroutine of its own, which must find stopOwn set.
	b.mu.Lock()
	b.stopOwn = context.AfterFunc(owner, func() { b.Close() })
	b.mu.Unlock()
	return b
}

// SetTap makes every event pass through tap, in the consumer's goroutine,
// before Next returns it: stop ends the stream cleanly (Next returns
// io.EOF and the server is told), an error ends it with that error. Set it
// before the first Next.
func (b *Buffer[E]) SetTap(tap func(ctx context.Context, ev E) (stop bool, err error)) { b.tap = tap }

// SetObserver makes f see every event as it is pushed, in the producer's
// goroutine and under the buffer's lock (f must be quick and must not call
// the buffer), before the overflow policy applies. Events already buffered
// are given to f at once, so that an observer set after the first Push
// misses none the consumer has not taken.
func (b *Buffer[E]) SetObserver(f func(E)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ev := range b.queue[b.head:] {
		f(ev)
	}
	b.observe = f
}

// ID returns the ID of the listen request.
func (b *Buffer[E]) ID() jsonrpc.ID { return b.id }

// Dropped returns how many events were discarded under a drop policy.
func (b *Buffer[E]) Dropped() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}

// Push adds an event. It never blocks. It reports false when the stream
// has ended and wants no more events.
func (b *Buffer[E]) Push(ev E) bool {
	b.mu.Lock()
	if b.ended {
		b.mu.Unlock()
		return false
	}
	if b.observe != nil {
		b.observe(ev)
	}
	if len(b.queue)-b.head >= b.max {
		switch b.overflow {
		case DropNewest:
			b.dropped++
			b.mu.Unlock()
			return true
		case DropOldest:
			var zero E
			b.queue[b.head] = zero
			b.head++
			b.dropped++
		default:
			b.endLocked(&jsonrpc.Error{
				Kind:    jsonrpc.KindTransport,
				Code:    jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("subscription %v: more than %d events waiting for the consumer", b.id, b.max),
				Cause:   ErrOverflow,
			})
			b.mu.Unlock()
			// The caller may be a connection's reader, which must not block
			// on a write: tell the server from another goroutine.
			go b.cancelOnServer()
			return false
		}
	}
	if b.head > 0 && b.head == len(b.queue) {
		b.queue, b.head = b.queue[:0], 0
	}
	b.queue = append(b.queue, ev)
	b.mu.Unlock()
	b.signal()
	return true
}

// Ended reports whether the stream has ended, from either side.
func (b *Buffer[E]) Ended() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ended
}

// Finish ends the stream from the transport's side: err nil is a clean end
// (io.EOF for the consumer), anything else is the error Next returns once
// the buffered events are consumed. Finishing an ended stream does
// nothing.
func (b *Buffer[E]) Finish(err error) {
	if err == nil {
		err = io.EOF
	}
	b.mu.Lock()
	first := !b.ended
	if first {
		b.endLocked(err)
		b.cancel = nil // the server's side is already over
	}
	stop := b.stopOwn
	b.mu.Unlock()
	if first {
		stop()
	}
}

func (b *Buffer[E]) endLocked(err error) {
	b.ended = true
	b.err = err
	b.signal()
}

func (b *Buffer[E]) signal() {
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// Next returns the next event. It blocks until one arrives, the stream
// ends (io.EOF for a clean end, or the error that ended it), or ctx ends
// (ctx's error; the stream goes on).
func (b *Buffer[E]) Next(ctx context.Context) (E, error) {
	var zero E
	for {
		b.mu.Lock()
		if !b.closed && b.head < len(b.queue) {
			ev := b.queue[b.head]
			b.queue[b.head] = zero
			b.head++
			more := b.head < len(b.queue) || b.ended
			b.mu.Unlock()
			if more {
				b.signal()
			}
			if b.tap != nil {
				stop, err := b.tap(ctx, ev)
				if err != nil || stop {
					if err == nil {
						err = io.EOF
					}
					b.endByConsumer(err)
					return zero, err
				}
			}
			return ev, nil
		}
		if b.ended {
			err := b.err
			b.mu.Unlock()
			b.signal() // let other waiters see the end too
			return zero, err
		}
		b.mu.Unlock()
		select {
		case <-b.ready:
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
}

// Close ends the stream from the consumer's side: buffered events are
// dropped, Next returns io.EOF, and, unless the stream had already ended,
// cancel is called. It returns cancel's error, if any.
func (b *Buffer[E]) Close() error {
	b.mu.Lock()
	b.closed = true
	b.queue, b.head = nil, 0
	if !b.ended {
		b.endLocked(io.EOF)
	}
	stop := b.stopOwn
	b.mu.Unlock()
	stop()
	return b.cancelOnServer()
}

// endByConsumer is Close with err as the end that Next returns.
func (b *Buffer[E]) endByConsumer(err error) {
	b.mu.Lock()
	b.closed = true
	b.queue, b.head = nil, 0
	if !b.ended {
		b.endLocked(err)
	}
	stop := b.stopOwn
	b.mu.Unlock()
	stop()
	_ = b.cancelOnServer()
}

// cancelOnServer calls cancel once.
func (b *Buffer[E]) cancelOnServer() error {
	b.mu.Lock()
	cancel := b.cancel
	b.cancel = nil
	b.mu.Unlock()
	if cancel == nil {
		return nil
	}
	return cancel()
}
