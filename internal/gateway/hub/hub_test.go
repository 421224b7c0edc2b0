package hub

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/jsonrpc"
)

// demoBin is examples/servers/demo, built once for the package's tests.
var demoBin string

func TestMain(m *testing.M) {
	if mode := os.Getenv("HUB_FAKE_SERVER"); mode != "" {
		fakeServer(mode)
		return
	}
	dir, err := os.MkdirTemp("", "hubtest")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	demoBin = filepath.Join(dir, "demo")
	cmd := exec.Command("go", "build", "-o", demoBin, "github.com/snodo/snodo/examples/servers/demo")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the demo server:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		// Every backend's process and goroutines end with Close.
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// bound bounds every wait of a test: it is not a verdict.
const bound = 60 * time.Second

func demo(era string) map[string]any {
	return map[string]any{"command": demoBin, "args": []string{"--era", era}}
}

// newHub starts a hub on config (the whole file, as JSON) and waits until
// it is ready.
func newHub(t *testing.T, config map[string]any, opts Options) *Hub {
	t.Helper()
	raw, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	sections, err := gateway.ParseConfig(raw, ".json")
	if err != nil {
		t.Fatal(err)
	}
	if opts.CacheDir == "" {
		opts.CacheDir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	h, err := New(ctx, sections, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	for h.Ready() != nil {
		select {
		case <-ctx.Done():
			t.Fatalf("not ready: %v", h.Ready())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return h
}

func request(method string, params any) *gateway.Request {
	raw, _ := json.Marshal(params)
	return &gateway.Request{Method: method, Params: raw, ID: json.RawMessage(`1`),
		Notify: func(string, json.RawMessage) error { return nil }}
}

func handle(t *testing.T, h *Hub, r *gateway.Request) (map[string]json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	res, err := h.Handle(ctx, r)
	if err != nil {
		return nil, err
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(res, &out); err != nil {
		t.Fatalf("%s: result %s: %v", r.Method, res, err)
	}
	return out, nil
}

// names lists every item's key over all pages of a list.
func names(t *testing.T, h *Hub, r func() *gateway.Request, items, key string) ([]string, int) {
	t.Helper()
	var out []string
	pages := 0
	cursor := ""
	for {
		req := r()
		if cursor != "" {
			req.Params, _ = json.Marshal(map[string]string{"cursor": cursor})
		}
		res, err := handle(t, h, req)
		if err != nil {
			t.Fatalf("%s: %v", req.Method, err)
		}
		pages++
		var list []map[string]any
		_ = json.Unmarshal(res[items], &list)
		for _, it := range list {
			out = append(out, it[key].(string))
		}
		cursor = ""
		_ = json.Unmarshal(res["nextCursor"], &cursor)
		if cursor == "" {
			return out, pages
		}
		if pages > 100 {
			t.Fatal("more than 100 pages")
		}
	}
}

func toolText(t *testing.T, res map[string]json.RawMessage) string {
	t.Helper()
	var content []struct{ Text string }
	_ = json.Unmarshal(res["content"], &content)
	var b strings.Builder
	for _, c := range content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func callTool(t *testing.T, h *Hub, tool string, args any) (string, error) {
	t.Helper()
	res, err := handle(t, h, request("tools/call", map[string]any{"name": tool, "arguments": args}))
	if err != nil {
		return "", err
	}
	return toolText(t, res), nil
}

func code(err error) int64 {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je.Code
	}
	return 0
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Two servers with the same tool names: both listed under their prefix,
// and each call reaches its own server, in both protocol eras.
func TestMergedListsAndRouting(t *testing.T) {
	h := newHub(t, map[string]any{"mcpServers": map[string]any{"old": demo("legacy"), "new": demo("modern")}}, Options{})
	tools, _ := names(t, h, func() *gateway.Request { return request("tools/list", nil) }, "tools", "name")
	for _, want := range []string{"old__echo", "new__echo", "old__register", "new__touch"} {
		if !contains(tools, want) {
			t.Errorf("tools/list lacks %s: %v", want, tools)
		}
	}
	for _, tl := range tools {
		if !strings.HasPrefix(tl, "old__") && !strings.HasPrefix(tl, "new__") {
			t.Errorf("tool %q is not in the merged name space", tl)
		}
	}
	prompts, _ := names(t, h, func() *gateway.Request { return request("prompts/list", nil) }, "prompts", "name")
	if !contains(prompts, "old__greet") || !contains(prompts, "new__greet") {
		t.Errorf("prompts/list = %v", prompts)
	}
	resources, _ := names(t, h, func() *gateway.Request { return request("resources/list", nil) }, "resources", "uri")
	if !contains(resources, "old+demo://readme") || !contains(resources, "new+demo://readme") {
		t.Errorf("resources/list = %v", resources)
	}
	templates, _ := names(t, h, func() *gateway.Request { return request("resources/templates/list", nil) }, "resourceTemplates", "uriTemplate")
	if !contains(templates, "old+demo://greeting/{name}") {
		t.Errorf("resources/templates/list = %v", templates)
	}
	// Each touch counts on its own server only.
	for _, want := range []string{"old__touch=1", "old__touch=2", "new__touch=1"} {
		tool, n, _ := strings.Cut(want, "=")
		got, err := callTool(t, h, tool, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if got != "counter is "+n {
			t.Errorf("%s: %q, want counter is %s", tool, got, n)
		}
	}
	res, err := handle(t, h, request("resources/read", map[string]any{"uri": "new+demo://counter"}))
	if err != nil || !strings.Contains(string(res["contents"]), `"text":"1"`) {
		t.Errorf("resources/read new+demo://counter: %s %v", res["contents"], err)
	}
	res, err = handle(t, h, request("completion/complete", map[string]any{
		"ref": map[string]any{"type": "ref/prompt", "name": "old__greet"}, "argument": map[string]any{"name": "name", "value": "A"}}))
	if err != nil || !strings.Contains(string(res["completion"]), "Ada") {
		t.Errorf("completion/complete: %s %v", res["completion"], err)
	}
	for _, bad := range []string{"echo", "nope__echo", "Old__echo", "__echo"} {
		if _, err := callTool(t, h, bad, map[string]any{"text": "x"}); code(err) != jsonrpc.CodeInvalidParams {
			t.Errorf("tools/call %q: %v, want -32602", bad, err)
		}
	}
}

// pager is a server with n tools t0…t{n-1}, served two a page.
func pager(t *testing.T, n int) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "pager", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
	for i := range n {
		mcp.AddTool(s, &mcp.Tool{Name: fmt.Sprintf("t%d", i)}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("t%d", i)}}}, nil, nil
		})
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv.URL
}

func pagers(t *testing.T) map[string]any {
	return map[string]any{"mcpServers": map[string]any{
		"p1":  map[string]any{"url": pager(t, 5), "protocol": "legacy"},
		"p2":  map[string]any{"url": pager(t, 4), "protocol": "legacy"},
		"p3":  map[string]any{"url": pager(t, 6), "protocol": "legacy"},
		"off": map[string]any{"url": "http://127.0.0.1:1/mcp", "disabled": true},
	}}
}

// Three servers of several pages each: every tool listed once, a page of
// one server at a time.
func TestPaginationAcrossServers(t *testing.T) {
	h := newHub(t, pagers(t), Options{})
	got, pages := names(t, h, func() *gateway.Request { return request("tools/list", nil) }, "tools", "name")
	var want []string
	for _, s := range []struct {
		name string
		n    int
	}{{"p1", 5}, {"p2", 4}, {"p3", 6}} {
		for i := range s.n {
			want = append(want, fmt.Sprintf("%s__t%d", s.name, i))
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("tools over %d pages:\n got %v\nwant %v", pages, got, want)
	}
	if pages != 3+2+3 {
		t.Errorf("%d pages, want 8 (3, 2 and 3 pages of two tools)", pages)
	}
	if text, err := callTool(t, h, "p3__t5", map[string]any{}); err != nil || text != "t5" {
		t.Errorf("p3__t5: %q %v", text, err)
	}
}

// denyPolicy denies server p2 and tool p1__t1 (and counts admissions).
type denyPolicy struct{}

func (denyPolicy) Authenticate(*http.Request) (*gateway.Identity, error) { return nil, nil }
func (denyPolicy) AllowServer(_ *gateway.Identity, s string) bool        { return s != "p2" }
func (denyPolicy) AllowTool(_ *gateway.Identity, s, tool string) bool {
	return s+gateway.NameSeparator+tool != "p1__t1"
}
func (denyPolicy) Admit(context.Context, *gateway.Identity, string) (func(), error) {
	return func() {}, nil
}

type records struct {
	mu   sync.Mutex
	recs []gateway.AuditRecord
}

func (r *records) Audit(rec gateway.AuditRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
}

// Cursors the gateway did not make are refused with -32602, as is one
// naming a server the identity may not use; nothing panics or loops.
func TestForgedCursors(t *testing.T) {
	h := newHub(t, pagers(t), Options{Policy: denyPolicy{}})
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, c := range []any{
		"garbage!", "", b64(`{"s":"nope","c":""}`), b64(`{"s":"p2"}`), b64(`{"s":"p1","x":1}`),
		b64(`{"s":"p1"} {}`), b64(`{"s":"off"}`), b64(`[]`), b64(`null`), strings.Repeat("A", 5000), 42, b64("\xff\xfe"),
	} {
		r := request("tools/list", map[string]any{"cursor": c})
		_, err := handle(t, h, r)
		if c == "" {
			if err != nil {
				t.Errorf("an empty cursor: %v", err)
			}
			continue
		}
		if code(err) != jsonrpc.CodeInvalidParams {
			t.Errorf("cursor %.40v: %v, want -32602", c, err)
		}
	}
	// A well-formed cursor with a server's cursor the gateway did not
	// make is passed to that server, whose answer (an error, or a page)
	// is the host's: one request, no loop.
	if _, err := handle(t, h, request("tools/list", map[string]any{"cursor": b64(`{"s":"p1","c":"forged"}`)})); err != nil && code(err) == 0 {
		t.Errorf("a forged inner cursor: %v", err)
	}
}

// A denied server and a denied tool are invisible in lists, and refused
// on call with -32602 naming the policy, audited as denied.
func TestPolicyHidesAndRefuses(t *testing.T) {
	audit := &records{}
	h := newHub(t, pagers(t), Options{Policy: denyPolicy{}, Auditor: audit})
	got, _ := names(t, h, func() *gateway.Request { return request("tools/list", nil) }, "tools", "name")
	for _, tl := range got {
		if tl == "p1__t1" || strings.HasPrefix(tl, "p2__") {
			t.Errorf("tools/list shows %s", tl)
		}
	}
	if !contains(got, "p1__t0") || !contains(got, "p3__t5") {
		t.Errorf("tools/list = %v", got)
	}
	for _, tool := range []string{"p1__t1", "p2__t0"} {
		_, err := callTool(t, h, tool, map[string]any{})
		if code(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "policy") {
			t.Errorf("%s: %v, want -32602 naming the policy", tool, err)
		}
	}
	audit.mu.Lock()
	defer audit.mu.Unlock()
	denied := 0
	for _, r := range audit.recs {
		if r.Method == "tools/call" && r.Decision == "deny" && r.ErrorCode == jsonrpc.CodeInvalidParams {
			denied++
			if r.Server == "" {
				t.Errorf("a denied call's record names no server: %+v", r)
			}
		}
	}
	if denied != 2 {
		t.Errorf("%d denied tools/call records, want 2: %+v", denied, audit.recs)
	}
}

// A server whose process is killed is restarted; meanwhile its calls fail
// at once with -32000 naming it and the next attempt, and the other
// server keeps serving.
func TestCrashedServerRestarts(t *testing.T) {
	h := newHub(t, map[string]any{"mcpServers": map[string]any{"crash": demo("legacy"), "steady": demo("modern")}},
		Options{Backoff: Backoff{Min: 3 * time.Second, Max: 3 * time.Second}})
	b := h.backends["crash"]
	b.mu.Lock()
	pid, changed := b.rt.Pid(), b.changed
	b.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Wait for the supervisor to see it down.
	deadline := time.After(bound)
	for {
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("the crash was not noticed")
		}
		b.mu.Lock()
		down := b.rt == nil && b.lastErr != nil
		changed = b.changed
		b.mu.Unlock()
		if down {
			break
		}
	}
	_, err := callTool(t, h, "crash__echo", map[string]any{"text": "x"})
	if code(err) != jsonrpc.CodeConnectionClosed || !strings.Contains(err.Error(), `"crash"`) || !strings.Contains(err.Error(), "next attempt") {
		t.Errorf("a call to the crashed server: %v, want -32000 naming it and the next attempt", err)
	}
	if text, err := callTool(t, h, "steady__echo", map[string]any{"text": "still here"}); err != nil || text != "still here" {
		t.Errorf("the other server: %q %v", text, err)
	}
	for {
		b.mu.Lock()
		up, starts := b.rt != nil, b.starts
		changed = b.changed
		b.mu.Unlock()
		if up && starts >= 2 {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("the crashed server was not restarted")
		}
	}
	if text, err := callTool(t, h, "crash__echo", map[string]any{"text": "back"}); err != nil || text != "back" {
		t.Errorf("after the restart: %q %v", text, err)
	}
}

// A server's elicitation is answered by its Wasm module when it has one,
// and forwarded with Ask to the legacy host that made the call otherwise.
func TestElicitationByModuleOrHost(t *testing.T) {
	accept, err := filepath.Abs("../../../examples/handlers/wat/accept/accept.wasm")
	if err != nil {
		t.Fatal(err)
	}
	withModule := demo("legacy")
	withModule["handlers"] = []string{accept}
	audit := &records{}
	h := newHub(t, map[string]any{
		"mcpServers": map[string]any{"mod": withModule, "host": demo("legacy"), "new": demo("modern")},
		"modules":    map[string]any{"accept": map[string]any{"config": map[string]any{"name": "Wasm"}}},
	}, Options{Auditor: audit})
	text, err := callTool(t, h, "mod__register", map[string]any{})
	if err != nil || !strings.Contains(text, "registered Wasm") {
		t.Errorf("answered by the module: %q %v", text, err)
	}
	var asked []string
	r := request("tools/call", map[string]any{"name": "host__register", "arguments": map[string]any{}})
	r.ClientCapabilities = json.RawMessage(`{"elicitation":{}}`)
	r.Ask = func(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		asked = append(asked, method)
		return json.RawMessage(`{"action":"accept","content":{"name":"Host"}}`), nil
	}
	res, err := handle(t, h, r)
	if err != nil || !strings.Contains(toolText(t, res), "registered Host") || len(asked) != 1 || asked[0] != "elicitation/create" {
		t.Errorf("forwarded to the host: %s %v, asked %v", res["content"], err, asked)
	}
	// A host that cannot be asked — a legacy host without Ask, a host
	// that did not declare elicitation, of either era — has the server's
	// request refused (-32601, audited as denied), and the call fails. (A
	// 2026-07-28 host that declared it gets an input_required result:
	// exchange_test.go.)
	for _, tc := range []struct {
		modern bool
		caps   string
	}{{true, `{}`}, {false, `{"elicitation":{}}`}, {false, `{}`}} {
		audit.mu.Lock()
		audit.recs = nil
		audit.mu.Unlock()
		r = request("tools/call", map[string]any{"name": "host__register", "arguments": map[string]any{}})
		r.Modern, r.ClientCapabilities = tc.modern, json.RawMessage(tc.caps)
		if tc.caps == `{}` && !tc.modern {
			r.Ask = func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
				t.Error("a host that did not declare elicitation was asked")
				return nil, errors.New("no")
			}
		}
		res, err = handle(t, h, r)
		if err == nil && !strings.Contains(string(res["isError"]), "true") {
			t.Errorf("%+v: the call succeeded: %s", tc, res["content"])
		}
		audit.mu.Lock()
		refused := 0
		for _, rec := range audit.recs {
			if rec.Direction == "server" && rec.Server == "host" && rec.Method == "elicitation/create" && rec.Decision == "deny" && rec.ErrorCode == jsonrpc.CodeMethodNotFound {
				refused++
			}
		}
		audit.mu.Unlock()
		if refused != 1 {
			t.Errorf("%+v: %d refusals audited, want 1: %+v", tc, refused, audit.recs)
		}
	}
	// A 2026-07-28 server's input for a 2026-07-28 host: an
	// input_required result (TestMultiRoundAcrossHubs).
	r = request("tools/call", map[string]any{"name": "new__register", "arguments": map[string]any{}})
	r.Modern, r.ClientCapabilities = true, json.RawMessage(`{"elicitation":{}}`)
	if res, err = handle(t, h, r); err != nil || string(res["resultType"]) != `"input_required"` {
		t.Errorf("a 2026-07-28 host and server: %s %v", res["resultType"], err)
	}
}

// testStateKey is a stateKey for the tests (64 hexadecimal digits).
const testStateKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// modernCall is a 2026-07-28 host's tools/call of tool with args, and the
// host's inputResponses and requestState when set.
func modernRetry(tool string, args any, responses any, state string) *gateway.Request {
	p := map[string]any{"name": tool, "arguments": args}
	if responses != nil {
		p["inputResponses"] = responses
	}
	if state != "" {
		p["requestState"] = state
	}
	r := request("tools/call", p)
	r.Modern, r.ClientCapabilities = true, json.RawMessage(`{"elicitation":{}}`)
	return r
}

// A 2026-07-28 server's input that no module answers reaches a 2026-07-28
// host in an input_required result with a sealed requestState; the host's
// retry completes through another hub with the same stateKey, and is
// refused by a hub with another key before the server is asked again.
func TestMultiRoundAcrossHubs(t *testing.T) {
	config := func(key string) map[string]any {
		return map[string]any{"mcpServers": map[string]any{"new": demo("modern")}, "stateKey": key}
	}
	audit1, audit2 := &records{}, &records{}
	h1 := newHub(t, config(testStateKey), Options{Auditor: audit1})
	h2 := newHub(t, config(testStateKey), Options{Auditor: audit2})
	other := newHub(t, config(strings.Repeat("ab", 32)), Options{})

	res, err := handle(t, h1, modernRetry("new__register", map[string]any{}, nil, ""))
	if err != nil {
		t.Fatal(err)
	}
	var ir struct {
		ResultType    string `json:"resultType"`
		InputRequests map[string]struct {
			Method string `json:"method"`
		} `json:"inputRequests"`
		RequestState string `json:"requestState"`
	}
	raw, _ := json.Marshal(res)
	if err := json.Unmarshal(raw, &ir); err != nil || ir.ResultType != "input_required" ||
		ir.InputRequests["registration"].Method != "elicitation/create" || !strings.HasPrefix(ir.RequestState, "s1.") {
		t.Fatalf("first round: %s %v", raw, err)
	}
	answer := map[string]any{"registration": map[string]any{"action": "accept", "content": map[string]any{"name": "Host"}}}

	if _, err := handle(t, other, modernRetry("new__register", map[string]any{}, answer, ir.RequestState)); code(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "requestState is not valid") {
		t.Errorf("a retry on a hub with another stateKey: %v", err)
	}
	res, err = handle(t, h2, modernRetry("new__register", map[string]any{}, answer, ir.RequestState))
	if err != nil || !strings.Contains(toolText(t, res), "registered Host") {
		t.Fatalf("the retry on another hub: %s %v", res["content"], err)
	}
	// Each hub audited its own round as the host's tools/call.
	for i, a := range []*records{audit1, audit2} {
		a.mu.Lock()
		n := 0
		for _, rec := range a.recs {
			if rec.Direction == "host" && rec.Method == "tools/call" && rec.Server == "new" && rec.Decision == "allow" {
				n++
			}
		}
		a.mu.Unlock()
		if n != 1 {
			t.Errorf("hub %d audited %d tools/call, want 1", i+1, n)
		}
	}
}

// A 2026-07-28 server's input that the server's Wasm module answers never
// reaches a 2026-07-28 host: the gateway answers it and sends the next
// round itself, with the modules of the server's current runner (after a
// restart too), and the module's answer is audited with the host's
// identity.
func TestMultiRoundModuleAnswers(t *testing.T) {
	accept, err := filepath.Abs("../../../examples/handlers/wat/accept/accept.wasm")
	if err != nil {
		t.Fatal(err)
	}
	entry := demo("modern")
	entry["handlers"] = []string{accept}
	audit := &records{}
	h := newHub(t, map[string]any{
		"mcpServers": map[string]any{"new": entry},
		"modules":    map[string]any{"accept": map[string]any{"config": map[string]any{"name": "Wasm"}}},
		"stateKey":   testStateKey,
	}, Options{Auditor: audit})
	r := modernRetry("new__register", map[string]any{}, nil, "")
	r.Identity = &gateway.Identity{Name: "alice"}
	res, err := handle(t, h, r)
	if err != nil || string(res["resultType"]) == `"input_required"` || !strings.Contains(toolText(t, res), "registered Wasm") {
		t.Fatalf("answered by the module: %s %s %v", res["resultType"], res["content"], err)
	}
	// After the server's restart, the modules of its new runner answer.
	b := h.backends["new"]
	b.mu.Lock()
	pid := b.rt.Pid()
	b.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(bound)
	for {
		b.mu.Lock()
		up, starts := b.rt != nil, b.starts
		changed := b.changed
		b.mu.Unlock()
		if up && starts >= 2 {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("the server was not restarted")
		}
	}
	res, err = handle(t, h, r)
	if err != nil || string(res["resultType"]) == `"input_required"` || !strings.Contains(toolText(t, res), "registered Wasm") {
		t.Fatalf("answered by the module after a restart: %s %s %v", res["resultType"], res["content"], err)
	}
	// The module answers elicitation only: the sampling input goes to
	// the host.
	sample := modernRetry("new__sample", map[string]any{"prompt": "Hi?"}, nil, "")
	sample.ClientCapabilities = json.RawMessage(`{"elicitation":{},"sampling":{}}`)
	res, err = handle(t, h, sample)
	if err != nil || string(res["resultType"]) != `"input_required"` || !strings.Contains(string(res["inputRequests"]), "sampling/createMessage") {
		t.Errorf("sampling, which no module answers: %s %s %v", res["resultType"], res["content"], err)
	}
	audit.mu.Lock()
	defer audit.mu.Unlock()
	n := 0
	for _, rec := range audit.recs {
		if rec.Direction == "server" && rec.Method == "elicitation/create" && rec.Module == "accept" && rec.Identity == "alice" && rec.Decision == "allow" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d module answers audited, want 2: %+v", n, audit.recs)
	}
}

// subscriptions/listen opens a subscription on each server and merges
// their events, URIs in the merged name space, under the host's ID.
func TestListenFanIn(t *testing.T) {
	h := newHub(t, map[string]any{"mcpServers": map[string]any{"one": demo("legacy"), "two": demo("modern")}}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	events := make(chan [2]string, 16)
	r := request("subscriptions/listen", map[string]any{"notifications": map[string]any{
		"resourceSubscriptions": []string{"one+demo://counter", "two+demo://counter"}}})
	r.ID = json.RawMessage(`"sub-7"`)
	r.Modern = true
	done := make(chan error, 1)
	go func() {
		_, err := h.Listen(ctx, r, func(method string, params json.RawMessage) error {
			events <- [2]string{method, string(params)}
			return nil
		})
		done <- err
	}()
	ack := <-events
	if ack[0] != "notifications/subscriptions/acknowledged" || !strings.Contains(ack[1], `"sub-7"`) ||
		!strings.Contains(ack[1], "one+demo://counter") || !strings.Contains(ack[1], "two+demo://counter") {
		t.Fatalf("acknowledgement: %v", ack)
	}
	for _, tool := range []string{"one__touch", "two__touch"} {
		if _, err := callTool(t, h, tool, map[string]any{}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for len(seen) < 2 {
		select {
		case ev := <-events:
			if ev[0] != "notifications/resources/updated" || !strings.Contains(ev[1], `"sub-7"`) {
				t.Errorf("event %v", ev)
				continue
			}
			var p struct{ URI string }
			_ = json.Unmarshal([]byte(ev[1]), &p)
			seen[p.URI] = true
		case <-ctx.Done():
			t.Fatalf("events seen: %v", seen)
		}
	}
	if !seen["one+demo://counter"] || !seen["two+demo://counter"] {
		t.Errorf("events: %v", seen)
	}
	cancel()
	<-done
}

// A legacy session's Watch gets list changes from every server and the
// resources/updated of the URIs it subscribed to, in the merged names.
func TestWatchFanIn(t *testing.T) {
	h := newHub(t, map[string]any{"mcpServers": map[string]any{"one": demo("legacy"), "two": demo("legacy")}}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	events := make(chan [2]string, 16)
	watch(ctx, t, h, "s1", events)
	r := request("resources/subscribe", map[string]any{"uri": "two+demo://counter"})
	r.Session = "s1"
	if _, err := handle(t, h, r); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"one__touch", "two__touch", "one__toggle_bonus"} {
		if _, err := callTool(t, h, tool, map[string]any{}); err != nil {
			t.Fatal(err)
		}
	}
	var updated []string
	listChanged := 0
	for listChanged == 0 || len(updated) == 0 {
		select {
		case ev := <-events:
			switch ev[0] {
			case "notifications/resources/updated":
				updated = append(updated, ev[1])
			case "notifications/tools/list_changed":
				listChanged++
			}
		case <-ctx.Done():
			t.Fatalf("updated %v, list changes %d", updated, listChanged)
		}
	}
	if len(updated) != 1 || !strings.Contains(updated[0], `"two+demo://counter"`) {
		t.Errorf("updated: %v, want only two+demo://counter", updated)
	}
}

// Server names outside the pattern are refused with a clear error.
func TestBadServerName(t *testing.T) {
	for _, name := range []string{"A", "a_b", "a+b", "-a", "", strings.Repeat("a", 64)} {
		raw, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{name: demo("legacy")}})
		s, err := gateway.ParseConfig(raw, ".json")
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(context.Background(), s, Options{})
		if err == nil || !strings.Contains(err.Error(), "lower-case") {
			t.Errorf("server name %q: %v", name, err)
		}
	}
}

// limitPolicy refuses every request as a rate limit would.
type limitPolicy struct{ denyPolicy }

func (limitPolicy) AllowServer(*gateway.Identity, string) bool { return true }
func (limitPolicy) Admit(context.Context, *gateway.Identity, string) (func(), error) {
	return nil, &jsonrpc.Error{Code: gateway.CodeRateLimited, Message: "rate limit of identity x: retry in 1s"}
}

// A policy's rate-limit refusal reaches the host as is, and is audited.
func TestRateLimitReachesHost(t *testing.T) {
	audit := &records{}
	h := newHub(t, map[string]any{"mcpServers": map[string]any{"one": demo("legacy")}}, Options{Policy: limitPolicy{}, Auditor: audit})
	_, err := callTool(t, h, "one__echo", map[string]any{"text": "x"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != gateway.CodeRateLimited || je.Message != "rate limit of identity x: retry in 1s" {
		t.Fatalf("err = %v, want the policy's -32029 as is", err)
	}
	if _, err := handle(t, h, request("tools/list", nil)); code(err) != gateway.CodeRateLimited {
		t.Errorf("tools/list: %v, want -32029", err)
	}
	audit.mu.Lock()
	defer audit.mu.Unlock()
	if len(audit.recs) != 2 || audit.recs[0].Decision != "rate-limited" || audit.recs[0].ErrorCode != gateway.CodeRateLimited ||
		audit.recs[0].Server != "one" || audit.recs[0].Tool != "echo" || audit.recs[0].Direction != "host" {
		t.Errorf("audit: %+v", audit.recs)
	}
}

// A legacy server over stdio does not say which call its request belongs
// to: with calls of two hosts in flight, neither host is asked (the
// request could belong to the other one's call).
func TestServerRequestNotSentToAnotherHost(t *testing.T) {
	audit := &records{}
	h := newHub(t, map[string]any{"mcpServers": map[string]any{"srv": demo("legacy")}}, Options{Auditor: audit})
	b := h.backends["srv"]
	asker := func(who string, asked chan<- string) *gateway.Request {
		r := request("tools/call", nil)
		r.Identity = &gateway.Identity{Name: who}
		r.ClientCapabilities = json.RawMessage(`{"elicitation":{}}`)
		r.Ask = func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			asked <- who
			return json.RawMessage(`{"action":"accept","content":{"name":"` + who + `"}}`), nil
		}
		return r
	}
	asked := make(chan string, 4)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	// alice's long call holds the server.
	slow := asker("alice", asked)
	slow.Params, _ = json.Marshal(map[string]any{"name": "srv__count", "arguments": map[string]any{"steps": 100000, "delay_ms": 100}})
	counting := make(chan struct{})
	go func() {
		defer close(counting)
		_, _ = h.Handle(ctx, slow)
	}()
	for {
		b.mu.Lock()
		n := len(b.calls)
		b.mu.Unlock()
		if n == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the count call never reached the server")
		case <-time.After(10 * time.Millisecond):
		}
	}
	bob := asker("bob", asked)
	bob.Params, _ = json.Marshal(map[string]any{"name": "srv__register", "arguments": map[string]any{}})
	res, err := h.Handle(ctx, bob)
	cancel()
	<-counting
	select {
	case who := <-asked:
		t.Errorf("%s was asked for bob's server request (result %s, %v)", who, res, err)
	default:
	}
	audit.mu.Lock()
	defer audit.mu.Unlock()
	refused := 0
	for _, rec := range audit.recs {
		if rec.Direction == "server" && rec.Method == "elicitation/create" && rec.Decision == "deny" && rec.ErrorCode == jsonrpc.CodeMethodNotFound {
			refused++
		}
	}
	if refused != 1 || err == nil && !strings.Contains(string(res), `"isError":true`) {
		t.Errorf("bob's call: %s %v, want the server's elicitation refused (audit %+v)", res, err, audit.recs)
	}
}

// Close stops every server process.
func TestCloseStopsServers(t *testing.T) {
	h := newHub(t, map[string]any{"mcpServers": map[string]any{"a": demo("legacy"), "b": demo("modern")}}, Options{})
	var pids []int
	for _, b := range h.backends {
		b.mu.Lock()
		pids = append(pids, b.rt.Pid())
		b.mu.Unlock()
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("server process %d still exists after Close: %v", pid, err)
		}
	}
	if _, err := callTool(t, h, "a__echo", map[string]any{"text": "x"}); code(err) != jsonrpc.CodeConnectionClosed || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("a call after Close: %v", err)
	}
}

// fakeServer is a hostile legacy MCP server over stdio (this test binary
// run again): "empty" lists pages of no tools, each with a next cursor,
// forever; "huge" lists one tool with a 5000-byte next cursor.
func fakeServer(mode string) {
	if mode == "elicit" {
		elicitServer()
		return
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		var res any
		switch req.Method {
		case "initialize":
			res = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "fake", "version": "1"}}
		case "tools/list":
			n++
			if mode == "huge" {
				res = map[string]any{"tools": []any{map[string]any{"name": "x", "inputSchema": map[string]any{"type": "object"}}}, "nextCursor": strings.Repeat("A", 5000)}
			} else {
				res = map[string]any{"tools": []any{}, "nextCursor": fmt.Sprintf("c%d", n)}
			}
		default:
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "no"}})
			os.Stdout.Write(append(b, '\n'))
			continue
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": res})
		os.Stdout.Write(append(b, '\n'))
	}
}

