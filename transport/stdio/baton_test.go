package stdio_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/internal/transporttest"
	"github.com/snodo/snodo/transport/stdio"
)

// The baton: a caller reads stdout itself while nobody else does.

// holdingConn returns a connection on which the next Request reads stdout
// itself: the background reader has handed the baton on after routing a
// response, and with the watch delay this long it does not take it back.
func holdingConn(t *testing.T, cfg stdio.Config) *stdio.Conn {
	t.Helper()
	c := connect(t, cfg)
	stdio.SetWatchDelay(c, time.Hour)
	call(t, c, "echo", map[string]any{}, transport.RequestOptions{})
	// The background reader lets the baton go just after routing the
	// response, possibly after call has returned.
	for deadline := time.Now().Add(10 * time.Second); !stdio.BatonFree(c); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the background reader kept the baton")
		}
	}
	return c
}

// A caller whose context ends while it holds the baton, blocked reading a
// pipe with nothing in it, returns the context's error, the server is told,
// and the next caller reads for itself.
func TestCallerHoldingBatonCancelled(t *testing.T) {
	n := newNotes()
	sleeping := make(chan struct{}, 1)
	cfg := config("script")
	cfg.OnNotification = func(x *jsonrpc.Notification) {
		if x.Method == "test/sleeping" {
			sleeping <- struct{}{}
		}
		n.hook(x)
	}
	c := holdingConn(t, cfg)
	for round := range 5 {
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		id := jsonrpc.StringID(fmt.Sprintf("sleep-%d", round))
		go func() {
			_, err := c.Request(ctx, &jsonrpc.Request{ID: id, Method: "test/sleep", Params: mustJSON(map[string]any{"ms": 600000, "announce": true})}, transport.RequestOptions{})
			errc <- err
		}()
		// The caller has read the server's announcement itself and goes
		// back to reading a pipe that stays empty.
		transporttest.Recv(t, sleeping, "sleeping")
		cancel()
		var je *jsonrpc.Error
		if err := transporttest.Recv(t, errc, "errc"); !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError || !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: error %v, want a cancellation", round, err)
		}
		resp := call(t, c, "echo", map[string]any{"round": round}, transport.RequestOptions{})
		if string(resp.Result) != fmt.Sprintf(`{"round":%d}`, round) {
			t.Fatalf("round %d: echo %s", round, resp.Result)
		}
	}
	// The server hears of a request given up by a caller holding the baton.
	c.Request(context.Background(), &jsonrpc.Request{ID: jsonrpc.StringID("w"), Method: "test/sleep", Params: mustJSON(map[string]any{"ms": 600000})}, transport.RequestOptions{Timeout: time.Millisecond})
	// The server relays the cancellation before it answers this: the
	// caller reads both (the background reader waits an hour here).
	call(t, c, "echo", map[string]any{}, transport.RequestOptions{})
	n.wait(t, "test/cancelled", func(g []*jsonrpc.Notification) bool {
		for _, x := range g {
			var p struct {
				RequestID jsonrpc.ID `json:"requestId"`
			}
			if json.Unmarshal(x.Params, &p) == nil && p.RequestID == jsonrpc.StringID("w") {
				return true
			}
		}
		return false
	})
}

// A caller holding the baton whose timeout passes while it waits in
// read(2) returns -32001, and the connection goes on.
func TestCallerHoldingBatonTimesOut(t *testing.T) {
	c := holdingConn(t, config("script"))
	_, err := c.Request(context.Background(), &jsonrpc.Request{Method: "test/sleep", Params: mustJSON(map[string]any{"ms": 600000})}, transport.RequestOptions{Timeout: 20 * time.Millisecond})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeRequestTimeout {
		t.Fatalf("error %v, want -32001", err)
	}
	if resp := call(t, c, "echo", map[string]any{"after": true}, transport.RequestOptions{}); string(resp.Result) != `{"after":true}` {
		t.Fatalf("echo %s", resp.Result)
	}
}

// Close wakes a caller blocked reading stdout with the baton; it returns
// the connection error.
func TestCloseWakesCallerHoldingBaton(t *testing.T) {
	c := holdingConn(t, config("script"))
	errc := make(chan error, 1)
	go func() {
		_, err := c.Request(context.Background(), &jsonrpc.Request{Method: "test/sleep", Params: mustJSON(map[string]any{"ms": 600000})}, transport.RequestOptions{})
		errc <- err
	}()
	c.Close()
	if err := transporttest.Recv(t, errc, "errc"); !errors.Is(err, stdio.ErrClosed) {
		t.Fatalf("error %v, want ErrClosed", err)
	}
}

