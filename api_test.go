package snodo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
)

// optionsOf is the one *snodo.Options a test helper was given, or nil.
func optionsOf(opts []*snodo.Options) *snodo.Options {
	if len(opts) == 0 {
		return nil
	}
	return opts[0]
}

func connectModern(t *testing.T, next func(fc *fakeCall) *jsonrpc.Response, opts ...*snodo.Options) (*snodo.Client, *fake) {
	t.Helper()
	f := newFake(t, modernServer(next))
	c, err := snodo.Connect(context.Background(), f, optionsOf(opts))
	if err != nil {
		t.Fatal(err)
	}
	return c, f
}

func connectLegacy(t *testing.T, next func(fc *fakeCall) *jsonrpc.Response, opts ...*snodo.Options) (*snodo.Client, *fake) {
	t.Helper()
	f := newFake(t, legacyServer("2025-11-25", next))
	c, err := snodo.Connect(context.Background(), f, optionsOf(opts))
	if err != nil {
		t.Fatal(err)
	}
	return c, f
}

// "modern puts io.modelcontextprotocol/protocolVersion, clientInfo and
// clientCapabilities (and logLevel when asked) in every request's _meta".
func TestModernDialectPutsMetaInEveryRequest(t *testing.T) {
	c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		return result(fc, `{"resultType":"complete","content":[]}`)
	}, &snodo.Options{ClientInfo: snodo.Implementation{Name: "me", Version: "9"}})
	if _, err := c.CallTool(context.Background(), "a", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(context.Background(), "b", map[string]int{"x": 1}, snodo.WithLogLevel("warning")); err != nil {
		t.Fatal(err)
	}
	for i, fc := range append(f.sent("server/discover"), f.sent("tools/call")...) {
		// tools/call declares the tasks extension, which CallTool follows.
		caps := `{}`
		if fc.Req.Method == "tools/call" {
			caps = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
		}
		if string(fc.meta("io.modelcontextprotocol/protocolVersion")) != `"2026-07-28"` ||
			string(fc.meta("io.modelcontextprotocol/clientInfo")) != `{"name":"me","version":"9"}` ||
			string(fc.meta("io.modelcontextprotocol/clientCapabilities")) != caps {
			t.Errorf("request %d (%s) _meta: %s", i, fc.Req.Method, fc.param("_meta"))
		}
	}
	calls := f.sent("tools/call")
	if calls[0].meta("io.modelcontextprotocol/logLevel") != nil {
		t.Error("logLevel sent without being asked")
	}
	if string(calls[1].meta("io.modelcontextprotocol/logLevel")) != `"warning"` {
		t.Errorf("logLevel %s", calls[1].meta("io.modelcontextprotocol/logLevel"))
	}
	if string(calls[1].param("arguments")) != `{"x":1}` || string(calls[1].param("name")) != `"b"` {
		t.Errorf("params %s", calls[1].Req.Params)
	}
}

// "legacy does the handshake and nothing per request".
func TestLegacyDialectAddsNothingPerRequest(t *testing.T) {
	c, f := connectLegacy(t, func(fc *fakeCall) *jsonrpc.Response {
		return result(fc, `{"content":[{"type":"text","text":"hi"}]}`)
	})
	if _, err := c.CallTool(context.Background(), "a", nil); err != nil {
		t.Fatal(err)
	}
	if p := f.sent("tools/call")[0].param("_meta"); p != nil {
		t.Errorf("legacy request carries _meta %s", p)
	}
	if c.Server().Era != snodo.EraLegacy || c.Server().ProtocolVersion != "2025-11-25" {
		t.Errorf("dialect %v %s", c.Server().Era, c.Server().ProtocolVersion)
	}
}