func fake(t *testing.T, mode string) map[string]any {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"command": exe, "env": map[string]string{"HUB_FAKE_SERVER": mode}, "protocol": "legacy"}
}

// A server that pages empty lists forever, or gives a cursor too long to
// carry, neither loops the gateway nor makes it hand the host a cursor it
// would refuse.
func TestHostileServerCursors(t *testing.T) {
	h := newHub(t, map[string]any{"mcpServers": map[string]any{"empty": fake(t, "empty"), "huge": fake(t, "huge"), "zz": demo("legacy")}}, Options{})
	pages := 0
	next := ""
	var tools []string
	for {
		req := request("tools/list", nil)
		if next != "" {
			req.Params, _ = json.Marshal(map[string]string{"cursor": next})
		}
		res, err := handle(t, h, req)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		pages++
		var list []struct{ Name string }
		_ = json.Unmarshal(res["tools"], &list)
		for _, tl := range list {
			tools = append(tools, tl.Name)
		}
		next = ""
		_ = json.Unmarshal(res["nextCursor"], &next)
		if len(next) > maxCursor {
			t.Fatalf("page %d: a cursor of %d bytes, longer than the gateway accepts", pages, len(next))
		}
		// The empty server pages forever: each request is bounded, and
		// the host decides when to stop. Past it, the rest is listed.
		if next == "" || pages > 50 {
			break
		}
		if c, err := h.decodeCursor(req, next); err != nil {
			t.Fatalf("page %d: the gateway refuses its own cursor: %v", pages, err)
		} else if c.Server == "empty" && pages >= 3 {
			// Skip the endless server, as a host would.
			next = encodeCursor(cursor{Server: "huge"})
		}
	}
	if !contains(tools, "huge__x") || !contains(tools, "zz__echo") {
		t.Errorf("tools over %d pages: %v", pages, tools)
	}
}

