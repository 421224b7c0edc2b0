package stdio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/internal/transporttest"
	"github.com/snodo/snodo/transport/stdio"
)

// answer is a relayed test/answered notification: what the server got back
// for one of its requests.
type answer struct {
	ID     jsonrpc.ID      `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func answers(t *testing.T, ns []*jsonrpc.Notification) []answer {
	t.Helper()
	out := make([]answer, len(ns))
	for i, n := range ns {
		if err := json.Unmarshal(n.Params, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// "A caller that uses this transport directly without it gets -32601 for
// every server-to-client request."
func TestWithoutOnServerRequestEveryServerRequestGetsMethodNotFound(t *testing.T) {
	cfg, n := notedConfig("script")
	c := connect(t, cfg)
	call(t, c, "test/ask", map[string]any{"method": "elicitation/create", "count": 3}, transport.RequestOptions{})
	for _, a := range answers(t, n.waitN(t, "test/answered", 3)) {
		if a.Error == nil || a.Error.Code != jsonrpc.CodeMethodNotFound {
			t.Fatalf("answer %+v, want -32601", a)
		}
	}
}

// ":on_server_request - a function of one argument that answers a request
// the server sends to the client ... The connection process runs it in a
// linked process, one per request, and writes the response it returns"
func TestOnServerRequestAnswersEachServerRequest(t *testing.T) {
	cfg, n := notedConfig("script")
	cfg.OnServerRequest = func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		switch req.ID.String() {
		case "s0":
			return json.RawMessage(`{"action":"accept"}`), nil
		case "s1":
			return nil, &jsonrpc.Error{Code: -32042, Message: "url needed", Data: json.RawMessage(`{"u":1}`)}
		default:
			return nil, errors.New("plain failure")
		}
	}
	c := connect(t, cfg)
	call(t, c, "test/ask", map[string]any{"method": "elicitation/create", "count": 3}, transport.RequestOptions{})
	got := map[string]answer{}
	for _, a := range answers(t, n.waitN(t, "test/answered", 3)) {
		got[a.ID.String()] = a
	}
	if a := got["s0"]; string(a.Result) != `{"action":"accept"}` {
		t.Errorf("s0: %+v", a)
	}
	if a := got["s1"]; a.Error == nil || a.Error.Code != -32042 || a.Error.Message != "url needed" {
		t.Errorf("s1: %+v", a)
	}
	if a := got["s2"]; a.Error == nil || a.Error.Code != jsonrpc.CodeInternalError || a.Error.Message != "plain failure" {
		t.Errorf("s2: %+v", a)
	}
}

// "a function that raises is answered with -32603."
func TestServerRequestFunctionThatPanicsIsAnsweredInternalError(t *testing.T) {
	cfg, n := notedConfig("script")
	cfg.OnServerRequest = func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		panic("handler bug")
	}
	c := connect(t, cfg)
	call(t, c, "test/ask", map[string]any{"method": "sampling/createMessage", "count": 2}, transport.RequestOptions{})
	for _, a := range answers(t, n.waitN(t, "test/answered", 2)) {
		if a.Error == nil || a.Error.Code != jsonrpc.CodeInternalError {
			t.Fatalf("answer %+v, want -32603", a)
		}
	}
	// The connection is unharmed.
	call(t, c, "echo", nil, transport.RequestOptions{})
}

// ":max_server_requests - the most server-to-client requests whose handlers
// run at once, default 16. A request over the limit is answered with -32603
// without running the handler."
func TestServerRequestOverLimitAnsweredWithoutRunningFunction(t *testing.T) {
	release := make(chan struct{})
	var ran atomic.Int32
	const limit = 16 // the default, and the limit of Config.OnServerRequest
	cfg, n := notedConfig("script")
	cfg.OnServerRequest = func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		ran.Add(1)
		<-release
		return json.RawMessage(`{"ran":true}`), nil
	}
	c := connect(t, cfg)
	call(t, c, "test/ask", map[string]any{"method": "roots/list", "count": limit + 3}, transport.RequestOptions{})
	over := answers(t, n.waitN(t, "test/answered", 3))
	for _, a := range over {
		if a.Error == nil || a.Error.Code != jsonrpc.CodeInternalError {
			t.Fatalf("answer over the limit %+v, want -32603", a)
		}
	}
	// The admitted ones hold their slots until released; their functions
	// start soon after.
	for wait := time.Now().Add(30 * time.Second); ran.Load() < limit && time.Now().Before(wait); {
		time.Sleep(time.Millisecond)
	}
	if got := ran.Load(); got != limit {
		t.Fatalf("function ran %d times, want %d (the limit)", got, limit)
	}
	close(release)
	all := answers(t, n.waitN(t, "test/answered", limit+3))
	for _, a := range all[3:] {
		if string(a.Result) != `{"ran":true}` {
			t.Fatalf("answer %+v", a)
		}
	}
}

// "max_server_requests ... default 16": a flood of 10,000 server-to-client
// requests never has more than 16 functions running, every request gets
// exactly one answer, and memory stays bounded (no goroutine or buffer per
// waiting request).
func TestFloodOfServerRequestsBoundedByDefaultLimit(t *testing.T) {
	const flood = 10000
	var running, peak, ran atomic.Int64
	var peakGoroutines atomic.Int64
	cfg, n := notedConfig("script")
	cfg.OnServerRequest = func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		now := running.Add(1)
		defer running.Add(-1)
		ran.Add(1)
		for {
			p := peak.Load()
			if now <= p || peak.CompareAndSwap(p, now) {
				break
			}
		}
		if g := int64(runtime.NumGoroutine()); g > peakGoroutines.Load() {
			peakGoroutines.Store(g)
		}
		runtime.Gosched()
		return json.RawMessage(`{}`), nil
	}
	base := runtime.NumGoroutine()
	c := connect(t, cfg)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	call(t, c, "test/ask", map[string]any{"method": "ping", "count": flood}, transport.RequestOptions{})
	seen := make(map[string]int, flood)
	okCount, overCount := 0, 0
	for _, a := range answers(t, n.waitN(t, "test/answered", flood)) {
		seen[a.ID.String()]++
		switch {
		case a.Error == nil:
			okCount++
		case a.Error.Code == jsonrpc.CodeInternalError:
			overCount++
		default:
			t.Fatalf("answer %+v", a)
		}
	}
	for i := range flood {
		if k := seen[fmt.Sprintf("s%d", i)]; k != 1 {
			t.Fatalf("request s%d answered %d times", i, k)
		}
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	t.Logf("%d ran, %d answered -32603 over the limit; peak %d running, %d goroutines (base %d); heap %d→%d KiB",
		okCount, overCount, peak.Load(), peakGoroutines.Load(), base, before.HeapAlloc>>10, after.HeapAlloc>>10)
	if p := peak.Load(); p > 16 {
		t.Fatalf("%d functions ran at once, want at most 16", p)
	}
	if int64(okCount) != ran.Load() {
		t.Fatalf("%d success answers, %d runs", okCount, ran.Load())
	}
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 64<<20 {
		t.Fatalf("heap grew by %d bytes during the flood", grown)
	}
	// Goroutines that released their slot may not have exited yet, and the
	// connection has a few of its own: the bound is loose, but a flood that
	// started a goroutine per request would show thousands.
	if g := peakGoroutines.Load(); g > int64(base)+16+100 {
		t.Fatalf("%d goroutines during the flood (base %d): not bounded by the limit", g, base)
	}
}

// "When the connection stops, through close/1 or the owner's exit, handlers
// still running for server-to-client requests are killed and their answers
// are not sent."
func TestStopCancelsRunningServerRequestsAndDropsAnswers(t *testing.T) {
	for _, how := range []string{"close", "owner"} {
		t.Run(how, func(t *testing.T) {
			started := make(chan struct{}, 2)
			cancelled := make(chan error, 2)
			cfg := config("script")
			cfg.OnServerRequest = func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
				started <- struct{}{}
				<-ctx.Done()
				cancelled <- context.Cause(ctx)
				return json.RawMessage(`{"late":true}`), nil
			}
			owner, cancelOwner := context.WithCancel(context.Background())
			defer cancelOwner()
			c, err := stdio.Connect(owner, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { shutdown(t, c, 10*time.Second) })
			call(t, c, "test/ask", map[string]any{"method": "elicitation/create", "count": 2}, transport.RequestOptions{})
			transporttest.Recv(t, started, "started")
			transporttest.Recv(t, started, "started")
			if how == "close" {
				c.Close()
			} else {
				cancelOwner()
			}
			for range 2 {
				if cause := transporttest.Recv(t, cancelled, "cancelled"); !errors.Is(cause, transport.ErrConnection) {
					t.Fatalf("function's context ended with %v, want the connection's end", cause)
				}
			}
			// The server exits with status 4 if a "late" answer reached it.
			if state, _ := c.Wait(context.Background()); state.ExitCode() != 0 {
				t.Fatalf("server ended with %v: an answer was sent after the connection stopped", state)
			}
		})
	}
}

// freeBatonConn returns a connection on which the next Request reads
// stdout itself (holdingConn, once the background reader has let the baton
// go), with the watch delay back at a millisecond.
func freeBatonConn(t *testing.T, cfg stdio.Config) *stdio.Conn {
	t.Helper()
	c := holdingConn(t, cfg)
	stdio.SetWatchDelay(c, time.Millisecond)
	return c
}

// inCaller reports whether the running goroutine is a caller of Request.
func inCaller() bool {
	buf := make([]byte, 64<<10)
	return bytes.Contains(buf[:runtime.Stack(buf, false)], []byte("stdio.(*Conn).Request"))
}

// A server request read by the caller waiting for its response, with no
// other call in flight, runs in that caller's goroutine (no goroutine is
// started or woken for it), with the caller's deadline in its context; the
// background reader reads meanwhile, so a handler that waits for a later
// message gets it.
func TestServerRequestRunsInTheWaitingCaller(t *testing.T) {
	n := newNotes()
	after := make(chan struct{})
	var once sync.Once
	cfg := config("script")
	cfg.OnNotification = func(x *jsonrpc.Notification) {
		if x.Method == "test/after" {
			once.Do(func() { close(after) })
		}
		n.hook(x)
	}
	type seen struct {
		inCaller    bool
		hasDeadline bool
		gotAfter    bool
	}
	seenc := make(chan seen, 1)
	cfg.OnServerRequest = func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		s := seen{inCaller: inCaller()}
		_, s.hasDeadline = ctx.Deadline()
		select {
		case <-after: // read by another goroutine while this one waits
			s.gotAfter = true
		case <-time.After(5 * time.Second):
		}
		seenc <- s
		return json.RawMessage(`{"action":"accept"}`), nil
	}
	c := freeBatonConn(t, cfg)
	call(t, c, "test/ask", map[string]any{"method": "elicitation/create", "count": 1, "before": true},
		transport.RequestOptions{Timeout: 30 * time.Second})
	if s := transporttest.Recv(t, seenc, "seenc"); !s.inCaller || !s.hasDeadline || !s.gotAfter {
		t.Fatalf("handler saw %+v, want it run in the caller, with its deadline, while another goroutine read on", s)
	}
	if a := answers(t, n.waitN(t, "test/answered", 1)); string(a[0].Result) != `{"action":"accept"}` {
		t.Fatalf("answer %+v", a[0])
	}

	// With no call in flight, the background reader reads the request and
	// the handler runs in a goroutine of its own, without a deadline.
	n2 := newNotes()
	cfg.OnNotification = n2.hook
	cfg.OnServerRequest = func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		_, dl := ctx.Deadline()
		seenc <- seen{inCaller: inCaller(), hasDeadline: dl}
		return json.RawMessage(`{}`), nil
	}
	c2 := connect(t, cfg) // the background reader holds the baton until a response
	call(t, c2, "test/ask", map[string]any{"method": "roots/list", "count": 1}, transport.RequestOptions{})
	if s := transporttest.Recv(t, seenc, "seenc"); s.inCaller || s.hasDeadline {
		t.Fatalf("handler saw %+v, want its own goroutine without a deadline", s)
	}
}

// The caller cannot return before a server request it runs does: the
// request's context ends at the caller's deadline, and the server still
// gets its answer (an error).
func TestServerRequestInTheCallerEndsAtItsDeadline(t *testing.T) {
	cfg, n := notedConfig("script")
	errc := make(chan error, 1)
	cfg.OnServerRequest = func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		<-ctx.Done()
		errc <- ctx.Err()
		return nil, ctx.Err()
	}
	c := freeBatonConn(t, cfg)
	start := time.Now()
	resp, err := c.Request(context.Background(), &jsonrpc.Request{Method: "test/ask",
		Params: mustJSON(map[string]any{"method": "elicitation/create", "count": 1, "before": true})},
		transport.RequestOptions{Timeout: 300 * time.Millisecond})
	took := time.Since(start)
	if herr := transporttest.Recv(t, errc, "errc"); !errors.Is(herr, context.DeadlineExceeded) {
		t.Fatalf("handler's context ended with %v, want the caller's deadline", herr)
	}
	// The response arrived before the deadline (read by the background
	// reader), so the call itself succeeds once the handler returns.
	if err != nil || resp.Error != nil {
		t.Fatalf("call: %v %v", err, resp)
	}
	if took < 300*time.Millisecond || took > 5*time.Second {
		t.Fatalf("call took %v, want it held until the handler returned at the 300ms deadline", took)
	}
	a := answers(t, n.waitN(t, "test/answered", 1))
	if a[0].Error == nil || a[0].Error.Code != jsonrpc.CodeInternalError {
		t.Fatalf("answer %+v, want -32603", a[0])
	}
}