// "treats an absent resultType as "complete" (an unknown resultType is an
// error)".
func TestModernResultType(t *testing.T) {
	rt := `{"content":[{"type":"text","text":"done"}]}`
	c, _ := connectModern(t, func(fc *fakeCall) *jsonrpc.Response { return result(fc, rt) })
	res, err := c.CallTool(context.Background(), "a", nil)
	if err != nil || res.Content[0].Text != "done" {
		t.Fatalf("absent resultType: %v %+v", err, res)
	}
	// Only the top-level member counts; spacing and escapes do not matter.
	for _, body := range []string{
		`{"content":[{"type":"text","text":"done","resultType":"odd"}]}`,
		`{ "resultType" : "complete" , "content":[{"type":"text","text":"done"}]}`,
		`{"resultType":"compl\u0065te","content":[{"type":"text","text":"done"}]}`,
	} {
		rt = body
		if res, err := c.CallTool(context.Background(), "a", nil); err != nil || res.Content[0].Text != "done" {
			t.Errorf("%s: %v", body, err)
		}
	}
	rt = `{"resultType":"task_pending","content":[]}`
	_, err = c.CallTool(context.Background(), "a", nil)
	var e *snodo.Error
	if !errors.As(err, &e) || e.Kind != jsonrpc.KindProtocol || !contains(err.Error(), "task_pending") {
		t.Errorf("unknown resultType: err %v", err)
	}
}

// "Client capabilities are derived from the handlers configured
// (elicitation form/url, sampling, roots) — never advertise what cannot be
// answered." That holds for the tasks capability too: a 2025-11-25
// connection declares task-augmented elicitation or sampling (with
// tasks/list and tasks/cancel) only for a method it has a handler for;
// other versions, which have no client-side tasks, declare none.
func TestCapabilitiesFollowHandlers(t *testing.T) {
	const elicitTasks = `"tasks":{"list":{},"cancel":{},"requests":{"elicitation":{"create":{}}}}`
	h := snodo.HandlerFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) { return nil, nil })
	cases := []struct {
		opts         snodo.Options
		modern       string
		legacy       string
		legacy0618   string
		legacy032026 string
	}{
		{snodo.Options{}, `{}`, `{}`, `{}`, `{}`},
		{snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: h}}, `{"elicitation":{"form":{}}}`, `{"elicitation":{"form":{}},` + elicitTasks + `}`, `{"elicitation":{}}`, `{}`},
		{snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: h}, ElicitationModes: []string{"form", "url"}},
			`{"elicitation":{"form":{},"url":{}}}`, `{"elicitation":{"form":{},"url":{}},` + elicitTasks + `}`, `{"elicitation":{}}`, `{}`},
		{snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: h}, ElicitationModes: []string{"url"}},
			`{"elicitation":{"url":{}}}`, `{"elicitation":{"url":{}},` + elicitTasks + `}`, `{}`, `{}`},
		{snodo.Options{ElicitationModes: []string{"url"}}, `{}`, `{}`, `{}`, `{}`},
		{snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodSamplingCreate: h, abi.MethodRootsList: h}},
			`{"roots":{},"sampling":{}}`, `{"roots":{},"sampling":{},"tasks":{"list":{},"cancel":{},"requests":{"sampling":{"createMessage":{}}}}}`, `{"roots":{},"sampling":{}}`, `{"roots":{},"sampling":{}}`},
		{snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodRootsList: h}}, `{"roots":{}}`, `{"roots":{}}`, `{"roots":{}}`, `{"roots":{}}`},
		{snodo.Options{Handlers: map[string]snodo.Handler{abi.MethodSamplingCreate: h, abi.MethodElicitationCreate: h}},
			`{"elicitation":{"form":{}},"sampling":{}}`,
			`{"elicitation":{"form":{}},"sampling":{},"tasks":{"list":{},"cancel":{},"requests":{"elicitation":{"create":{}},"sampling":{"createMessage":{}}}}}`,
			`{"elicitation":{},"sampling":{}}`, `{"sampling":{}}`},
	}
	for i, tc := range cases {
		_, f := connectModern(t, noMore, &tc.opts)
		if got := string(f.sent("server/discover")[0].meta("io.modelcontextprotocol/clientCapabilities")); got != tc.modern {
			t.Errorf("%d modern: %s, want %s", i, got, tc.modern)
		}
		for _, lv := range []struct{ version, want string }{{"2025-11-25", tc.legacy}, {"2025-06-18", tc.legacy0618}, {"2025-03-26", tc.legacy032026}} {
			f := newFake(t, legacyServer(lv.version, noMore))
			opts := tc.opts // the case's options, with the version
			opts.ProtocolVersion = lv.version
			if _, err := snodo.Connect(context.Background(), f, &opts); err != nil {
				t.Fatal(err)
			}
			if got := string(f.sent("initialize")[0].param("capabilities")); got != lv.want {
				t.Errorf("%d %s: %s, want %s", i, lv.version, got, lv.want)
			}
		}
	}
}

