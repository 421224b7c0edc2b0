package snodo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	nethttp "net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/internal/subbuf"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// fakeClock is a settable clock for the result cache.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// listServer answers the cacheable methods with a counter in each result,
// so that a test sees whether a result came from the server, and with the
// caching hints hints (e.g. `"ttlMs":1000,"cacheScope":"public"`).
func listServer(hints *atomic.Value, served *atomic.Int64) func(fc *fakeCall) *jsonrpc.Response {
	return func(fc *fakeCall) *jsonrpc.Response {
		n := served.Add(1)
		h := hints.Load().(string)
		if h != "" {
			h = "," + h
		}
		switch fc.Req.Method {
		case "tools/list":
			var cursor string
			_ = json.Unmarshal(fc.param("cursor"), &cursor)
			return result(fc, fmt.Sprintf(`{"tools":[{"name":"t%d-%s","inputSchema":{"type":"object"}}]%s}`, n, cursor, h))
		case "prompts/list":
			return result(fc, fmt.Sprintf(`{"prompts":[{"name":"p%d"}]%s}`, n, h))
		case "resources/list":
			return result(fc, fmt.Sprintf(`{"resources":[{"uri":"demo://r%d","name":"r"}]%s}`, n, h))
		case "resources/templates/list":
			return result(fc, fmt.Sprintf(`{"resourceTemplates":[{"uriTemplate":"demo://{x}%d","name":"t"}]%s}`, n, h))
		case "resources/read":
			var uri string
			_ = json.Unmarshal(fc.param("uri"), &uri)
			return result(fc, fmt.Sprintf(`{"contents":[{"uri":%q,"text":"v%d"}]%s}`, uri, n, h))
		}
		return noMore(fc)
	}
}

func cacheClient(t *testing.T, legacy bool, hints string, opts ...*snodo.Options) (*snodo.Client, *fake, *atomic.Value, *atomic.Int64, *fakeClock) {
	t.Helper()
	var h atomic.Value
	h.Store(hints)
	served := new(atomic.Int64)
	var (
		c *snodo.Client
		f *fake
	)
	if legacy {
		c, f = connectLegacy(t, listServer(&h, served), opts...)
	} else {
		c, f = connectModern(t, listServer(&h, served), opts...)
	}
	clock := &fakeClock{now: time.Date(2026, 7, 28, 0, 0, 0, 0, time.UTC)}
	snodo.SetCacheClock(c, clock.Now)
	served.Store(0)
	return c, f, &h, served, clock
}

