package stdio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/stdio"
)

func progressRequest(id jsonrpc.ID, token any, p map[string]any) *jsonrpc.Request {
	p["_meta"] = map[string]any{"progressToken": token}
	return &jsonrpc.Request{ID: id, Method: "test/progress", Params: mustJSON(p)}
}

func progressNumber(t *testing.T, params json.RawMessage) int {
	var p struct {
		Progress int `json:"progress"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		t.Error(err)
	}
	return p.Progress
}

func goroutineID() string {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	return string(b[:bytes.IndexByte(b, ' ')])
}

// "A notifications/progress whose token belongs to a request made with
// progress: is forwarded to the process waiting on that request, which
// calls the progress function" — in order, before the response is
// returned, in the caller's goroutine.
func TestProgressDeliveredInCallersGoroutineBeforeResponse(t *testing.T) {
	c := connect(t, config("script"))
	me := goroutineID()
	var got []int
	resp, err := c.Request(context.Background(), progressRequest(jsonrpc.Int64ID(1), "tok-1", map[string]any{"count": 20}), transport.RequestOptions{
		OnProgress: func(params json.RawMessage) error {
			if g := goroutineID(); g != me {
				t.Errorf("progress function ran in goroutine %s, the caller is %s", g, me)
			}
			got = append(got, progressNumber(t, params))
			return nil
		},
	})
	if err != nil || resp.Error != nil {
		t.Fatal(err, resp)
	}
	if len(got) != 20 {
		t.Fatalf("delivered %v, want 1..20", got)
	}
	for i, n := range got {
		if n != i+1 {
			t.Fatalf("delivered %v, want 1..20 in order", got)
		}
	}
	// Progress still waiting when the response arrives is delivered before
	// Request returns. The first call waits for a request that the server
	// reads only after it has sent all progress and the response, so both
	// are waiting together when it returns.
	for round := range 10 {
		delivered, first := 0, true
		_, err := c.Request(context.Background(), progressRequest(jsonrpc.StringID("r"+strconv.Itoa(round)), "tok-r", map[string]any{"count": 5}), transport.RequestOptions{
			OnProgress: func(json.RawMessage) error {
				delivered++
				if first {
					first = false
					_, err := c.Request(context.Background(), &jsonrpc.Request{Method: "echo"}, transport.RequestOptions{Timeout: 20 * time.Second})
					return err
				}
				return nil
			},
		})
		if err != nil || delivered != 5 {
			t.Fatalf("round %d: delivered %d of 5 before the response (%v)", round, delivered, err)
		}
	}
	// An integer token works the same; a request without OnProgress gets
	// none, and the notifications it does not claim are dropped.
	count := 0
	call(t, c, "test/progress", map[string]any{"count": 3, "_meta": map[string]any{"progressToken": 5}}, transport.RequestOptions{})
	c.Request(context.Background(), progressRequest(jsonrpc.Int64ID(2), 6, map[string]any{"count": 3}), transport.RequestOptions{
		OnProgress: func(json.RawMessage) error { count++; return nil },
	})
	if count != 3 {
		t.Fatalf("integer token: delivered %d, want 3", count)
	}
}

// "a slow caller never blocks the reader" (issue 2): a progress function
// that waits for another request to complete would deadlock if it ran in
// the reader.
func TestSlowProgressFunctionNeverBlocksReader(t *testing.T) {
	c := connect(t, config("script"))
	var once sync.Once
	_, err := c.Request(context.Background(), progressRequest(jsonrpc.Int64ID(1), "tok", map[string]any{"count": 3}), transport.RequestOptions{
		OnProgress: func(json.RawMessage) error {
			var err error
			once.Do(func() {
				_, err = c.Request(context.Background(), &jsonrpc.Request{Method: "echo"}, transport.RequestOptions{Timeout: 20 * time.Second})
			})
			return err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// "with reset_timeout_on_progress: true the connection process also
// restarts the request's timer"
func TestResetTimeoutOnProgressRestartsTimer(t *testing.T) {
	c := connect(t, config("script"))
	// 16 progress notifications 100 ms apart: 1.6 s in all, against a 1 s
	// timeout.
	params := func() map[string]any { return map[string]any{"count": 16, "intervalMs": 100} }
	noop := func(json.RawMessage) error { return nil }
	_, err := c.Request(context.Background(), progressRequest(jsonrpc.Int64ID(1), "a", params()), transport.RequestOptions{
		Timeout: time.Second, OnProgress: noop, ResetTimeoutOnProgress: true,
	})
	if err != nil {
		t.Fatalf("with reset: %v", err)
	}
	_, err = c.Request(context.Background(), progressRequest(jsonrpc.Int64ID(2), "b", params()), transport.RequestOptions{
		Timeout: time.Second, OnProgress: noop,
	})
	if !errors.Is(err, transport.ErrTimeout) || errors.Is(err, transport.ErrMaxTotalTimeout) {
		t.Fatalf("without reset: %v, want a plain timeout", err)
	}
}

// floodProgress asks the "flood" scenario for count progress notifications
// while the progress function is held up until they have all been read, and
// returns the progress numbers the function saw, in order.
func floodProgress(t *testing.T, cfg stdio.Config, count int) []int {
	t.Helper()
	c := connect(t, cfg)
	var (
		once sync.Once
		seen []int
	)
	_, err := c.Request(context.Background(), progressRequest(jsonrpc.Int64ID(1), "flood", map[string]any{"count": count}), transport.RequestOptions{
		OnProgress: func(params json.RawMessage) error {
			seen = append(seen, progressNumber(t, params))
			var err error
			once.Do(func() {
				// The server reads this request only after sending the whole
				// flood and its response: by the time it returns, the reader
				// has read them all, while this caller was busy.
				_, err = c.Request(context.Background(), &jsonrpc.Request{Method: "echo"}, transport.RequestOptions{Timeout: 60 * time.Second})
			})
			return err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return seen
}

// Every progress notification reaches a slow progress function, in order,
// while those waiting fit in the line limit.
func TestProgressEveryNotificationDelivered(t *testing.T) {
	const count = 1000
	seen := floodProgress(t, config("script"), count)
	if len(seen) != count {
		t.Fatalf("the progress function saw %d of %d notifications", len(seen), count)
	}
	for i, n := range seen {
		if n != i+1 {
			t.Fatalf("notification %d has progress %d, want %d", i, n, i+1)
		}
	}
}

// A flood beyond the bound: the reader never waits, the bytes waiting stay
// within the line limit (oldest dropped), and the newest progress is always
// delivered.
func TestProgressFloodIsBoundedAndKeepsNewest(t *testing.T) {
	const (
		flood = 30000
		limit = 16 << 10
	)
	cfg := config("script")
	cfg.MaxLineBytes = limit
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	seen := floodProgress(t, cfg, flood)
	runtime.ReadMemStats(&after)
	t.Logf("%d of %d progress notifications delivered, last %d; heap %d→%d KiB", len(seen), flood, seen[len(seen)-1], before.HeapAlloc>>10, after.HeapAlloc>>10)
	if last := seen[len(seen)-1]; last != flood {
		t.Fatalf("last delivered progress %d, want %d", last, flood)
	}
	// Each notification's params take more than 16 bytes; the caller took
	// one batch while the flood arrived and one after: at most 2*limit/16.
	if max := 1 + 2*limit/16; len(seen) > max {
		t.Fatalf("delivered %d: more than the line limit's worth (%d) was kept", len(seen), max)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] <= seen[i-1] {
			t.Fatalf("progress out of order: %d after %d", seen[i], seen[i-1])
		}
	}
	_ = strconv.Itoa
}
