package transport

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/snodo/snodo/internal/subbuf"
	"github.com/snodo/snodo/jsonrpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newSub returns a subscription as a transport makes one: the consumer's
// end and the producer's.
func newSub(t *testing.T, opts ListenOptions) (*Subscription, *subbuf.Buffer[Event], *atomic.Int32) {
	t.Helper()
	var cancels atomic.Int32
	s, p := open(context.Background(), opts, func() error {
		cancels.Add(1)
		return nil
	})
	return s, p, &cancels
}

func open(ctx context.Context, opts ListenOptions, cancel func() error) (*Subscription, *subbuf.Buffer[Event]) {
	p := subbuf.New[Event](ctx, jsonrpc.Int64ID(1), subbuf.Config{Max: opts.MaxBuffer, Overflow: subbuf.Policy(opts.Overflow)}, cancel)
	return (*Subscription)(p), p
}

// The transport's constants are the buffer's.
func TestSubscriptionConstantsMatchBuffer(t *testing.T) {
	if DefaultMaxBuffer != subbuf.DefaultMax || ErrOverflow != subbuf.ErrOverflow {
		t.Fatal("DefaultMaxBuffer or ErrOverflow differs from internal/subbuf's")
	}
	for _, c := range []struct {
		o OverflowPolicy
		p subbuf.Policy
	}{{OverflowFail, subbuf.Fail}, {OverflowDropOldest, subbuf.DropOldest}, {OverflowDropNewest, subbuf.DropNewest}} {
		if subbuf.Policy(c.o) != c.p {
			t.Fatalf("%v is %d in internal/subbuf", c.o, c.p)
		}
	}
}

func ev(m string) Event { return Event{Method: m} }

func TestSubscriptionDeliversInOrderThenCleanEnd(t *testing.T) {
	s, p, cancels := newSub(t, ListenOptions{})
	p.Push(ev("a"))
	p.Push(ev("b"))
	p.Finish(nil)
	var got []string
	for e, err := range s.All(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Method)
	}
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("got %v", got)
	}
	if _, err := s.Next(context.Background()); err != io.EOF {
		t.Fatalf("Next after the end = %v, want io.EOF", err)
	}
	if cancels.Load() != 0 {
		t.Fatal("a subscription the server ended was cancelled on the server")
	}
	if p.Push(ev("late")) {
		t.Fatal("Push accepted an event after Finish")
	}
}

func TestSubscriptionErrorAfterBufferedEvents(t *testing.T) {
	s, p, _ := newSub(t, ListenOptions{})
	p.Push(ev("a"))
	boom := ConnectionError("server exited", nil)
	p.Finish(boom)
	if e, err := s.Next(context.Background()); err != nil || e.Method != "a" {
		t.Fatalf("first Next = %v, %v", e, err)
	}
	if _, err := s.Next(context.Background()); !errors.Is(err, ErrConnection) {
		t.Fatalf("second Next = %v, want the connection error", err)
	}
	// Next on an ended subscription returns at once, every time.
	if _, err := s.Next(context.Background()); !errors.Is(err, ErrConnection) {
		t.Fatalf("third Next = %v", err)
	}
}

func TestSubscriptionCloseCancelsOnServerOnce(t *testing.T) {
	s, p, cancels := newSub(t, ListenOptions{})
	p.Push(ev("a"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if cancels.Load() != 1 {
		t.Fatalf("cancel called %d times, want 1", cancels.Load())
	}
	if _, err := s.Next(context.Background()); err != io.EOF {
		t.Fatalf("Next after Close = %v, want io.EOF (buffered events dropped)", err)
	}
}

func TestSubscriptionOwnerContextEndCancels(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s, _ := open(ctx, ListenOptions{}, func() error { close(done); return nil })
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the owner's end did not cancel the subscription on the server")
	}
	if _, err := s.Next(context.Background()); err != io.EOF {
		t.Fatalf("Next = %v", err)
	}
}

func TestSubscriptionNextHonoursContext(t *testing.T) {
	s, p, _ := newSub(t, ListenOptions{})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next = %v", err)
	}
	p.Push(ev("still-there"))
	if e, err := s.Next(context.Background()); err != nil || e.Method != "still-there" {
		t.Fatalf("the subscription did not go on after a cancelled Next: %v %v", e, err)
	}
}