// A remote server over HTTP+SSE whose stream ends is connected again.
func TestSSEServerReconnects(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "sse", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "hi"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer srv.Close()
	h := newHub(t, map[string]any{"mcpServers": map[string]any{"remote": map[string]any{"url": srv.URL, "type": "sse"}}},
		Options{Backoff: Backoff{Min: 10 * time.Millisecond}})
	b := h.backends["remote"]
	srv.CloseClientConnections()
	deadline := time.After(bound)
	for {
		b.mu.Lock()
		up, starts, changed := b.rt != nil, b.starts, b.changed
		b.mu.Unlock()
		if up && starts >= 2 {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("the server was not connected again")
		}
	}
	if text, err := callTool(t, h, "remote__hi", map[string]any{}); err != nil || text != "hi" {
		t.Errorf("after reconnecting: %q %v", text, err)
	}
	h.Close(context.Background())
	srv.CloseClientConnections()
}

// Config mistakes are refused at New with an error naming them.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		config map[string]any
		want   string
	}{
		{map[string]any{}, "no server configured"},
		{map[string]any{"mcpServers": map[string]any{"a": map[string]any{"command": demoBin, "handler": []string{"x.wasm"}}}}, `unknown field "handler"`},
		{map[string]any{"mcpServers": map[string]any{"a": map[string]any{"command": demoBin, "url": "http://127.0.0.1:1/mcp"}}}, "both a url and a command"},
		{map[string]any{"mcpServers": map[string]any{"a": map[string]any{"command": demoBin, "timeout": "soon"}}}, "mcpServers.a.timeout"},
		{map[string]any{"mcpServers": map[string]any{"a": map[string]any{"command": demoBin, "handlers": []string{"missing.wasm"}}}}, "missing.wasm"},
		{map[string]any{"mcpServers": map[string]any{"a": map[string]any{"command": demoBin, "handlers": []string{"m.wasm"}}},
			"modules": map[string]any{"m": map[string]any{"trusted": true}}}, "modules.m.trusted"},
		{map[string]any{"mcpServers": map[string]any{"a": map[string]any{"url": "http://u:p@127.0.0.1:1/mcp"}}}, "credentials"},
		{map[string]any{"mcpServers": map[string]any{"a": map[string]any{"command": demoBin}}, "audit": map[string]any{"path": "x"}}, `unknown field "path"`},
		{map[string]any{"mcpServers": map[string]any{"a": map[string]any{"command": demoBin}}, "stateKey": "not-hex"}, "config stateKey must be 64 hexadecimal digits"},
		{map[string]any{"mcpServers": map[string]any{"a": map[string]any{"command": demoBin}}, "stateKey": "env:SNODO_HUB_TEST_UNSET_KEY"}, "SNODO_HUB_TEST_UNSET_KEY"},
	} {
		raw, _ := json.Marshal(tc.config)
		s, err := gateway.ParseConfig(raw, ".json")
		if err == nil {
			var h *Hub
			h, err = New(context.Background(), s, Options{Dir: t.TempDir(), CacheDir: t.TempDir()})
			if h != nil {
				_ = h.Close(context.Background())
			}
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", raw, err, tc.want)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error shows the key: %v", raw, err)
		}
	}
}