// Progress read by the caller holding the baton is delivered to its
// progress function, every notification, in order, before the response.
func TestProgressToCallerHoldingBaton(t *testing.T) {
	c := holdingConn(t, config("script"))
	for round := range 5 {
		var got []int
		resp, err := c.Request(context.Background(), progressRequest(jsonrpc.StringID(fmt.Sprintf("p%d", round)), "tok", map[string]any{"count": 10}), transport.RequestOptions{
			OnProgress: func(params json.RawMessage) error {
				got = append(got, progressNumber(t, params))
				return nil
			},
		})
		if err != nil || resp.Error != nil {
			t.Fatal(err, resp)
		}
		if len(got) != 10 || got[0] != 1 || got[9] != 10 {
			t.Fatalf("round %d: delivered %v, want 1..10", round, got)
		}
	}
}

// Server requests and notifications that arrive after the last response,
// while no caller waits, are read and answered: the baton goes to the
// background reader.
func TestServerRequestWhileNoCallerWaits(t *testing.T) {
	cfg, n := notedConfig("script")
	cfg.OnServerRequest = func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		return json.RawMessage(`{"action":"accept"}`), nil
	}
	c := connect(t, cfg)
	for i := range 20 {
		// The server answers test/ask first, then sends its request: the
		// caller has its response and is gone when the request arrives.
		call(t, c, "test/ask", map[string]any{"method": "elicitation/create", "count": 1}, transport.RequestOptions{})
		got := answers(t, n.waitN(t, "test/answered", i+1))
		if a := got[i]; string(a.Result) != `{"action":"accept"}` {
			t.Fatalf("answer %d: %+v", i, a)
		}
	}
}

// Many callers at once, with progress, server requests, timeouts and
// cancellations among them: every response reaches its caller, whoever
// reads it.
func TestConcurrentCallersShareTheBaton(t *testing.T) {
	cfg := config("script")
	cfg.OnServerRequest = func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		return json.RawMessage(`{}`), nil
	}
	c := connect(t, cfg)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 60 {
				opts := transport.RequestOptions{}
				switch i % 6 {
				case 1:
					count := 0
					id := jsonrpc.StringID(fmt.Sprintf("p-%d-%d", g, i))
					_, err := c.Request(context.Background(), progressRequest(id, id.String(), map[string]any{"count": 4}), transport.RequestOptions{
						OnProgress: func(json.RawMessage) error { count++; return nil },
					})
					if err != nil || count != 4 {
						t.Errorf("progress %v: %d of 4 (%v)", id, count, err)
					}
					continue
				case 2:
					if _, err := c.Request(context.Background(), &jsonrpc.Request{Method: "test/ask", Params: mustJSON(map[string]any{"method": "roots/list", "count": 2})}, opts); err != nil {
						t.Error(err)
					}
					continue
				case 3:
					_, err := c.Request(context.Background(), &jsonrpc.Request{Method: "test/sleep", Params: mustJSON(map[string]any{"ms": 600000})}, transport.RequestOptions{Timeout: time.Millisecond})
					if err == nil {
						t.Error("a sleep of 10 minutes answered")
					}
					continue
				case 4:
					ctx, cancel := context.WithCancel(context.Background())
					go cancel()
					c.Request(ctx, &jsonrpc.Request{Method: "test/sleep", Params: mustJSON(map[string]any{"ms": 600000})}, transport.RequestOptions{})
					continue
				}
				want := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
				resp, err := c.Request(context.Background(), &jsonrpc.Request{Method: "echo", Params: json.RawMessage(want)}, opts)
				if err != nil || string(resp.Result) != want {
					t.Errorf("echo %s: %v %v", want, resp, err)
				}
			}
		})
	}
	wg.Wait()
}

// A response that arrives after its caller gave up never reaches a later
// call (calls are reused once their response has been received).
func TestLateResponseNeverReachesLaterCall(t *testing.T) {
	c := connect(t, config("script"))
	for i := range 50 {
		// Answered after a flood of progress that nobody claims, which the
		// server sends before it reads the cancellation: the response
		// usually comes after the 1 ms timeout.
		id := jsonrpc.StringID(fmt.Sprintf("late-%d", i))
		c.Request(context.Background(), progressRequest(id, id.String(), map[string]any{"count": 500}), transport.RequestOptions{Timeout: time.Millisecond})
		for j := range 3 {
			want := fmt.Sprintf(`{"i":%d,"j":%d}`, i, j)
			resp := call(t, c, "echo", json.RawMessage(want), transport.RequestOptions{})
			if string(resp.Result) != want {
				t.Fatalf("echo %s answered with %s", want, resp.Result)
			}
		}
	}
}