// "tools/list (one page, and an iter.Seq2 over all pages)"; cache hints
// exposed.
func TestToolsPagination(t *testing.T) {
	pages := map[string]string{
		``:   `{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b","inputSchema":{"type":"object"},"x-new":1}],"nextCursor":"p2","ttlMs":60000,"cacheScope":"private"}`,
		`p2`: `{"tools":[{"name":"c","inputSchema":{"type":"object"}}],"ttlMs":-5,"cacheScope":"private"}`,
	}
	c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		var cursor string
		_ = json.Unmarshal(fc.param("cursor"), &cursor)
		return result(fc, pages[cursor])
	})
	page, err := snodo.ListTools(c, context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if page.NextCursor != "p2" || len(page.Tools) != 2 || page.TTL() != time.Minute || page.Scope != "private" || !page.Fresh(page.Received) {
		t.Errorf("page %+v", page)
	}
	if string(page.Tools[1].Extra["x-new"]) != "1" {
		t.Errorf("unknown tool field lost: %+v", page.Tools[1])
	}
	var names []string
	for tool, err := range c.Tools(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("tools %v", names)
	}
	last := f.sent("tools/list")
	if string(last[len(last)-1].param("cursor")) != `"p2"` {
		t.Errorf("second page request %s", last[len(last)-1].Req.Params)
	}
	p2, _ := snodo.ListTools(c, context.Background(), "p2")
	if p2.TTL() != 0 || p2.Fresh(p2.Received) {
		t.Errorf("a negative ttlMs must count as 0: %v", p2.TTL())
	}

	// A failing page ends the iteration with its error.
	pages[`p2`] = ``
	var gotErr error
	n := 0
	for _, err := range c.Tools(context.Background()) {
		if err != nil {
			gotErr = err
		} else {
			n++
		}
	}
	if gotErr == nil || n != 2 {
		t.Errorf("n %d err %v", n, gotErr)
	}
}

// "tools/call (content blocks, structuredContent, isError)"; "Content types
// (text, image, audio, resource link, embedded resource) decode with unknown
// fields preserved".
func TestCallToolDecodesContentKeepingUnknownFields(t *testing.T) {
	body := `{"content":[` +
		`{"type":"text","text":"hi","annotations":{"audience":["user"]},"x-a":true},` +
		`{"type":"image","data":"aGk=","mimeType":"image/png"},` +
		`{"type":"audio","data":"aGk=","mimeType":"audio/wav"},` +
		`{"type":"resource_link","uri":"file:///a","name":"a","icons":[{"src":"i.png"}]},` +
		`{"type":"resource","resource":{"uri":"file:///b","text":"bee","x-r":"kept"}}` +
		`],"structuredContent":{"n":3},"isError":true}`
	c, _ := connectModern(t, func(fc *fakeCall) *jsonrpc.Response { return result(fc, body) })
	res, err := c.CallTool(context.Background(), "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || string(res.StructuredContent) != `{"n":3}` || len(res.Content) != 5 {
		t.Fatalf("%+v", res)
	}
	ct := res.Content
	if ct[0].Text != "hi" || string(ct[0].Extra["x-a"]) != "true" || string(ct[0].Annotations) != `{"audience":["user"]}` {
		t.Errorf("text %+v", ct[0])
	}
	if ct[1].Type != "image" || ct[1].Data != "aGk=" || ct[2].MIMEType != "audio/wav" {
		t.Errorf("image/audio %+v %+v", ct[1], ct[2])
	}
	if ct[3].URI != "file:///a" || string(ct[3].Extra["icons"]) != `[{"src":"i.png"}]` {
		t.Errorf("resource_link %+v", ct[3])
	}
	if r := ct[4].Resource; r == nil || *r.Text != "bee" || string(r.Extra["x-r"]) != `"kept"` {
		t.Errorf("resource %+v", ct[4].Resource)
	}
	// Unknown fields survive a round trip.
	b, err := json.Marshal(ct[0])
	if err != nil || string(b) != `{"type":"text","text":"hi","annotations":{"audience":["user"]},"x-a":true}` {
		t.Errorf("round trip %s %v", b, err)
	}
}