// A legacy session's resource subscriptions are bounded.
func TestSubscriptionsBounded(t *testing.T) {
	h := newHub(t, map[string]any{"mcpServers": map[string]any{"one": demo("legacy")}}, Options{})
	h.mu.Lock()
	h.subs["s"] = map[string]bool{}
	for i := range maxSubscriptions {
		h.subs["s"][fmt.Sprintf("one+demo://x%d", i)] = true
	}
	h.mu.Unlock()
	r := request("resources/subscribe", map[string]any{"uri": "one+demo://counter"})
	r.Session = "s"
	if _, err := handle(t, h, r); code(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "unsubscribe") {
		t.Errorf("one subscription too many: %v", err)
	}
	r.Session = "other"
	if _, err := handle(t, h, r); err != nil {
		t.Errorf("another session: %v", err)
	}
	h.EndSession("s")
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs["s"]; ok {
		t.Error("EndSession left the session's subscriptions")
	}
}

// spans records the client spans the hub starts.
type spans struct {
	mu  sync.Mutex
	got []string
}

func (s *spans) ServerSpan(ctx context.Context, _, _ string, _ map[string]json.RawMessage, _ http.Header) (context.Context, func(error)) {
	return ctx, func(error) {}
}

func (s *spans) ClientSpan(ctx context.Context, method, target, server string) (context.Context, func(error)) {
	return ctx, func(err error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.got = append(s.got, fmt.Sprintf("%s %s @%s err=%v", method, target, server, err != nil))
	}
}