func firstTool(t *testing.T, c *snodo.Client, cursor string, opts ...snodo.CallOption) string {
	t.Helper()
	res, err := snodo.ListTools(c, context.Background(), cursor, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools[0].Name
}

// caching.mdx: "the client SHOULD consider the result fresh for that many
// milliseconds after receiving the response"; "now < t_received + ttlMs".
func TestCacheHitWithinTTLMissAfter(t *testing.T) {
	c, _, _, served, clock := cacheClient(t, false, `"ttlMs":1000,"cacheScope":"public"`)
	a := firstTool(t, c, "")
	clock.advance(999 * time.Millisecond)
	res, err := snodo.ListTools(c, context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Tools[0].Name != a || served.Load() != 1 {
		t.Fatalf("within the ttl: %s from %d requests, want %s from 1", res.Tools[0].Name, served.Load(), a)
	}
	if !res.Fresh(clock.Now()) || res.TTL() != time.Second || res.Scope != "public" {
		t.Errorf("a cached result keeps its hints and receipt time: %+v", res.Cache)
	}
	// Mutating a result does not reach the cache.
	res.Tools[0].Name = "changed"
	res.Tools[0].InputSchema[0] = 'X'
	again, err := snodo.ListTools(c, context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if again.Tools[0].Name != a || string(again.Tools[0].InputSchema) != `{"type":"object"}` {
		t.Errorf("cached result was shared with a caller: %s %s", again.Tools[0].Name, again.Tools[0].InputSchema)
	}
	clock.advance(time.Millisecond) // now == t_received + ttlMs: stale
	if b := firstTool(t, c, ""); b == a || served.Load() != 2 {
		t.Errorf("after the ttl: %s from %d requests", b, served.Load())
	}
}

// "A cached response is identified by the request method together with the
// request parameters that affect the result (the uri for resources/read,
// the cursor for paginated list requests)".
func TestCacheKeyedByMethodCursorAndURI(t *testing.T) {
	c, _, _, served, _ := cacheClient(t, false, `"ttlMs":60000,"cacheScope":"private"`)
	ctx := context.Background()
	p1 := firstTool(t, c, "")
	p2 := firstTool(t, c, "page2")
	if p1 == p2 || firstTool(t, c, "") != p1 || firstTool(t, c, "page2") != p2 {
		t.Error("pages not cached apart")
	}
	read := func(uri string) string {
		r, err := c.ReadResource(ctx, uri)
		if err != nil {
			t.Fatal(err)
		}
		return *r.Contents[0].Text
	}
	a, b := read("demo://a"), read("demo://b")
	if a == b || read("demo://a") != a || read("demo://b") != b {
		t.Error("resources/read not cached per uri")
	}
	for _, f := range []func() error{
		func() error { _, err := snodo.ListPrompts(c, ctx, ""); return err },
		func() error { _, err := snodo.ListResources(c, ctx, ""); return err },
		func() error { _, err := snodo.ListResourceTemplates(c, ctx, ""); return err },
	} {
		before := served.Load()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		if err := f(); err != nil {
			t.Fatal(err)
		}
		if served.Load() != before+1 {
			t.Errorf("a list was fetched %d times, want once", served.Load()-before)
		}
	}
	if served.Load() != 7 {
		t.Errorf("%d requests, want 7", served.Load())
	}
	// WithoutCache asks the server, and its result replaces the cached one.
	fresh := firstTool(t, c, "", snodo.WithoutCache())
	if fresh == p1 || firstTool(t, c, "") != fresh {
		t.Errorf("WithoutCache: %s, then %s", fresh, firstTool(t, c, ""))
	}
}

// "If ttlMs is 0 / absent / negative": stale at once. cacheScope "public"
// and "private" are both kept by a client (one authorization context); an
// unknown scope is not.
func TestCacheNoTTLAndScopes(t *testing.T) {
	for _, tc := range []struct {
		hints string
		kept  bool
	}{
		{``, false},
		{`"ttlMs":0,"cacheScope":"public"`, false},
		{`"ttlMs":-5,"cacheScope":"public"`, false},
		{`"cacheScope":"public"`, false},
		{`"ttlMs":5000,"cacheScope":"public"`, true},
		{`"ttlMs":5000,"cacheScope":"private"`, true},
		{`"ttlMs":5000`, true},
		{`"ttlMs":5000,"cacheScope":"shared"`, false},
		{`"ttlMs":9223372036854775807,"cacheScope":"public"`, true},
	} {
		c, _, _, served, _ := cacheClient(t, false, tc.hints)
		a, b := firstTool(t, c, ""), firstTool(t, c, "")
		if kept := a == b && served.Load() == 1; kept != tc.kept {
			t.Errorf("hints {%s}: kept %v, want %v", tc.hints, kept, tc.kept)
		}
	}
}

// "When a relevant notification is received while a cached response is
// still fresh, the notification invalidates the cached response": a legacy
// notification and a subscription event (Listen) in the 2026-07-28 era.
func TestCacheInvalidatedByEvents(t *testing.T) {
	ctx := context.Background()
	c, f, _, served, _ := cacheClient(t, false, `"ttlMs":60000,"cacheScope":"public"`)
	fill := func() map[string]string {
		out := map[string]string{}
		out["tools"] = firstTool(t, c, "")
		out["tools2"] = firstTool(t, c, "next")
		p, _ := snodo.ListPrompts(c, ctx, "")
		out["prompts"] = p.Prompts[0].Name
		r, _ := snodo.ListResources(c, ctx, "")
		out["resources"] = r.Resources[0].URI
		tp, _ := snodo.ListResourceTemplates(c, ctx, "")
		out["templates"] = tp.ResourceTemplates[0].URITemplate
		for _, u := range []string{"demo://dir", "demo://dir/file", "demo://other"} {
			rr, _ := c.ReadResource(ctx, u)
			out[u] = *rr.Contents[0].Text
		}
		return out
	}
	changed := func(before, after map[string]string) []string {
		var keys []string
		for _, k := range []string{"tools", "tools2", "prompts", "resources", "templates", "demo://dir", "demo://dir/file", "demo://other"} {
			if before[k] != after[k] {
				keys = append(keys, k)
			}
		}
		return keys
	}
	// Events arrive through a subscription: the test pushes them while the
	// subscription is open.
	var push func(method, params string)
	f.listen = func(req *jsonrpc.Request, sub *subbuf.Buffer[transport.Event]) (json.RawMessage, error) {
		sub.Push(transport.Event{Method: "notifications/prompts/list_changed", Params: json.RawMessage(`{}`)}) // before the observer
		push = func(m, p string) { sub.Push(transport.Event{Method: m, Params: json.RawMessage(p)}) }
		return json.RawMessage(`{"notifications":{"toolsListChanged":true}}`), nil
	}
	before := fill()
	n := served.Load()
	if again := fill(); len(changed(before, again)) != 0 || served.Load() != n {
		t.Fatalf("not cached: %v", changed(before, again))
	}
	_, sub, err := c.Listen(ctx, snodo.SubscriptionFilter{ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	after := fill()
	if got := changed(before, after); fmt.Sprint(got) != "[prompts]" {
		t.Errorf("an event pushed before Listen returned invalidated %v, want [prompts]", got)
	}
	for _, step := range []struct{ method, params, want string }{
		{"notifications/tools/list_changed", `{}`, "[tools tools2]"},
		{"notifications/resources/list_changed", `{}`, "[resources templates]"},
		{"notifications/resources/updated", `{"uri":"demo://dir"}`, "[demo://dir demo://dir/file]"},
		{"notifications/resources/updated", `{"uri":"demo://other"}`, "[demo://other]"},
		{"notifications/message", `{"level":"info","data":"x"}`, "[]"},
	} {
		before = fill()
		push(step.method, step.params)
		after = fill()
		if got := fmt.Sprint(changed(before, after)); got != step.want {
			t.Errorf("event %s %s invalidated %s, want %s", step.method, step.params, got, step.want)
		}
	}
	// A notification outside any subscription invalidates too.
	before = fill()
	f.notify("notifications/prompts/list_changed", `{}`)
	if got := fmt.Sprint(changed(before, fill())); got != "[prompts]" {
		t.Errorf("notification invalidated %s", got)
	}
}

// The legacy versions have no caching hints: every call asks the server,
// and list-changed notifications still reach the hook.
func TestCacheLegacyEraCachesNothing(t *testing.T) {
	c, _, _, served, _ := cacheClient(t, true, `"ttlMs":60000,"cacheScope":"public"`)
	if a, b := firstTool(t, c, ""), firstTool(t, c, ""); a == b || served.Load() != 2 || snodo.CacheLen(c) != 0 {
		t.Errorf("legacy era cached: %s %s after %d requests", a, b, served.Load())
	}
}

// Options.NoResultCache turns it off; Options.ResultCacheMaxEntries and
// ResultCacheMaxBytes bound entries and bytes, least recently used first.
func TestCacheOffAndLimits(t *testing.T) {
	c, _, _, served, _ := cacheClient(t, false, `"ttlMs":60000,"cacheScope":"public"`, &snodo.Options{
		NoResultCache: true,
	})
	if a, b := firstTool(t, c, ""), firstTool(t, c, ""); a == b || served.Load() != 2 {
		t.Error("NoResultCache still cached")
	}

	c, _, _, served, _ = cacheClient(t, false, `"ttlMs":60000,"cacheScope":"public"`, &snodo.Options{
		ResultCacheMaxEntries: 2,
		ResultCacheMaxBytes:   1 << 20,
	})
	a := firstTool(t, c, "a")
	firstTool(t, c, "b")
	if firstTool(t, c, "a") != a { // a is now the most recently used
		t.Fatal("a not cached")
	}
	firstTool(t, c, "c") // evicts b
	if snodo.CacheLen(c) != 2 {
		t.Errorf("%d entries, limit 2", snodo.CacheLen(c))
	}
	n := served.Load()
	firstTool(t, c, "a")
	if served.Load() != n {
		t.Error("the most recently used entry was evicted")
	}
	firstTool(t, c, "b")
	if served.Load() != n+1 {
		t.Error("the least recently used entry was kept")
	}

	// A byte limit smaller than one result keeps nothing.
	c, _, _, _, _ = cacheClient(t, false, `"ttlMs":60000,"cacheScope":"public"`, &snodo.Options{
		ResultCacheMaxEntries: 100,
		ResultCacheMaxBytes:   64,
	})
	firstTool(t, c, "")
	if snodo.CacheLen(c) != 0 {
		t.Error("a result over the byte limit was kept")
	}
}

// "Results produced by retrying a request through the multi round-trip
// requests mechanism MUST NOT be cached"; "If a cursor becomes invalid ...
// discard all cached pages".
func TestCacheSkipsInputRoundsAndDropsPagesOnCursorError(t *testing.T) {
	var reads atomic.Int64
	c, _ := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		switch fc.Req.Method {
		case "resources/read":
			n := reads.Add(1)
			if fc.param("inputResponses") == nil {
				return result(fc, `{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create","params":`+elicitParams+`}}}`)
			}
			return result(fc, fmt.Sprintf(`{"contents":[{"uri":"demo://x","text":"%d"}],"ttlMs":60000,"cacheScope":"private"}`, n))
		case "tools/list":
			var cursor string
			_ = json.Unmarshal(fc.param("cursor"), &cursor)
			if cursor == "gone" {
				return errorResponse(fc, jsonrpc.CodeInvalidParams, "invalid cursor", "")
			}
			return result(fc, `{"tools":[],"ttlMs":60000,"cacheScope":"public"}`)
		}
		return noMore(fc)
	}, &snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: nameHandler}})
	ctx := context.Background()
	for range 2 {
		if _, err := c.ReadResource(ctx, "demo://x"); err != nil {
			t.Fatal(err)
		}
	}
	if reads.Load() != 4 || snodo.CacheLen(c) != 0 {
		t.Errorf("a result after input rounds was cached: %d reads, %d entries", reads.Load(), snodo.CacheLen(c))
	}
	for _, cur := range []string{"", "p2"} {
		if _, err := snodo.ListTools(c, ctx, cur); err != nil {
			t.Fatal(err)
		}
	}
	if snodo.CacheLen(c) != 2 {
		t.Fatalf("%d entries, want 2", snodo.CacheLen(c))
	}
	var e *snodo.Error
	if _, err := snodo.ListTools(c, ctx, "gone"); !errors.As(err, &e) || e.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("cursor error %v", err)
	}
	if snodo.CacheLen(c) != 0 {
		t.Errorf("%d pages kept after a cursor error", snodo.CacheLen(c))
	}
}

