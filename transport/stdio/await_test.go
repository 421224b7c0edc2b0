package stdio_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/stdio"
)

// A caller waiting without the baton receives on its response channel
// alone: its timer, its context and the connection's stop send it what
// ends its wait. These tests hold the baton themselves, so that nobody
// reads stdout and every caller waits without it.

// takeBaton takes the baton away from c's callers; the returned function
// gives it back.
func takeBaton(t *testing.T, c *stdio.Conn) func() {
	t.Helper()
	giveBack, ok := stdio.TakeBaton(c)
	if !ok {
		t.Fatal("the baton was never free")
	}
	return giveBack
}

// waitPending waits until n requests are waiting for their responses.
func waitPending(t *testing.T, c *stdio.Conn, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); stdio.Pending(c) != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests pending, want %d", stdio.Pending(c), n)
		}
	}
}

// A caller waiting without the baton whose context ends returns the
// context's error (with its cause), the server is told, and the connection
// goes on.
func TestContextEndsWaitWithoutBaton(t *testing.T) {
	cfg, n := notedConfig("script")
	c := holdingConn(t, cfg)
	giveBack := takeBaton(t, c)
	ctx, cancel := context.WithCancelCause(context.Background())
	errc := make(chan error, 1)
	go func() {
		resp, err := c.Request(ctx, &jsonrpc.Request{ID: jsonrpc.StringID("nobaton"), Method: "test/sleep", Params: mustJSON(map[string]any{"ms": 600000})}, transport.RequestOptions{Timeout: time.Hour})
		if resp != nil {
			err = fmt.Errorf("response %+v with error %v", resp, err)
		}
		errc <- err
	}()
	waitPending(t, c, 1)
	why := errors.New("user pressed stop")
	cancel(why)
	select {
	case err := <-errc:
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError || !errors.Is(err, context.Canceled) || !errors.Is(err, why) {
			t.Fatalf("error %v, want the cancellation with its cause", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a caller waiting without the baton did not return when its context ended")
	}
	if p := stdio.Pending(c); p != 0 {
		t.Fatalf("%d requests still pending", p)
	}
	giveBack()
	// The server relays the cancellation before it answers this: the
	// caller reads both (the background reader waits an hour here).
	if resp := call(t, c, "echo", map[string]any{"after": true}, transport.RequestOptions{}); string(resp.Result) != `{"after":true}` {
		t.Fatalf("echo %s", resp.Result)
	}
	if p := cancelledParams(t, n, 1)[0]; p["requestId"] != "nobaton" {
		t.Fatalf("notifications/cancelled params %v, want requestId nobaton", p)
	}
}

// A caller waiting without the baton times out at its timeout, and one
// whose context already ended returns at once, each with its own error.
func TestTimeoutAndEndedContextWithoutBaton(t *testing.T) {
	c := holdingConn(t, config("script"))
	giveBack := takeBaton(t, c)
	defer giveBack()
	sleep := &jsonrpc.Request{Method: "test/sleep", Params: mustJSON(map[string]any{"ms": 600000})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := c.Request(context.Background(), sleep, transport.RequestOptions{Timeout: 20 * time.Millisecond})
		if !errors.Is(err, transport.ErrTimeout) || errors.Is(err, transport.ErrMaxTotalTimeout) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("timeout: %v, want the request timeout", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = c.Request(ctx, sleep, transport.RequestOptions{Timeout: time.Hour})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("ended context: %v, want context.Canceled", err)
		}
		ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err = c.Request(ctx, sleep, transport.RequestOptions{Timeout: time.Hour})
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, transport.ErrTimeout) {
			t.Errorf("deadline: %v, want the context's deadline", err)
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("callers waiting without the baton did not return at their timeouts or contexts")
	}
}

// Close wakes every caller waiting without the baton, whatever it waits
// with (a timeout, a context, neither): each returns the connection error,
// and nothing is left running for them.
func TestCloseWakesEveryCallerWaitingWithoutBaton(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	c := holdingConn(t, config("script"))
	giveBack := takeBaton(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const callers = 64
	errs := make(chan error, callers)
	for i := range callers {
		go func() {
			cctx, opts := context.Background(), transport.RequestOptions{}
			switch i % 4 {
			case 1:
				opts.Timeout = time.Hour
			case 2:
				cctx = ctx
			case 3:
				cctx, opts.Timeout = ctx, time.Hour
			}
			resp, err := c.Request(cctx, &jsonrpc.Request{Method: "test/sleep", Params: mustJSON(map[string]any{"ms": 600000})}, opts)
			if resp != nil {
				err = fmt.Errorf("response %+v with error %v", resp, err)
			}
			errs <- err
		}()
	}
	waitPending(t, c, callers)
	c.Close()
	deadline := time.After(30 * time.Second)
	for i := range callers {
		select {
		case err := <-errs:
			if !errors.Is(err, stdio.ErrClosed) || !errors.Is(err, transport.ErrConnection) {
				t.Errorf("caller: %v, want the -32000 error wrapping ErrClosed", err)
			}
		case <-deadline:
			t.Fatalf("%d of %d callers waiting without the baton did not return after Close", callers-i, callers)
		}
	}
	giveBack() // the background reader drains stdout until the server exits
	// The server would finish its sleeps before exiting.
	if err := syscall.Kill(c.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.Wait(context.Background())
	goleak.VerifyNone(t, ignore)
}

// A response racing its timeout, or its caller's context: whoever claims
// the call first wins. Each caller gets its own response or the error,
// never another call's response nor two values; a request without timeout
// always gets its response. Calls are reused from request to request, so
// a call recycled while its timer or context function could still reach
// it would show here (and to the race detector).
func TestTimeoutsAndContextsRacingResponses(t *testing.T) {
	c := connect(t, config("script"))
	const callers, each = 32, 300
	var (
		wg                       sync.WaitGroup
		mu                       sync.Mutex
		answered, timedOut, ctxd int
	)
	done := make(chan struct{})
	for g := range callers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range each {
				want := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
				ctx, opts := context.Background(), transport.RequestOptions{}
				cancel := context.CancelFunc(func() {})
				kind := rng.IntN(4)
				// From 1 µs to 8 ms: about as long as a round trip, some of
				// them, whatever the machine.
				d := time.Duration(1<<rng.IntN(14)+rng.IntN(1000)) * time.Microsecond / 2
				switch kind {
				case 1: // a timeout
					opts.Timeout = d
				case 2: // a context cancelled then
					ctx, cancel = context.WithCancel(context.Background())
					time.AfterFunc(d, cancel)
				case 3: // both, and a long timeout that must not fire
					ctx, cancel = context.WithCancel(context.Background())
					time.AfterFunc(d, cancel)
					opts.Timeout = time.Hour
				}
				resp, err := c.Request(ctx, &jsonrpc.Request{Method: "echo", Params: json.RawMessage(want)}, opts)
				cancel()
				switch {
				case err == nil && (resp == nil || string(resp.Result) != want):
					t.Errorf("request %s answered %+v", want, resp)
				case err == nil:
					mu.Lock()
					answered++
					mu.Unlock()
				case resp != nil:
					t.Errorf("request %s: response %+v with error %v", want, resp, err)
				case kind == 1 && errors.Is(err, transport.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded):
					mu.Lock()
					timedOut++
					mu.Unlock()
				case kind >= 2 && errors.Is(err, context.Canceled):
					mu.Lock()
					ctxd++
					mu.Unlock()
				default:
					t.Errorf("request %s (kind %d): %v", want, kind, err)
				}
			}
		})
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		t.Fatal("callers still waiting: a response or a sentinel was lost")
	}
	t.Logf("%d answered, %d timed out, %d cancelled", answered, timedOut, ctxd)
	if resp := call(t, c, "echo", map[string]any{"after": true}, transport.RequestOptions{}); string(resp.Result) != `{"after":true}` {
		t.Fatalf("echo %s", resp.Result)
	}
}

// Several callers whose progress keeps resetting their timeouts, most of
// them waiting without the baton: each resets its own timer, and the one
// bounded by a total timeout fails with that error.
func TestResetTimeoutOnProgressWithManyCallers(t *testing.T) {
	c := connect(t, config("script"))
	const callers = 8
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			id := jsonrpc.StringID(fmt.Sprintf("reset-%d", g))
			// 20 notifications 50 ms apart: 1 s in all, against a 500 ms
			// timeout that each of them resets.
			count := 0
			opts := transport.RequestOptions{
				Timeout: 500 * time.Millisecond, ResetTimeoutOnProgress: true,
				OnProgress: func(json.RawMessage) error { count++; return nil },
			}
			params := map[string]any{"count": 20, "intervalMs": 50}
			if g == 0 {
				opts.MaxTotalTimeout = 700 * time.Millisecond
				params = map[string]any{"forever": true, "intervalMs": 50}
			}
			_, err := c.Request(context.Background(), progressRequest(id, id.String(), params), opts)
			switch {
			case g == 0:
				if !errors.Is(err, transport.ErrMaxTotalTimeout) {
					t.Errorf("%v: %v, want the max-total-timeout error", id, err)
				}
			case err != nil || count != 20:
				t.Errorf("%v: %d of 20 progress notifications, error %v", id, count, err)
			}
		})
	}
	wg.Wait()
}