// The typed API: resources, templates, prompts, completion, raw requests.
func TestTypedAPIMethods(t *testing.T) {
	answers := map[string]string{
		"resources/list":           `{"resources":[{"uri":"file:///a","name":"a"}],"ttlMs":5,"cacheScope":"public"}`,
		"resources/templates/list": `{"resourceTemplates":[{"uriTemplate":"file:///{x}","name":"x"}],"ttlMs":5,"cacheScope":"public"}`,
		"resources/read":           `{"contents":[{"uri":"file:///a","blob":"AAE="}],"ttlMs":7,"cacheScope":"private"}`,
		"prompts/list":             `{"prompts":[{"name":"p","arguments":[{"name":"q","required":true}]}],"ttlMs":5,"cacheScope":"public"}`,
		"prompts/get":              `{"messages":[{"role":"user","content":{"type":"text","text":"hello q"}}]}`,
		"completion/complete":      `{"completion":{"values":["one","two"],"hasMore":true}}`,
		"x/custom":                 `{"ok":1}`,
	}
	c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		if a, ok := answers[fc.Req.Method]; ok {
			return result(fc, a)
		}
		return noMore(fc)
	})
	ctx := context.Background()
	rl, err := snodo.ListResources(c, ctx, "")
	if err != nil || rl.Resources[0].URI != "file:///a" || rl.TTL() != 5*time.Millisecond {
		t.Errorf("resources/list %+v %v", rl, err)
	}
	for r, err := range c.Resources(ctx) {
		if err != nil || r.Name != "a" {
			t.Errorf("Resources %+v %v", r, err)
		}
	}
	for r, err := range c.ResourceTemplates(ctx) {
		if err != nil || r.URITemplate != "file:///{x}" {
			t.Errorf("ResourceTemplates %+v %v", r, err)
		}
	}
	rr, err := c.ReadResource(ctx, "file:///a")
	if err != nil || rr.Contents[0].Blob != "AAE=" || rr.Scope != "private" {
		t.Errorf("resources/read %+v %v", rr, err)
	}
	if string(f.sent("resources/read")[0].param("uri")) != `"file:///a"` {
		t.Error("resources/read uri")
	}
	for p, err := range c.Prompts(ctx) {
		if err != nil || p.Name != "p" || !p.Arguments[0].Required {
			t.Errorf("Prompts %+v %v", p, err)
		}
	}
	gp, err := c.GetPrompt(ctx, "p", map[string]string{"q": "v"})
	if err != nil || gp.Messages[0].Content.Text != "hello q" {
		t.Errorf("prompts/get %+v %v", gp, err)
	}
	if string(f.sent("prompts/get")[0].param("arguments")) != `{"q":"v"}` {
		t.Error("prompts/get arguments")
	}
	cr, err := c.Complete(ctx, snodo.CompleteParams{
		Ref:      snodo.CompletionRef{Type: "ref/prompt", Name: "p"},
		Argument: "q",
		Value:    "o",
		Context:  map[string]string{"style": "formal"},
	})
	if err != nil || !slices.Equal(cr.Completion.Values, []string{"one", "two"}) || !cr.Completion.HasMore {
		t.Errorf("completion %+v %v", cr, err)
	}
	if got := string(f.sent("completion/complete")[0].Req.Params); !contains(got, `"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"q","value":"o"},"context":{"arguments":{"style":"formal"}}`) {
		t.Errorf("completion params %s", got)
	}
	raw, err := c.Request(ctx, "x/custom", json.RawMessage(`{"a":1,"_meta":{"com.example/k":"v"}}`))
	if err != nil || string(raw) != `{"ok":1}` {
		t.Errorf("raw request %s %v", raw, err)
	}
	x := f.sent("x/custom")
	_ = x
	if _, err := c.Request(ctx, "x/custom", json.RawMessage(`[1]`)); err == nil {
		t.Error("array params accepted")
	}
	d, err := c.Discover(ctx)
	if err != nil || d.ServerInfo.Name != "fake" || !slices.Equal(d.SupportedVersions, []string{"2026-07-28"}) {
		t.Errorf("discover %+v %v", d, err)
	}
}