func (s *spans) Handler() http.Handler { return http.NotFoundHandler() }

// A slow server slows only its own calls: another server answers while a
// long call is in flight to the first; that call's progress reaches the
// host under the host's own token; each backend request is a client span
// naming its server and target.
func TestSlowServerProgressAndSpans(t *testing.T) {
	tel := &spans{}
	h := newHub(t, map[string]any{"mcpServers": map[string]any{"slow": demo("legacy"), "fast": demo("modern")}}, Options{Telemetry: tel})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	progress := make(chan string, 64)
	r := request("tools/call", map[string]any{"name": "slow__count", "arguments": map[string]any{"steps": 100000, "delay_ms": 50},
		"_meta": map[string]any{"progressToken": "host-token-1"}})
	r.Notify = func(method string, params json.RawMessage) error {
		select {
		case progress <- method + " " + string(params):
		default:
		}
		return nil
	}
	counting := make(chan struct{})
	go func() {
		defer close(counting)
		_, _ = h.Handle(ctx, r)
	}()
	select {
	case p := <-progress:
		if !strings.HasPrefix(p, "notifications/progress ") || !strings.Contains(p, `"progressToken":"host-token-1"`) {
			t.Errorf("progress: %s", p)
		}
	case <-ctx.Done():
		t.Fatal("no progress from the slow call")
	}
	if text, err := callTool(t, h, "fast__echo", map[string]any{"text": "quick"}); err != nil || text != "quick" {
		t.Errorf("the fast server while the slow one works: %q %v", text, err)
	}
	b := h.backends["slow"]
	b.mu.Lock()
	inFlight := len(b.calls)
	b.mu.Unlock()
	if inFlight != 1 {
		t.Errorf("%d calls in flight to the slow server after the fast one answered, want its count still running", inFlight)
	}
	cancel()
	<-counting
	tel.mu.Lock()
	defer tel.mu.Unlock()
	if !contains(tel.got, "tools/call echo @fast err=false") || !contains(tel.got, "tools/call count @slow err=true") {
		t.Errorf("spans: %v", tel.got)
	}
}

