package transport

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/snodo/snodo/jsonrpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newSub(t *testing.T, opts ListenOptions) (*Subscription, *atomic.Int32) {
	t.Helper()
	var cancels atomic.Int32
	s := NewSubscription(context.Background(), jsonrpc.Int64ID(1), opts, func() error {
		cancels.Add(1)
		return nil
	})
	return s, &cancels
}

func ev(m string) Event { return Event{Method: m} }

func TestSubscriptionDeliversInOrderThenCleanEnd(t *testing.T) {
	s, cancels := newSub(t, ListenOptions{})
	s.Push(ev("a"))
	s.Push(ev("b"))
	s.Finish(nil)
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
	if s.Push(ev("late")) {
		t.Fatal("Push accepted an event after Finish")
	}
}

func TestSubscriptionErrorAfterBufferedEvents(t *testing.T) {
	s, _ := newSub(t, ListenOptions{})
	s.Push(ev("a"))
	boom := ConnectionError("server exited", nil)
	s.Finish(boom)
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
	s, cancels := newSub(t, ListenOptions{})
	s.Push(ev("a"))
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
	s := NewSubscription(ctx, jsonrpc.Int64ID(1), ListenOptions{}, func() error { close(done); return nil })
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
	s, _ := newSub(t, ListenOptions{})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next = %v", err)
	}
	s.Push(ev("still-there"))
	if e, err := s.Next(context.Background()); err != nil || e.Method != "still-there" {
		t.Fatalf("the subscription did not go on after a cancelled Next: %v %v", e, err)
	}
}

func TestSubscriptionOverflowPolicies(t *testing.T) {
	t.Run("drop-oldest", func(t *testing.T) {
		s, _ := newSub(t, ListenOptions{MaxBuffer: 2, Overflow: OverflowDropOldest})
		for _, m := range []string{"a", "b", "c"} {
			s.Push(ev(m))
		}
		s.Finish(nil)
		if got := drain(t, s); got != "bc" || s.Dropped() != 1 {
			t.Fatalf("got %q dropped %d", got, s.Dropped())
		}
	})
	t.Run("drop-newest", func(t *testing.T) {
		s, _ := newSub(t, ListenOptions{MaxBuffer: 2, Overflow: OverflowDropNewest})
		for _, m := range []string{"a", "b", "c"} {
			s.Push(ev(m))
		}
		s.Finish(nil)
		if got := drain(t, s); got != "ab" || s.Dropped() != 1 {
			t.Fatalf("got %q dropped %d", got, s.Dropped())
		}
	})
	t.Run("fail", func(t *testing.T) {
		cancelled := make(chan struct{})
		s := NewSubscription(context.Background(), jsonrpc.Int64ID(1), ListenOptions{MaxBuffer: 2}, func() error {
			close(cancelled)
			return nil
		})
		s.Push(ev("a"))
		s.Push(ev("b"))
		if s.Push(ev("c")) {
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
	s, _ := newSub(t, ListenOptions{MaxBuffer: 10000})
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
		s.Push(ev("x"))
	}
	s.Finish(nil)
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
