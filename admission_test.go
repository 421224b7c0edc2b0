package snodo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/internal/clienthook"
	"github.com/snodo/snodo/internal/subbuf"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// inputRequests returns an input_required result asking n roots/list
// input requests, keyed r0 … r(n-1).
func inputRequests(n int) string {
	var b strings.Builder
	b.WriteString(`{"resultType":"input_required","inputRequests":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"r%d":{"method":"roots/list","params":{}}`, i)
	}
	b.WriteString(`}}`)
	return b.String()
}

// peakCounter records the most handlers running at once, and the most
// goroutines seen while they ran.
type peakCounter struct {
	running, peak, goroutines atomic.Int64
	calls                     atomic.Int64
}

func (p *peakCounter) enter() {
	p.calls.Add(1)
	r := p.running.Add(1)
	for old := p.peak.Load(); r > old && !p.peak.CompareAndSwap(old, r); old = p.peak.Load() {
	}
	g := int64(runtime.NumGoroutine())
	for old := p.goroutines.Load(); g > old && !p.goroutines.CompareAndSwap(old, g); old = p.goroutines.Load() {
	}
}

func (p *peakCounter) leave() { p.running.Add(-1) }

// 10,000 input requests in one result, and as many again in a second call
// at the same time: at most Options.MaxServerRequests handlers run at once,
// across both calls; the goroutines and the heap stay bounded (a worker
// pool, not a goroutine per input); every input is answered exactly once.
func TestInputRoundUnderTheLimit(t *testing.T) {
	const (
		n     = 10000
		limit = 4
	)
	var pc peakCounter
	h := snodo.HandlerFunc(func(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
		pc.enter()
		defer pc.leave()
		runtime.Gosched()
		return json.RawMessage(`{"roots":[]}`), nil
	})
	ask := inputRequests(n)
	c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		if fc.param("inputResponses") == nil {
			return result(fc, ask)
		}
		return result(fc, `{"content":[]}`)
	}, &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodRootsList: h}, MaxServerRequests: limit})

	baseline := int64(runtime.NumGoroutine())
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := c.CallTool(context.Background(), "t", nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	t.Logf("peak %d handlers, %d goroutines (baseline %d), heap in use %d KiB more, %d calls",
		pc.peak.Load(), pc.goroutines.Load(), baseline, (int64(after.HeapAlloc)-int64(before.HeapAlloc))>>10, pc.calls.Load())
	if got := pc.peak.Load(); got > limit {
		t.Errorf("peak %d handlers at once, over the limit %d", got, limit)
	}
	// Two callers, each with at most limit workers, plus slack for the
	// runtime's own.
	if got, max := pc.goroutines.Load(), baseline+2+2*limit+8; got > max {
		t.Errorf("%d goroutines while the inputs ran, more than %d", got, max)
	}
	if growth := int64(after.HeapAlloc) - int64(before.HeapAlloc); growth > 64<<20 {
		t.Errorf("heap grew by %d MiB", growth>>20)
	}
	if got := pc.calls.Load(); got != 2*n {
		t.Errorf("handlers ran %d times, want %d", got, 2*n)
	}
	for _, fc := range f.sent("tools/call") {
		if fc.param("inputResponses") == nil {
			continue
		}
		var answered map[string]json.RawMessage
		if err := json.Unmarshal(fc.param("inputResponses"), &answered); err != nil {
			t.Fatal(err)
		}
		if len(answered) != n {
			t.Errorf("%d input responses, want %d", len(answered), n)
		}
	}
}

// blockingRoots answers roots/list only when its context ends, and counts
// the handlers that have started and returned.
type blockingRoots struct {
	started, returned atomic.Int64
	pc                peakCounter
	first             chan struct{}
	once              sync.Once
}

func newBlockingRoots() *blockingRoots { return &blockingRoots{first: make(chan struct{})} }