// The raw request keeps the caller's own _meta members beside the
// dialect's. (x/custom is not in the schema, so this one is checked here.)
func TestRawRequestMergesCallerMeta(t *testing.T) {
	c, f := connectLegacy(t, func(fc *fakeCall) *jsonrpc.Response { return result(fc, `{}`) })
	_, err := c.Request(context.Background(), "tools/list", json.RawMessage(`{"cursor":"c","_meta":{"com.example/k":"v"}}`))
	if err != nil {
		t.Fatal(err)
	}
	p := string(f.sent("tools/list")[0].Req.Params)
	if p != `{"_meta":{"com.example/k":"v"},"cursor":"c"}` {
		t.Errorf("params %s", p)
	}
}

// "legacy-only ping, logging/setLevel, resources/subscribe/unsubscribe";
// in 2026-07-28 they are "not supported in this era".
func TestLegacyOnlyMethods(t *testing.T) {
	c, f := connectLegacy(t, func(fc *fakeCall) *jsonrpc.Response { return result(fc, `{}`) })
	ctx := context.Background()
	if err := c.Ping(ctx); err != nil {
		t.Error(err)
	}
	if err := c.SetLogLevel(ctx, "debug"); err != nil {
		t.Error(err)
	}
	if got := f.methods()[2:]; !slices.Equal(got, []string{"ping", "logging/setLevel"}) {
		t.Errorf("sent %v", got)
	}
	if _, err := c.Discover(ctx); !errors.Is(err, snodo.ErrNotInEra) {
		t.Errorf("discover in legacy: %v", err)
	}

	m, _ := connectModern(t, noMore)
	for name, err := range map[string]error{
		"ping":     m.Ping(ctx),
		"setLevel": m.SetLogLevel(ctx, "debug"),
	} {
		// The era's name, and "not supported" once.
		if !errors.Is(err, snodo.ErrNotInEra) || !contains(err.Error(), "(modern era): not supported in this protocol era") || strings.Count(err.Error(), "not supported") != 1 {
			t.Errorf("%s in modern: %v", name, err)
		}
	}
}

// Connect copies its Options: changing the struct, its Handlers map or its
// ElicitationModes slice afterwards, as a caller reusing it would, changes
// nothing of the connected client.
func TestConnectCopiesOptions(t *testing.T) {
	answer := func(name string) snodo.Handler {
		return snodo.HandlerFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"action":"accept","content":{"name":"` + name + `"}}`), nil
		})
	}
	opts := &snodo.Options{
		Handlers:         map[string]snodo.Handler{abi.MethodElicitationCreate: answer("first")},
		ElicitationModes: []string{"form"},
	}
	_, f := connectLegacy(t, noMore, opts)
	opts.Handlers[abi.MethodElicitationCreate] = answer("second")
	opts.Handlers[abi.MethodRootsList] = answer("roots")
	opts.ElicitationModes[0] = "url"
	*opts = snodo.Options{Handlers: map[string]snodo.Handler{}}

	resp := f.serverRequest(context.Background(), 1, abi.MethodElicitationCreate, elicitParams)
	if resp.Error != nil || string(resp.Result) != `{"action":"accept","content":{"name":"first"}}` {
		t.Errorf("elicitation after the options changed: %+v", resp)
	}
	resp = f.serverRequest(context.Background(), 2, abi.MethodRootsList, `{}`)
	if resp.Error == nil || resp.Error.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("roots/list, added to the options after Connect: %+v, want -32601", resp)
	}
}

// A server that hands out a new cursor with every page cannot keep an
// iterator going for ever: the listing ends with an error after a bounded
// number of pages, with the items it gave.
func TestIteratorsStopAtABoundedNumberOfPages(t *testing.T) {
	var pages atomic.Int64
	c, _ := connectLegacy(t, func(fc *fakeCall) *jsonrpc.Response {
		if fc.Req.Method != "tools/list" {
			return noMore(fc)
		}
		n := pages.Add(1)
		return result(fc, fmt.Sprintf(`{"tools":[{"name":"t%d","inputSchema":{"type":"object"}}],"nextCursor":"c%d"}`, n, n))
	})
	defer c.Close()
	var got int
	var last error
	for _, err := range c.Tools(context.Background()) {
		if err != nil {
			last = err
			break
		}
		got++
	}
	if last == nil || !strings.Contains(last.Error(), "pages") {
		t.Fatalf("listing ended with %v after %d tools, want an error about pages", last, got)
	}
	if got != int(pages.Load()) || got > 1000 {
		t.Fatalf("%d tools from %d pages", got, pages.Load())
	}
}