// Concurrent use: hits, misses and invalidations from many goroutines
// (run with -race).
func TestCacheConcurrentUse(t *testing.T) {
	c, f, _, _, _ := cacheClient(t, false, `"ttlMs":60000,"cacheScope":"public"`, &snodo.Options{
		ResultCacheMaxEntries: 4,
		ResultCacheMaxBytes:   1 << 20,
	})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				if _, err := snodo.ListTools(c, context.Background(), fmt.Sprint((i+j)%6)); err != nil {
					t.Error(err)
					return
				}
				if j%10 == 0 {
					f.notify("notifications/tools/list_changed", `{}`)
				}
			}
		})
	}
	wg.Wait()
	if n := snodo.CacheLen(c); n > 4 {
		t.Errorf("%d entries over the limit of 4", n)
	}
}

// Over HTTP, a -32020 on tools/call reads tools/list from the server even
// while the cached one is fresh: its x-mcp-header annotations may have
// changed (caching.mdx: a client MAY re-fetch before the TTL expires).
func TestCacheBypassedByHeaderMismatchRefresh(t *testing.T) {
	var mismatched bool
	srv := newMCPHTTPServer(t, func(req *jsonrpc.Request, h nethttp.Header) (int, string, nethttp.Header) {
		switch req.Method {
		case "server/discover":
			return 200, httpDiscoverResult, nil
		case "tools/list":
			return 200, `{"jsonrpc":"2.0","id":ID,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}],"ttlMs":600000,"cacheScope":"public"}}`, nil
		case "tools/call":
			if !mismatched {
				mismatched = true
				return 400, `{"jsonrpc":"2.0","id":ID,"error":{"code":-32020,"message":"header mismatch"}}`, nil
			}
		}
		return 200, `{"jsonrpc":"2.0","id":ID,"result":{"content":[]}}`, nil
	})
	c, err := snodo.Connect(context.Background(), httpTransport(t, srv.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for range 2 {
		if _, err := snodo.ListTools(c, ctx, ""); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(srv.requests("tools/list")); n != 1 {
		t.Fatalf("%d tools/list, want 1 (cached)", n)
	}
	if _, err := c.CallTool(ctx, "t", nil); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.requests("tools/list")); n != 2 {
		t.Errorf("%d tools/list after -32020, want 2: the refresh came from the cache", n)
	}
}