func (b *blockingRoots) HandleRequest(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
	b.started.Add(1)
	defer b.returned.Add(1)
	b.pc.enter()
	defer b.pc.leave()
	b.once.Do(func() { close(b.first) })
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

// inputRoundEnds starts callers calls whose input rounds block, ends them
// with end, and checks that every caller returns exactly once within a
// second, with an error that check accepts, and that no goroutine is left.
func inputRoundEnds(t *testing.T, opts *snodo.Options, callOpts []snodo.CallOption, end func(c *snodo.Client, f *fake, cancel context.CancelFunc), check func(error) bool) {
	t.Helper()
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const callers, inputs, limit = 3, 50, 4
	b := newBlockingRoots()
	ask := inputRequests(inputs)
	f := newFake(t, modernServer(func(fc *fakeCall) *jsonrpc.Response {
		if fc.param("inputResponses") == nil {
			return result(fc, ask)
		}
		return result(fc, `{"content":[]}`)
	}))
	o := snodo.Options{}
	if opts != nil {
		o = *opts
	}
	o.Handlers = map[string]snodo.Handler{abi.MethodRootsList: b}
	o.MaxServerRequests = limit
	c, err := snodo.Connect(context.Background(), f, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	results := make(chan error, 2*callers)
	for range callers {
		go func() {
			_, err := c.CallTool(ctx, "t", nil, callOpts...)
			results <- err
		}()
	}
	<-b.first
	ended := time.Now()
	end(c, f, cancel)
	for range callers {
		select {
		case err := <-results:
			if !check(err) {
				t.Errorf("caller returned %v", err)
			}
		case <-time.After(time.Second + time.Until(ended.Add(time.Second))):
			t.Fatal("a caller did not return within a second")
		}
	}
	if since := time.Since(ended); since > time.Second {
		t.Errorf("the callers took %v to return", since)
	}
	select {
	case err := <-results:
		t.Fatalf("a caller returned twice: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if got := b.pc.peak.Load(); got > limit {
		t.Errorf("%d handlers ran at once, over the limit %d", got, limit)
	}
	for deadline := time.Now().Add(time.Second); b.returned.Load() != b.started.Load(); {
		if time.Now().After(deadline) {
			t.Fatalf("%d handlers started, %d returned", b.started.Load(), b.returned.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// Close during an input round: every caller returns a -32000 error (one
// whose round was running wraps ErrClientClosed), the handlers are
// cancelled, nothing is left running.
func TestInputRoundEndsWithClose(t *testing.T) {
	var closedInRound atomic.Int32
	inputRoundEnds(t, nil, nil, func(c *snodo.Client, _ *fake, _ context.CancelFunc) { c.Close() },
		func(err error) bool {
			if errors.Is(err, snodo.ErrClientClosed) {
				closedInRound.Add(1)
			}
			return errors.Is(err, transport.ErrConnection)
		})
	if closedInRound.Load() == 0 {
		t.Error("no caller's error wraps ErrClientClosed")
	}
}

// The call's timeout bounds its input round: -32001, as the legacy era's
// request times out while its server request's handler runs.
func TestInputRoundEndsWithTimeout(t *testing.T) {
	inputRoundEnds(t, nil, []snodo.CallOption{snodo.WithTimeout(300 * time.Millisecond)},
		func(*snodo.Client, *fake, context.CancelFunc) {},
		func(err error) bool {
			var e *snodo.Error
			return errors.Is(err, transport.ErrTimeout) && errors.As(err, &e) && e.Code == jsonrpc.CodeRequestTimeout
		})
}

// The call's total deadline (WithMaxTotalTimeout) bounds its input rounds
// too.
func TestInputRoundEndsWithMaxTotalTimeout(t *testing.T) {
	inputRoundEnds(t, nil, []snodo.CallOption{snodo.WithTimeout(time.Hour), snodo.WithMaxTotalTimeout(300 * time.Millisecond)},
		func(*snodo.Client, *fake, context.CancelFunc) {},
		func(err error) bool { return errors.Is(err, transport.ErrMaxTotalTimeout) })
}

// The caller's cancellation ends its input round.
func TestInputRoundEndsWithCallerCancellation(t *testing.T) {
	inputRoundEnds(t, nil, nil, func(_ *snodo.Client, _ *fake, cancel context.CancelFunc) { cancel() },
		func(err error) bool { return errors.Is(err, context.Canceled) })
}

// endingFake is a fake transport that can say its connection stopped, as
// stdio does.
type endingFake struct {
	*fake
	done chan struct{}
	err  atomic.Pointer[jsonrpc.Error]
}

func (e *endingFake) Done() <-chan struct{} { return e.done }
func (e *endingFake) Err() error {
	if err := e.err.Load(); err != nil {
		return err
	}
	return nil
}

// The end of the connection ends the input round: every caller returns the
// connection's -32000 error.
func TestInputRoundEndsWithTheConnection(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	b := newBlockingRoots()
	ask := inputRequests(20)
	e := &endingFake{done: make(chan struct{})}
	e.fake = newFake(t, modernServer(func(fc *fakeCall) *jsonrpc.Response {
		return result(fc, ask)
	}))
	c, err := snodo.Connect(context.Background(), e, &snodo.Options{
		Handlers: map[string]snodo.Handler{abi.MethodRootsList: b},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res := make(chan error, 1)
	go func() {
		_, err := c.CallTool(context.Background(), "t", nil)
		res <- err
	}()
	<-b.first
	e.err.Store(transport.ConnectionError("server exited", nil))
	close(e.done)
	select {
	case err := <-res:
		if !errors.Is(err, transport.ErrConnection) || !strings.Contains(err.Error(), "server exited") {
			t.Errorf("caller returned %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("the caller did not return within a second")
	}
}

// Legacy server requests and the handlers they run end with Close too.
func TestLegacyServerRequestEndsWithClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	b := newBlockingRoots()
	c, f := connectLegacy(t, noMore, &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodRootsList: b}})
	res := make(chan *jsonrpc.Response, 1)
	go func() { res <- f.serverRequest(context.Background(), 1, "roots/list", `{}`) }()
	<-b.first
	c.Close()
	select {
	case r := <-res:
		if r.Error == nil {
			t.Errorf("answer %+v", r)
		}
	case <-time.After(time.Second):
		t.Fatal("the handler did not end within a second of Close")
	}
}

// progressConsumer is Options whose progress consumer is f.
func progressConsumer(f func(ctx context.Context, params json.RawMessage) error) *snodo.Options {
	var opts snodo.Options
	clienthook.SetProgressConsumer(&opts, f)
	return &opts
}

// clienthook.SetProgressConsumer: every call asks for progress; the consumer gets the
// raw params with the progressToken, which the transport is also given
// explicitly (no re-reading of params), before any WithProgress function;
// its error cancels the call and is the call's error.
func TestProgressConsumerSeesEveryCallsRawProgress(t *testing.T) {
	var (
		raw   []string
		shown []snodo.Progress
	)
	stop := errors.New("consumer says stop")
	c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		tok := string(fc.meta("progressToken"))
		if tok == "" {
			return errorResponse(fc, -1, "no progress token", "")
		}
		if got := string(fc.Opts.ProgressToken.AppendJSON(nil)); got != tok {
			return errorResponse(fc, -1, "RequestOptions.ProgressToken "+got+" is not "+tok, "")
		}
		for i := 1; i <= 2; i++ {
			if err := fc.progress(fmt.Sprintf(`{"progressToken":%s,"progress":%d}`, tok, i)); err != nil {
				// A transport cancels and returns err; the fake says it.
				return errorResponse(fc, -1, "progress function failed: "+err.Error(), "")
			}
		}
		return result(fc, `{"content":[]}`)
	}, progressConsumer(func(ctx context.Context, params json.RawMessage) error {
		raw = append(raw, string(params))
		if strings.Contains(string(params), `"progress":2`) && len(shown) > 0 {
			return stop
		}
		return nil
	}))
	if _, err := c.CallTool(context.Background(), "plain", nil); err != nil {
		t.Fatal(err)
	}
	if len(raw) != 2 || !strings.Contains(raw[0], `"progressToken":"snodo-`) {
		t.Fatalf("consumer saw %q", raw)
	}
	_, err := c.CallTool(context.Background(), "shown", nil, snodo.WithTimeout(time.Second),
		snodo.WithProgress(func(p snodo.Progress) { shown = append(shown, p) }))
	if err == nil || !strings.Contains(err.Error(), stop.Error()) {
		t.Fatalf("CallTool: %v", err)
	}
	if len(shown) != 1 || len(raw) != 4 {
		t.Errorf("shown %d, consumer saw %d", len(shown), len(raw))
	}
	_ = f
}

// clienthook.SetEventConsumer: every subscription's events pass through the consumer
// before Next returns them; its stop ends the subscription cleanly.
func TestEventConsumerSeesEverySubscription(t *testing.T) {
	var seen []string
	var opts snodo.Options
	clienthook.SetEventConsumer(&opts, func(ctx context.Context, method string, params json.RawMessage) (bool, error) {
		seen = append(seen, method)
		return method == "notifications/resources/list_changed", nil
	})
	c, f := connectModern(t, noMore, &opts)
	f.listen = func(req *jsonrpc.Request, sub *subbuf.Buffer[transport.Event]) (json.RawMessage, error) {
		sub.Push(transport.Event{Method: "notifications/tools/list_changed", Params: json.RawMessage(`{}`)})
		sub.Push(transport.Event{Method: "notifications/resources/list_changed", Params: json.RawMessage(`{}`)})
		sub.Push(transport.Event{Method: "notifications/prompts/list_changed", Params: json.RawMessage(`{}`)})
		return json.RawMessage(`{"notifications":{"toolsListChanged":true,"resourcesListChanged":true,"promptsListChanged":true}}`), nil
	}
	ctx := context.Background()
	_, sub, err := c.Listen(ctx, snodo.SubscriptionFilter{ToolsListChanged: true, ResourcesListChanged: true, PromptsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ev, err := sub.Next(ctx)
	if err != nil || ev.Method != "notifications/tools/list_changed" {
		t.Fatalf("first event %v, %v", ev, err)
	}
	if _, err := sub.Next(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("after the consumer's stop: %v, want io.EOF", err)
	}
	if len(seen) != 2 {
		t.Errorf("consumer saw %v", seen)
	}
}
