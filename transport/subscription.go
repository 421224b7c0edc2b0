package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/snodo/snodo/internal/subbuf"
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
var ErrOverflow = subbuf.ErrOverflow

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
//
// Only Snodo's transports can deliver events to a subscription or end it
// from the server's side: they hold its producer's end, an
// internal/subbuf.Buffer, of which Subscription is the consumer's view.
type Subscription subbuf.Buffer[Event]

func (s *Subscription) buf() *subbuf.Buffer[Event] { return (*subbuf.Buffer[Event])(s) }

// ID returns the subscription's ID: the ID of its listen request, which the
// server carries in each event's _meta["io.modelcontextprotocol/subscriptionId"].
func (s *Subscription) ID() jsonrpc.ID { return s.buf().ID() }

// Dropped returns how many events were discarded under a drop policy.
func (s *Subscription) Dropped() int64 { return s.buf().Dropped() }

// Next returns the next event. It blocks until one arrives, the
// subscription ends (io.EOF for a clean end, or the error that ended it), or
// ctx ends (ctx's error; the subscription goes on).
func (s *Subscription) Next(ctx context.Context) (Event, error) { return s.buf().Next(ctx) }

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
func (s *Subscription) Close() error { return s.buf().Close() }