// Callers sharing a context, waiting without the baton: when it ends,
// every call made with it returns the context's error, and no other call
// is touched.
func TestSharedContextEndsEveryWaitMadeWithIt(t *testing.T) {
	c := holdingConn(t, config("script"))
	giveBack := takeBaton(t, c)
	const each = 32
	ctxA, cancelA := context.WithCancelCause(context.Background())
	ctxB, cancelB := context.WithCancelCause(context.Background())
	defer cancelB(nil)
	errsA, errsB := make(chan error, each), make(chan error, each)
	for i := range 2 * each {
		ctx, errs := ctxA, errsA
		if i%2 == 1 {
			ctx, errs = ctxB, errsB
		}
		go func() {
			opts := transport.RequestOptions{}
			if i%4 >= 2 {
				opts.Timeout = time.Hour
			}
			resp, err := c.Request(ctx, &jsonrpc.Request{Method: "test/sleep", Params: mustJSON(map[string]any{"ms": 600000})}, opts)
			if resp != nil {
				err = fmt.Errorf("response %+v with error %v", resp, err)
			}
			errs <- err
		}()
	}
	waitPending(t, c, 2*each)
	wait := func(errs chan error, why error) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for i := range each {
			select {
			case err := <-errs:
				if !errors.Is(err, context.Canceled) || !errors.Is(err, why) {
					t.Errorf("caller: %v, want the cancellation with its cause", err)
				}
			case <-deadline:
				t.Fatalf("%d of %d callers sharing a context did not return when it ended", each-i, each)
			}
		}
	}
	whyA, whyB := errors.New("A ended"), errors.New("B ended")
	cancelA(whyA)
	wait(errsA, whyA)
	if p := stdio.Pending(c); p != each {
		t.Fatalf("%d requests pending, want the %d made with the other context", p, each)
	}
	cancelB(whyB)
	wait(errsB, whyB)
	giveBack()
	if resp := call(t, c, "echo", map[string]any{"after": true}, transport.RequestOptions{}); string(resp.Result) != `{"after":true}` {
		t.Fatalf("echo %s", resp.Result)
	}
}