// A server whose Wasm module cannot be loaded has failed for good: it is
// not retried, Ready names it, and its calls say why.
func TestModuleFailureIsFatal(t *testing.T) {
	entry := demo("legacy")
	entry["handlers"] = []string{"gone.wasm"}
	raw, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"bad": entry, "good": demo("legacy")},
		"modules": map[string]any{"gone": map[string]any{"methods": []string{"elicitation/create"}}}})
	s, err := gateway.ParseConfig(raw, ".json")
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(context.Background(), s, Options{Dir: t.TempDir(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	b := h.backends["bad"]
	deadline := time.After(bound)
	for {
		b.mu.Lock()
		fatal, changed := b.fatal, b.changed
		b.mu.Unlock()
		if fatal != nil {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("the module's failure was not noticed")
		}
	}
	if err := h.Ready(); err == nil || !strings.Contains(err.Error(), "bad failed") || !strings.Contains(err.Error(), "gone.wasm") {
		t.Errorf("Ready: %v", err)
	}
	if _, err := callTool(t, h, "bad__echo", map[string]any{"text": "x"}); code(err) != jsonrpc.CodeConnectionClosed || !strings.Contains(err.Error(), "cannot be started") {
		t.Errorf("a call: %v", err)
	}
	b.mu.Lock()
	starts := b.starts
	b.mu.Unlock()
	if starts != 0 {
		t.Errorf("started %d times", starts)
	}
}

// npmServer returns an npm test server's command, failing the test with
// what to install when it is missing.
func npmServer(t *testing.T, name string) string {
	t.Helper()
	abs, err := filepath.Abs("../../interop/everything/node_modules/.bin/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("%s is not installed at %s: run `bash .ci/deps.d/20-npm-interop.sh` (npm ci in internal/interop/everything; needs node 20 and npm)", name, abs)
	}
	return abs
}

// The reference TypeScript servers behind one name space with the demo:
// the echo tool of two servers told apart, a call routed to each.
func TestNpmServers(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHub(t, map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": npmServer(t, "mcp-server-everything")},
		"files":      map[string]any{"command": npmServer(t, "mcp-server-filesystem"), "args": []string{dir}},
		"demo":       demo("legacy"),
	}}, Options{})
	tools, _ := names(t, h, func() *gateway.Request { return request("tools/list", nil) }, "tools", "name")
	for _, want := range []string{"everything__echo", "demo__echo", "files__list_directory"} {
		if !contains(tools, want) {
			t.Errorf("tools/list lacks %s: %v", want, tools)
		}
	}
	if text, err := callTool(t, h, "everything__echo", map[string]any{"message": "from ts"}); err != nil || !strings.Contains(text, "from ts") {
		t.Errorf("everything__echo: %q %v", text, err)
	}
	if text, err := callTool(t, h, "demo__echo", map[string]any{"text": "from go"}); err != nil || text != "from go" {
		t.Errorf("demo__echo: %q %v", text, err)
	}
	if text, err := callTool(t, h, "files__list_directory", map[string]any{"path": dir}); err != nil || !strings.Contains(text, "hello.txt") {
		t.Errorf("files__list_directory: %q %v", text, err)
	}
}

