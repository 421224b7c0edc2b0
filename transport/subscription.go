package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"

	"github.com/snodo/snodo/jsonrpc"
)

// DefaultMaxBuffer is the default number of events a Subscription holds for
// its consumer.
const DefaultMaxBuffer = 1024

// OverflowPolicy says what a Subscription does with an event that arrives
// when its buffer is full. The reader of a connection never waits for a
// consumer, so one of these must happen.
type OverflowPolicy int

const (
	// OverflowFail ends the subscription with an error wrapping
	// ErrOverflow (after the buffered events are consumed) and cancels it on
	// the server. Nothing is lost silently. It is the default.
	OverflowFail OverflowPolicy = iota
	// OverflowDropOldest discards the oldest buffered event to make room.
	OverflowDropOldest
	// OverflowDropNewest discards the arriving event.
	OverflowDropNewest
)

func (p OverflowPolicy) String() string {
	switch p {
	case OverflowFail:
		return "fail"
	case OverflowDropOldest:
		return "drop-oldest"
	case OverflowDropNewest:
		return "drop-newest"
	}
	return fmt.Sprintf("OverflowPolicy(%d)", int(p))
}

// ErrOverflow is the cause of the error that ends a subscription whose
// buffer overflowed under OverflowFail.
var ErrOverflow = errors.New("subscription buffer overflow")

// Event is one notification of a subscription stream, such as
// notifications/tools/list_changed or notifications/resources/updated.
type Event struct {
	Method string
	Params json.RawMessage
}

// Subscription is the consumer's end of a subscriptions/listen stream. The
// transport pushes events into its bounded buffer; the consumer pulls them
// with Next or ranges over All. It is safe for concurrent use.
//
// A subscription ends in one of three ways: cleanly (the server's terminal
// response, a notifications/cancelled from the server, or Close), where
// Next returns io.EOF; or with an error, such as a -32000 connection error
// when the server goes away. Events buffered before a server-side end are
// still delivered; Next on an ended subscription returns at once.
type Subscription struct {
	id       jsonrpc.ID
	max      int
	overflow OverflowPolicy
	cancel   func() error
	stopOwn  func() bool

	mu      sync.Mutex
	queue   []Event
	head    int
	ready   chan struct{} // signalled when an event or the end arrives
	ended   bool          // no more events will be pushed
	closed  bool          // the consumer closed it: buffered events dropped
	err     error         // the end: io.EOF or an error
	dropped int64
}

// NewSubscription returns a subscription for the listen request id, for use
// by transports. cancel tells the server to stop the stream (it is called
// at most once: by Close, when owner ends, or on overflow under
// OverflowFail), and not after the transport has called Finish.
func NewSubscription(owner context.Context, id jsonrpc.ID, opts ListenOptions, cancel func() error) *Subscription {
	s := &Subscription{
		id:       id,
		max:      opts.MaxBuffer,
		overflow: opts.Overflow,
		cancel:   cancel,
		ready:    make(chan struct{}, 1),
	}
	if s.max <= 0 {
		s.max = DefaultMaxBuffer
	}
	s.stopOwn = context.AfterFunc(owner, func() { s.Close() })
	return s
}

// ID returns the subscription's ID: the ID of its listen request, which the
// server carries in each event's _meta["io.modelcontextprotocol/subscriptionId"].
func (s *Subscription) ID() jsonrpc.ID { return s.id }

// Dropped returns how many events were discarded under a drop policy.
func (s *Subscription) Dropped() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Push adds an event, for use by transports. It never blocks. It reports
// false when the subscription has ended and wants no more events.
func (s *Subscription) Push(ev Event) bool {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return false
	}
	if len(s.queue)-s.head >= s.max {
		switch s.overflow {
		case OverflowDropNewest:
			s.dropped++
			s.mu.Unlock()
			return true
		case OverflowDropOldest:
			s.queue[s.head] = Event{}
			s.head++
			s.dropped++
		default:
			s.endLocked(&jsonrpc.Error{
				Kind:    jsonrpc.KindTransport,
				Code:    jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("subscription %v: more than %d events waiting for the consumer", s.id, s.max),
				Cause:   ErrOverflow,
			})
			s.mu.Unlock()
			// The caller may be a connection's reader, which must not block
			// on a write: tell the server from another goroutine.
			go s.cancelOnServer()
			return false
		}
	}
	if s.head > 0 && s.head == len(s.queue) {
		s.queue, s.head = s.queue[:0], 0
	}
	s.queue = append(s.queue, ev)
	s.mu.Unlock()
	s.signal()
	return true
}

// Finish ends the subscription from the transport's side: err nil is a clean
// end (io.EOF for the consumer), anything else is the error Next returns
// once the buffered events are consumed. Finishing an ended subscription
// does nothing.
func (s *Subscription) Finish(err error) {
	if err == nil {
		err = io.EOF
	}
	s.mu.Lock()
	first := !s.ended
	if first {
		s.endLocked(err)
		s.cancel = nil // the server's side is already over
	}
	s.mu.Unlock()
	if first {
		s.stopOwn()
	}
}

func (s *Subscription) endLocked(err error) {
	s.ended = true
	s.err = err
	s.signal()
}

func (s *Subscription) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// Next returns the next event. It blocks until one arrives, the
// subscription ends (io.EOF for a clean end, or the error that ended it), or
// ctx ends (ctx's error; the subscription goes on).
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		s.mu.Lock()
		if !s.closed && s.head < len(s.queue) {
			ev := s.queue[s.head]
			s.queue[s.head] = Event{}
			s.head++
			more := s.head < len(s.queue) || s.ended
			s.mu.Unlock()
			if more {
				s.signal()
			}
			return ev, nil
		}
		if s.ended {
			err := s.err
			s.mu.Unlock()
			s.signal() // let other waiters see the end too
			return Event{}, err
		}
		s.mu.Unlock()
		select {
		case <-s.ready:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// All returns an iterator over the events. It stops after a clean end; an
// error (including ctx's) is yielded once as the last pair.
func (s *Subscription) All(ctx context.Context) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for {
			ev, err := s.Next(ctx)
			if errors.Is(err, io.EOF) {
				return
			}
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

// Close ends the subscription: buffered events are dropped, Next returns
// io.EOF, and, unless the stream had already ended, the server is sent
// notifications/cancelled for the listen request. It returns the error of
// that send, if any.
func (s *Subscription) Close() error {
	s.mu.Lock()
	s.closed = true
	s.queue, s.head = nil, 0
	if !s.ended {
		s.endLocked(io.EOF)
	}
	s.mu.Unlock()
	s.stopOwn()
	return s.cancelOnServer()
}

// cancelOnServer calls the transport's cancel function once.
func (s *Subscription) cancelOnServer() error {
	s.mu.Lock()
	cancel := s.cancel
	s.cancel = nil
	s.mu.Unlock()
	if cancel == nil {
		return nil
	}
	return cancel()
}