func TestSubscriptionOverflowPolicies(t *testing.T) {
	t.Run("drop-oldest", func(t *testing.T) {
		s, p, _ := newSub(t, ListenOptions{MaxBuffer: 2, Overflow: OverflowDropOldest})
		for _, m := range []string{"a", "b", "c"} {
			p.Push(ev(m))
		}
		p.Finish(nil)
		if got := drain(t, s); got != "bc" || s.Dropped() != 1 {
			t.Fatalf("got %q dropped %d", got, s.Dropped())
		}
	})
	t.Run("drop-newest", func(t *testing.T) {
		s, p, _ := newSub(t, ListenOptions{MaxBuffer: 2, Overflow: OverflowDropNewest})
		for _, m := range []string{"a", "b", "c"} {
			p.Push(ev(m))
		}
		p.Finish(nil)
		if got := drain(t, s); got != "ab" || s.Dropped() != 1 {
			t.Fatalf("got %q dropped %d", got, s.Dropped())
		}
	})
	t.Run("fail", func(t *testing.T) {
		cancelled := make(chan struct{})
		s, p := open(context.Background(), ListenOptions{MaxBuffer: 2}, func() error {
			close(cancelled)
			return nil
		})
		p.Push(ev("a"))
		p.Push(ev("b"))
		if p.Push(ev("c")) {
			t.Fatal("Push over a full buffer under OverflowFail reported success")
		}
		<-cancelled // told the server, from another goroutine
		got := ""
		for {
			e, err := s.Next(context.Background())
			if err != nil {
				if !errors.Is(err, ErrOverflow) {
					t.Fatalf("end = %v, want ErrOverflow", err)
				}
				break
			}
			got += e.Method
		}
		if got != "ab" {
			t.Fatalf("buffered events before the overflow error: %q", got)
		}
	})
}

func TestSubscriptionConcurrentConsumers(t *testing.T) {
	s, p, _ := newSub(t, ListenOptions{MaxBuffer: 10000})
	const n = 1000
	results := make(chan int, 4)
	for range 4 {
		go func() {
			c := 0
			for {
				if _, err := s.Next(context.Background()); err != nil {
					results <- c
					return
				}
				c++
			}
		}()
	}
	for range n {
		p.Push(ev("x"))
	}
	p.Finish(nil)
	total := 0
	for range 4 {
		total += <-results
	}
	if total != n {
		t.Fatalf("consumers got %d events, want %d", total, n)
	}
}

func drain(t *testing.T, s *Subscription) string {
	t.Helper()
	got := ""
	for e, err := range s.All(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		got += e.Method
	}
	return got
}

func TestErrorConstructors(t *testing.T) {
	c := ConnectionError("server exited", io.EOF)
	if c.Code != -32000 || c.Kind != jsonrpc.KindTransport || !errors.Is(c, ErrConnection) || !errors.Is(c, io.EOF) {
		t.Fatalf("ConnectionError = %+v", c)
	}
	to := TimeoutError(1500 * time.Millisecond)
	if to.Code != -32001 || !errors.Is(to, ErrTimeout) || errors.Is(to, ErrMaxTotalTimeout) || string(to.Data) != `{"timeout":1500}` {
		t.Fatalf("TimeoutError = %+v", to)
	}
	mt := MaxTotalTimeoutError(time.Minute)
	if mt.Code != -32001 || !errors.Is(mt, ErrTimeout) || !errors.Is(mt, ErrMaxTotalTimeout) || string(mt.Data) != `{"maxTotalTimeout":60000}` {
		t.Fatalf("MaxTotalTimeoutError = %+v", mt)
	}
}
