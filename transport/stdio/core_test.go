package stdio_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/internal/transporttest"
	"github.com/snodo/snodo/transport/stdio"
)

// "It writes one JSON-RPC message per line to the server's stdin and reads
// newline-delimited messages from its stdout."
func TestOneMessagePerLineRoundTrip(t *testing.T) {
	c := connect(t, config("script"))
	params := json.RawMessage("{\n  \"multi\": \"line\",\n  \"n\": 1\n}")
	resp := call(t, c, "echo", params, transport.RequestOptions{})
	if string(resp.Result) != `{"multi":"line","n":1}` {
		t.Fatalf("result %s", resp.Result)
	}
	if !resp.ID.IsValid() {
		t.Fatal("response without the assigned ID")
	}
}

// "Responses are correlated by ID, so any number of processes can share
// one client and have requests in flight at once."
func TestResponsesCorrelatedByIDWithManyRequestsInFlight(t *testing.T) {
	c := connect(t, config("script"))
	const callers, each = 32, 20
	var wg sync.WaitGroup
	errs := make(chan error, callers*each)
	for g := range callers {
		wg.Go(func() {
			for i := range each {
				// Replies come back out of order: later requests sleep less.
				ms := (each - i) % 5
				resp, err := c.Request(context.Background(), &jsonrpc.Request{
					Method: "test/sleep", Params: mustJSON(map[string]any{"ms": ms, "caller": g, "i": i}),
				}, transport.RequestOptions{})
				if err != nil {
					errs <- err
					continue
				}
				if want := fmt.Sprintf(`{"slept":%d}`, ms); string(resp.Result) != want {
					errs <- fmt.Errorf("caller %d request %d: result %s, want %s", g, i, resp.Result, want)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// "close/1 closes the server's stdin. An MCP stdio server exits at EOF
// after finishing admitted requests; this transport does not signal or kill
// it."
func TestCloseClosesStdinWithoutSignallingTheServer(t *testing.T) {
	c := connect(t, config("exitcode", "7"))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	state, err := c.Wait(context.Background())
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("Wait: %v, want the exit error", err)
	}
	ws := state.Sys().(syscall.WaitStatus)
	if ws.Signaled() || state.ExitCode() != 7 {
		t.Fatalf("server ended with %v, want exit status 7 at EOF, no signal", state)
	}
	_, err = c.Request(context.Background(), &jsonrpc.Request{Method: "echo"}, transport.RequestOptions{})
	if !errors.Is(err, transport.ErrConnection) || !errors.Is(err, stdio.ErrClosed) {
		t.Fatalf("request after Close: %v, want -32000 wrapping ErrClosed", err)
	}
}

// "When the server exits, or closes its stdin so that a write to it fails,
// requests in flight and later requests fail with -32000." (the exit)
func TestServerExitFailsInFlightAndLaterRequests(t *testing.T) {
	c := connect(t, config("exitmidrequest"))
	_, err := c.Request(context.Background(), &jsonrpc.Request{Method: "echo"}, transport.RequestOptions{})
	transporttest.WantCode(t, err, jsonrpc.CodeConnectionClosed)
	if !errors.Is(err, transport.ErrConnection) {
		t.Fatalf("in-flight error %v does not match transport.ErrConnection", err)
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
		t.Logf("error %v does not carry the exit status (the exit was not seen in time)", err)
	}
	transporttest.Recv(t, c.Done(), "c.Done()")
	_, err = c.Request(context.Background(), &jsonrpc.Request{Method: "echo"}, transport.RequestOptions{})
	transporttest.WantCode(t, err, jsonrpc.CodeConnectionClosed)
	err = c.Notify(context.Background(), &jsonrpc.Notification{Method: "n"}, transport.NotifyOptions{})
	transporttest.WantCode(t, err, jsonrpc.CodeConnectionClosed)
	state, _ := c.Wait(context.Background())
	if state.ExitCode() != 3 {
		t.Fatalf("exit %v, want status 3", state)
	}
}

// "When the server exits, or closes its stdin so that a write to it fails,
// requests in flight and later requests fail with -32000." (the write)
func TestServerClosingStdinFailsRequestsWithConnectionError(t *testing.T) {
	cfg, n := notedConfig("closestdin")
	c := connectHanging(t, cfg)
	n.waitN(t, "test/ready", 1)
	_, err := c.Request(context.Background(), &jsonrpc.Request{Method: "echo"}, transport.RequestOptions{})
	transporttest.WantCode(t, err, jsonrpc.CodeConnectionClosed)
	if !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("error %v, want the failed write (EPIPE) as its cause", err)
	}
	_, err = c.Request(context.Background(), &jsonrpc.Request{Method: "echo"}, transport.RequestOptions{})
	transporttest.WantCode(t, err, jsonrpc.CodeConnectionClosed)
}

// A server that closes its stdout while it keeps running can answer
// nothing more: requests in flight fail with -32000.
func TestServerClosingStdoutFailsRequestsWithConnectionError(t *testing.T) {
	c := connect(t, config("closestdout"))
	_, err := c.Request(context.Background(), &jsonrpc.Request{Method: "echo"}, transport.RequestOptions{})
	transporttest.WantCode(t, err, jsonrpc.CodeConnectionClosed)
	// It is still running, reading stdin: Close lets it finish.
	c.Close()
	if state, _ := c.Wait(context.Background()); !state.Success() {
		t.Fatalf("server ended with %v", state)
	}
}

// "the child is always reaped": without anyone calling Wait, the exited
// server does not stay a zombie.
func TestChildIsAlwaysReaped(t *testing.T) {
	c, err := stdio.Connect(context.Background(), config("exitmidrequest"))
	if err != nil {
		t.Fatal(err)
	}
	pid := c.Pid()
	c.Request(context.Background(), &jsonrpc.Request{Method: "echo"}, transport.RequestOptions{})
	transporttest.Recv(t, c.Done(), "c.Done()")
	for i := 0; ; i++ {
		// Signal 0 succeeds on a zombie; ESRCH means it was reaped.
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			break
		}
		if i == 1000 {
			t.Fatalf("server %d not reaped", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Wait(context.Background()) // for the leak check: the waiter is done
}

// "a wait call reports the server's exit"
func TestWaitReportsServerExit(t *testing.T) {
	c := connect(t, config("script"))
	c.Request(context.Background(), &jsonrpc.Request{Method: "test/exit", Params: mustJSON(map[string]int{"code": 5})}, transport.RequestOptions{})
	state, err := c.Wait(context.Background())
	if state == nil || state.ExitCode() != 5 {
		t.Fatalf("Wait: %v, %v; want exit status 5", state, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if state2, _ := c.Wait(ctx); state2 != state {
		t.Fatal("a second Wait does not report the same exit")
	}
	if c.Pid() != state.Pid() {
		t.Fatalf("Pid %d, exited %d", c.Pid(), state.Pid())
	}
	_ = os.Getpid
}

// Callers waiting without the baton reuse their response timers from
// request to request: a timer reused with a shorter timeout still fires at
// it, and one stopped after a short timeout does not fail a later request
// with a longer one.
func TestReusedTimeoutsFireOnlyWhenDue(t *testing.T) {
	c := connect(t, config("script"))
	const callers = 32
	run := func(f func(g, i int) error) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, callers)
		for g := range callers {
			wg.Go(func() {
				for i := range 10 {
					if err := f(g, i); err != nil {
						errs <- fmt.Errorf("caller %d request %d: %w", g, i, err)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	// A timer that does not fire leaves the request to this context: its
	// cancellation is -32603, not the timeout's -32001.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sleep := func(ms int, timeout time.Duration) error {
		_, err := c.Request(ctx, &jsonrpc.Request{Method: "test/sleep", Params: mustJSON(map[string]any{"ms": ms})},
			transport.RequestOptions{Timeout: timeout})
		return err
	}
	// Long timeouts, stopped before they fire.
	run(func(g, i int) error { return sleep(i%3, time.Minute) })
	// Short timeouts, some stopped before they fire, then longer ones.
	run(func(g, i int) error {
		if i%2 == 0 {
			sleep(0, 20*time.Millisecond) // may time out on a loaded machine
			return nil
		}
		return sleep(50, time.Minute)
	})
	// A timeout shorter than the one the timer last had.
	start := time.Now()
	time.AfterFunc(20*time.Second, cancel)
	run(func(g, i int) error {
		if i > 0 {
			return nil
		}
		err := sleep(600000, 30*time.Millisecond)
		if je := (*jsonrpc.Error)(nil); !errors.As(err, &je) || je.Code != jsonrpc.CodeRequestTimeout {
			return fmt.Errorf("error %v, want -32001", err)
		}
		return nil
	})
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the 30 ms timeouts took %v", d)
	}
}