// The start of a server whose roots/list goes to hosts does not wait for
// the server's first roots/list: no host request could answer it.
func TestNoRootsWaitWithoutRootsModule(t *testing.T) {
	h := newHub(t, map[string]any{"mcpServers": map[string]any{"a": demo("legacy")}}, Options{})
	if w := h.backends["a"].cfg.RootsWait; w >= 0 {
		t.Errorf("RootsWait = %v, want none", w)
	}
}

// watch starts a legacy session's Watch and returns once it is registered.
func watch(ctx context.Context, t *testing.T, h *Hub, session string, events chan<- [2]string) {
	t.Helper()
	go h.Watch(ctx, session, nil, func(method string, params json.RawMessage) error {
		events <- [2]string{method, string(params)}
		return nil
	})
	for {
		h.mu.Lock()
		n := len(h.watchers)
		h.mu.Unlock()
		if n > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("Watch did not start")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// A 2026-07-28 server sends its list changes only on a subscription: the
// hub holds one, so that legacy sessions hear of them too.
func TestWatchModernServerListChanges(t *testing.T) {
	h := newHub(t, map[string]any{"mcpServers": map[string]any{"m": demo("modern")}}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	b := h.backends["m"]
	for {
		b.mu.Lock()
		listening, changed := b.listening, b.changed
		b.mu.Unlock()
		if listening {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("the server's list changes are not watched")
		}
	}
	events := make(chan [2]string, 16)
	watch(ctx, t, h, "s", events)
	if _, err := callTool(t, h, "m__toggle_bonus", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev := <-events:
			if ev[0] == "notifications/tools/list_changed" {
				return
			}
		case <-ctx.Done():
			t.Fatal("no notifications/tools/list_changed")
		}
	}
}

// An interceptor's decisions reach the gateway's audit log: a module that
// fails on a call fails it closed, and both the interceptor's failure
// (direction interceptor, its module, server, and the phase starting its
// reason) and the host request (identity, server, tool, decision) are
// written.
func TestInterceptorFailureAudited(t *testing.T) {
	trap, err := filepath.Abs("../../../examples/handlers/wat/hostile/intercept-trap.wasm")
	if err != nil {
		t.Fatal(err)
	}
	entry := demo("legacy")
	entry["interceptors"] = []string{trap}
	aud := &records{}
	h := newHub(t, map[string]any{"mcpServers": map[string]any{"demo": entry}}, Options{Auditor: aud})
	r := request("tools/call", map[string]any{"name": "demo__echo", "arguments": map[string]any{"text": "x"}})
	r.Identity = &gateway.Identity{Name: "alice"}
	if _, err := handle(t, h, r); err == nil || !strings.Contains(err.Error(), `interceptor "intercept-trap" failed on tools/call`) {
		t.Fatalf("the call: %v, want the interceptor's failure", err)
	}
	aud.mu.Lock()
	defer aud.mu.Unlock()
	var got []string
	for _, rec := range aud.recs {
		if rec.Direction == "interceptor" {
			got = append(got, fmt.Sprintf("interceptor %s %s %s %s", rec.Server, rec.Method, rec.Module, rec.Decision))
			if !strings.HasPrefix(rec.Reason, "request: ") || !strings.Contains(rec.Reason, "unreachable") {
				t.Errorf("interceptor record %+v", rec)
			}
			continue
		}
		got = append(got, fmt.Sprintf("%s %s %s %s %s %s %s", rec.Direction, rec.Identity, rec.Server, rec.Method, rec.Tool, rec.Module, rec.Decision))
	}
	want := []string{"interceptor demo tools/call intercept-trap fail", "host alice demo tools/call echo  fail"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("audited\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A 2026-07-28 host is asked, in an input_required result, only for a
// capability it declared: a server's elicitation for a host that declared
// none is refused with -32601 naming it, as a legacy host's would be.
func TestMultiRoundAsksOnlyDeclaredCapabilities(t *testing.T) {
	h := newHub(t, map[string]any{"mcpServers": map[string]any{"new": demo("modern")}, "stateKey": testStateKey}, Options{})
	r := modernRetry("new__register", map[string]any{}, nil, "")
	r.ClientCapabilities = json.RawMessage(`{"sampling":{}}`)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	res, err := h.Handle(ctx, r)
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeMethodNotFound || !strings.Contains(je.Message, "did not declare the elicitation capability") {
		t.Fatalf("a host without elicitation: %s %v, want -32601 naming the capability", res, err)
	}
	r.ClientCapabilities = json.RawMessage(`{"elicitation":{}}`)
	if res, err := h.Handle(ctx, r); err != nil || !strings.Contains(string(res), "input_required") {
		t.Fatalf("a host with elicitation: %s %v, want input_required", res, err)
	}
}
