package mrtr

//lint:file-ignore SA1019 MCP 2026-07-28 deprecates roots, but servers still ask for them and a gateway module answers them: these tests use them.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/jsonrpc"
	mcphttp "github.com/snodo/snodo/transport/http"
	"github.com/snodo/snodo/transport/stdio"
)

// backend is a 2026-07-28 server (the official Go SDK, stateless
// Streamable HTTP, as a replicated server runs) with multi round-trip
// tools, and counts the calls it serves.
type backend struct {
	url   string
	calls atomic.Int32
	// seen is the last inputResponses the mixed tool saw, as text.
	seen atomic.Value
}

func newBackend(t *testing.T) *backend {
	t.Helper()
	b := &backend{}
	s := mcp.NewServer(&mcp.Implementation{Name: "mrtr-backend", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2026-07-28"}})
	elicit := &mcp.ElicitParams{Mode: "form", Message: "Your name?", RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}}}
	type args struct {
		Note string `json:"note,omitempty"`
	}
	// mixed asks for the client's roots (a module answers) and a name
	// (the host answers) in one round.
	mcp.AddTool(s, &mcp.Tool{Name: "mixed"}, func(_ context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
		b.calls.Add(1)
		roots, _ := req.Params.InputResponses["roots"].(*mcp.ListRootsResult)
		login, _ := req.Params.InputResponses["login"].(*mcp.ElicitResult)
		if roots == nil || login == nil {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"roots": &mcp.ListRootsParams{}, "login": elicit}}, nil, nil
		}
		uris := []string{}
		for _, r := range roots.Roots {
			uris = append(uris, r.URI)
		}
		text := fmt.Sprintf("roots %s; name %v; note %q", strings.Join(uris, ","), login.Content["name"], a.Note)
		b.seen.Store(text)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	// register asks the host only.
	mcp.AddTool(s, &mcp.Tool{Name: "register"}, func(_ context.Context, req *mcp.CallToolRequest, _ args) (*mcp.CallToolResult, any, error) {
		b.calls.Add(1)
		if login, ok := req.Params.InputResponses["login"].(*mcp.ElicitResult); ok && login != nil {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("registered %v", login.Content["name"])}}}, nil, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"login": elicit}}, nil, nil
	})
	// chain asks for roots (a module answers), then, in the next round,
	// for a name, keeping its progress in its own requestState.
	mcp.AddTool(s, &mcp.Tool{Name: "chain"}, func(_ context.Context, req *mcp.CallToolRequest, _ args) (*mcp.CallToolResult, any, error) {
		b.calls.Add(1)
		if req.Params.RequestState == "" {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"roots": &mcp.ListRootsParams{}}, RequestState: "step-1"}, nil, nil
		}
		if login, ok := req.Params.InputResponses["login"].(*mcp.ElicitResult); ok && login != nil && req.Params.RequestState == "step-2" {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("chained %v", login.Content["name"])}}}, nil, nil
		}
		if roots, ok := req.Params.InputResponses["roots"].(*mcp.ListRootsResult); ok && roots != nil && req.Params.RequestState == "step-1" {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"login": elicit}, RequestState: "step-2"}, nil, nil
		}
		return nil, nil, fmt.Errorf("chain: unexpected state %q", req.Params.RequestState)
	})
	// nag asks the host for ever.
	mcp.AddTool(s, &mcp.Tool{Name: "nag"}, func(_ context.Context, req *mcp.CallToolRequest, _ args) (*mcp.CallToolResult, any, error) {
		b.calls.Add(1)
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"login": elicit}}, nil, nil
	})
	// loop asks for the roots for ever.
	mcp.AddTool(s, &mcp.Tool{Name: "loop"}, func(_ context.Context, req *mcp.CallToolRequest, _ args) (*mcp.CallToolResult, any, error) {
		b.calls.Add(1)
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"roots": &mcp.ListRootsParams{}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	b.url = srv.URL
	return b
}

// connect opens one more connection to the backend (one replica's).
func (b *backend) connect(t *testing.T) *snodo.Client {
	t.Helper()
	tr, err := mcphttp.New(mcphttp.Config{URL: b.url})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := snodo.Connect(ctx, tr, &snodo.Options{Era: snodo.EraModern})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rootsModule answers roots/list as the server's Wasm modules would, and
// nothing else.
func rootsModule(n *atomic.Int32) AnswerFunc {
	return func(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, bool, error) {
		if method != "roots/list" {
			return nil, false, nil
		}
		if n != nil {
			n.Add(1)
		}
		return json.RawMessage(`{"roots":[{"uri":"file:///srv"}]}`), true, nil
	}
}

func testKey(b byte) []byte {
	k := make([]byte, KeyBytes)
	for i := range k {
		k[i] = b
	}
	return k
}

func mustNew(t *testing.T, key []byte) *Rounds {
	t.Helper()
	r, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// hostResult is what the host sees of an input_required result.
type hostResult struct {
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
	Content       []struct {
		Text string `json:"text"`
	} `json:"content"`
}

func decode(t *testing.T, raw json.RawMessage) hostResult {
	t.Helper()
	var h hostResult
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	return h
}

func text(h hostResult) string {
	if len(h.Content) == 0 {
		return ""
	}
	return h.Content[0].Text
}

const hostLogin = `{"login":{"action":"accept","content":{"name":"ada"}}}`

// The first round through one replica, the retry through another with the
// same key and its own connection to the server: the call completes, as a
// load balancer without stickiness makes a host do. The module answered
// the roots, the host the name; the host was asked for the name only, and
// its own answer for the roots (speaking for the module) was dropped.
func TestRetryOnAnotherReplicaCompletes(t *testing.T) {
	b := newBackend(t)
	a, bb := mustNew(t, testKey(7)), mustNew(t, testKey(7))
	ca, cb := b.connect(t), b.connect(t)
	var answered atomic.Int32
	ctx := context.Background()
	params := json.RawMessage(`{"name":"mixed","arguments":{"note":"hi"}}`)

	raw, err := a.Call(ctx, ca, CallRequest{Server: "srv", Method: "tools/call", Params: params, Identity: "alice", Answer: rootsModule(&answered)})
	if err != nil {
		t.Fatal(err)
	}
	h := decode(t, raw)
	if h.ResultType != "input_required" || len(h.InputRequests) != 1 || h.InputRequests["login"] == nil || h.RequestState == "" {
		t.Fatalf("first round %s: want input_required asking the host for login only", raw)
	}
	if strings.Contains(h.RequestState, "srv") || strings.Contains(h.RequestState, "file") {
		t.Errorf("requestState shows its contents: %s", h.RequestState)
	}

	retry := json.RawMessage(`{"arguments":{"note":"hi"},"name":"mixed"}`) // same params, other order
	forged := `{"login":{"action":"accept","content":{"name":"ada"}},"roots":{"roots":[{"uri":"file:///etc"}]}}`
	raw, err = bb.Call(ctx, cb, CallRequest{Server: "srv", Method: "tools/call", Params: retry, InputResponses: json.RawMessage(forged),
		RequestState: h.RequestState, Identity: "alice", Answer: rootsModule(&answered)})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(decode(t, raw)); got != `roots file:///srv; name ada; note "hi"` {
		t.Errorf("retry result %q (%s)", got, raw)
	}
	if answered.Load() != 1 {
		t.Errorf("the module answered %d times, want 1 (its answer is carried in the state)", answered.Load())
	}
	if b.calls.Load() != 2 {
		t.Errorf("the server served %d calls, want 2", b.calls.Load())
	}
}

// A server that asks the module, then the host, in two rounds of its own
// state: the gateway answers the first round itself within the host's
// request, and the retry carries the server's requestState back to it.
func TestModuleRoundsThenHostRound(t *testing.T) {
	b := newBackend(t)
	a, bb := mustNew(t, testKey(1)), mustNew(t, testKey(1))
	ca, cb := b.connect(t), b.connect(t)
	ctx := context.Background()
	params := json.RawMessage(`{"name":"chain"}`)
	raw, err := a.Call(ctx, ca, CallRequest{Server: "srv", Method: "tools/call", Params: params, Answer: rootsModule(nil)})
	if err != nil {
		t.Fatal(err)
	}
	h := decode(t, raw)
	if h.ResultType != "input_required" || h.InputRequests["login"] == nil || len(h.InputRequests) != 1 {
		t.Fatalf("first answer %s", raw)
	}
	if b.calls.Load() != 2 {
		t.Errorf("%d calls before the host's retry, want 2 (the module's round within the request)", b.calls.Load())
	}
	raw, err = bb.Call(ctx, cb, CallRequest{Server: "srv", Method: "tools/call", Params: params, InputResponses: json.RawMessage(hostLogin), RequestState: h.RequestState, Answer: rootsModule(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(decode(t, raw)); got != "chained ada" {
		t.Errorf("result %q (%s)", got, raw)
	}
}

// inputResponses without requestState were asked by nobody: they do not
// reach the server, which asks again.
func TestInputResponsesWithoutStateAreDropped(t *testing.T) {
	b := newBackend(t)
	r := mustNew(t, testKey(2))
	raw, err := r.Call(context.Background(), b.connect(t), CallRequest{Server: "srv", Method: "tools/call",
		Params:         json.RawMessage(`{"name":"register","inputResponses":{"login":{"action":"accept","content":{"name":"eve"}}}}`),
		InputResponses: json.RawMessage(hostLogin)})
	if err != nil {
		t.Fatal(err)
	}
	if h := decode(t, raw); h.ResultType != "input_required" {
		t.Fatalf("result %s: unsolicited inputResponses reached the server", raw)
	}
}

// A requestState that is tampered with, expired, presented by another
// identity, for another tool, other arguments or another server, sealed
// under another key, or not one at all is refused with -32602 and never
// reaches the server.
func TestInvalidStateIsRefusedWithoutTouchingTheServer(t *testing.T) {
	b := newBackend(t)
	r := mustNew(t, testKey(3))
	c := b.connect(t)
	ctx := context.Background()
	params := json.RawMessage(`{"name":"mixed","arguments":{"note":"hi"}}`)
	first := CallRequest{Server: "srv", Method: "tools/call", Params: params, Identity: "alice", Answer: rootsModule(nil)}
	raw, err := r.Call(ctx, c, first)
	if err != nil {
		t.Fatal(err)
	}
	state := decode(t, raw).RequestState

	tampered := []byte(state)
	tampered[len(tampered)/2] ^= 'A' ^ 'B'
	if tampered[len(tampered)/2] == state[len(state)/2] {
		tampered[len(tampered)/2] = 'A'
	}
	later := mustNew(t, testKey(3))
	later.now = func() time.Time { return time.Now().Add(DefaultTTL + time.Minute) }
	for _, tc := range []struct {
		name string
		r    *Rounds
		edit func(*CallRequest)
	}{
		{"tampered", r, func(q *CallRequest) { q.RequestState = string(tampered) }},
		{"truncated", r, func(q *CallRequest) { q.RequestState = state[:len(state)-4] }},
		{"expired", later, nil},
		{"other identity", r, func(q *CallRequest) { q.Identity = "mallory" }},
		{"anonymous", r, func(q *CallRequest) { q.Identity = "" }},
		{"other tool", r, func(q *CallRequest) { q.Params = json.RawMessage(`{"name":"register","arguments":{"note":"hi"}}`) }},
		{"other arguments", r, func(q *CallRequest) { q.Params = json.RawMessage(`{"name":"mixed","arguments":{"note":"rm -rf"}}`) }},
		{"other server", r, func(q *CallRequest) { q.Server = "other" }},
		{"other method", r, func(q *CallRequest) { q.Method = "prompts/get" }},
		{"other key", mustNew(t, testKey(4)), nil},
		{"random key", mustNew(t, nil), nil},
		{"not ours", r, func(q *CallRequest) { q.RequestState = "eyJzdGF0ZSI6MX0" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := b.calls.Load()
			q := first
			q.RequestState, q.InputResponses = state, json.RawMessage(hostLogin)
			if tc.edit != nil {
				tc.edit(&q)
			}
			_, err := tc.r.Call(ctx, c, q)
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || je.Message != ErrInvalidState.Error() || !errors.Is(err, ErrInvalidState) {
				t.Fatalf("err %v, want -32602 %q", err, ErrInvalidState)
			}
			if n := b.calls.Load(); n != before {
				t.Errorf("the server was called %d times", n-before)
			}
		})
	}
	// The same state, as issued, still works (not single-use).
	q := first
	q.RequestState, q.InputResponses = state, json.RawMessage(hostLogin)
	for range 2 {
		if _, err := r.Call(ctx, c, q); err != nil {
			t.Fatal(err)
		}
	}
}

// A server that asks the module for ever is given up on after
// MaxRoundsPerCall rounds within one host request.
func TestModuleRoundsAreBounded(t *testing.T) {
	b := newBackend(t)
	r := mustNew(t, testKey(5))
	_, err := r.Call(context.Background(), b.connect(t), CallRequest{Server: "srv", Method: "tools/call", Params: json.RawMessage(`{"name":"loop"}`), Answer: rootsModule(nil)})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError || !strings.Contains(je.Message, "gives up") {
		t.Fatalf("err %v", err)
	}
	if n := b.calls.Load(); n != MaxRoundsPerCall {
		t.Errorf("%d calls, want %d", n, MaxRoundsPerCall)
	}
}

// Params a decoder could read two ways are refused before the digest and
// the server see them.
func TestAmbiguousParamsAreRefused(t *testing.T) {
	r := mustNew(t, testKey(6))
	_, err := r.Call(context.Background(), nil, CallRequest{Server: "srv", Method: "tools/call", Params: json.RawMessage(`{"name":"register","name":"mixed"}`)})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("err %v, want -32602", err)
	}
}

func TestParseKey(t *testing.T) {
	hexKey := strings.Repeat("ab", KeyBytes)
	if k, err := ParseKey(hexKey); err != nil || len(k) != KeyBytes || k[0] != 0xab {
		t.Errorf("hex key: %x, %v", k, err)
	}
	if k, err := ParseKey(""); err != nil || k != nil {
		t.Errorf("empty: %x, %v", k, err)
	}
	t.Setenv("SNODO_TEST_STATE_KEY", hexKey)
	if k, err := ParseKey("env:SNODO_TEST_STATE_KEY"); err != nil || len(k) != KeyBytes {
		t.Errorf("env key: %x, %v", k, err)
	}
	for _, bad := range []string{"abc", strings.Repeat("zz", KeyBytes), strings.Repeat("ab", KeyBytes-1), "env:SNODO_TEST_STATE_KEY_UNSET", "env:"} {
		if _, err := ParseKey(bad); err == nil || !strings.Contains(err.Error(), "64 hexadecimal digits") {
			t.Errorf("ParseKey(%q): %v, want an error naming the format", bad, err)
		}
	}
	if _, err := New(make([]byte, 16)); err == nil {
		t.Error("New took a 16-byte key")
	}
}

// Open never panics and accepts only what was sealed under its key.
func FuzzOpen(f *testing.F) {
	r, err := New(testKey(9))
	if err != nil {
		f.Fatal(err)
	}
	// The same blob in every fuzzing process: a fixed nonce and expiry.
	plain, err := json.Marshal(&sealed{Server: "srv", Method: "tools/call", Expires: 1 << 62})
	if err != nil {
		f.Fatal(err)
	}
	nonce := make([]byte, r.aead.NonceSize())
	valid := statePrefix + base64.RawURLEncoding.EncodeToString(r.aead.Seal(nonce, nonce, plain, []byte(statePrefix)))
	for _, s := range []string{valid, valid[:len(valid)-1], statePrefix, statePrefix + "AAAA", "", "s1.!!!", valid + "A", strings.Repeat("A", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, blob string) {
		if err := r.Open(blob); err == nil && blob != valid {
			t.Errorf("Open accepted %q", blob)
		}
	})
}

// The example demo server (examples/servers/demo, 2026-07-28 over stdio),
// one process per replica: its sample tool's sampling request is answered
// by a module through replica A, its register tool's elicitation goes to
// the host through replica A and the host's retry through replica B
// completes.
func TestDemoServerAcrossReplicas(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "demo")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/snodo/snodo/examples/servers/demo").CombinedOutput(); err != nil {
		t.Fatalf("go build demo: %v\n%s", err, out)
	}
	connect := func() *snodo.Client {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// The connection lives as long as the context it starts with.
		tr, err := stdio.Connect(context.Background(), stdio.Config{Command: bin, Args: []string{"--era", "modern"}, Stderr: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		c, err := snodo.Connect(ctx, tr, &snodo.Options{Era: snodo.EraModern})
		if err != nil {
			tr.Close()
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := mustNew(t, testKey(8)), mustNew(t, testKey(8))
	ca, cb := connect(), connect()
	ctx := context.Background()

	sampler := func(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, bool, error) {
		if method != "sampling/createMessage" {
			return nil, false, nil
		}
		return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"wasm-model"}`), true, nil
	}
	raw, err := a.Call(ctx, ca, CallRequest{Server: "demo", Method: "tools/call", Params: json.RawMessage(`{"name":"sample","arguments":{"prompt":"What is the capital of France?"}}`), Answer: sampler})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(decode(t, raw)); got != "wasm-model answered: Paris" {
		t.Errorf("sample: %q (%s)", got, raw)
	}

	params := json.RawMessage(`{"name":"register","arguments":{}}`)
	raw, err = a.Call(ctx, ca, CallRequest{Server: "demo", Method: "tools/call", Params: params, Identity: "alice", Answer: sampler})
	if err != nil {
		t.Fatal(err)
	}
	h := decode(t, raw)
	if h.ResultType != "input_required" || h.InputRequests["registration"] == nil {
		t.Fatalf("register: %s", raw)
	}
	answer := `{"registration":{"action":"accept","content":{"name":"Ada","age":36,"plan":"pro","newsletter":true}}}`
	raw, err = b.Call(ctx, cb, CallRequest{Server: "demo", Method: "tools/call", Params: params, InputResponses: json.RawMessage(answer),
		RequestState: h.RequestState, Identity: "alice", Answer: sampler})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(decode(t, raw)); !strings.HasPrefix(got, "registered Ada") {
		t.Errorf("register retry: %q (%s)", got, raw)
	}
}

// The params a state is bound to are compared as the server reads them:
// two strings a decoder would both turn into U+FFFD (lone surrogates,
// invalid UTF-8) are different params, and so are a string and its
// escaped spelling.
func TestStateIsBoundToTheExactStrings(t *testing.T) {
	b := newBackend(t)
	r := mustNew(t, testKey(10))
	c := b.connect(t)
	ctx := context.Background()
	first := CallRequest{Server: "srv", Method: "tools/call", Params: json.RawMessage(`{"name":"mixed","arguments":{"note":"\ud800"}}`), Answer: rootsModule(nil)}
	raw, err := r.Call(ctx, c, first)
	if err != nil {
		t.Fatal(err)
	}
	state := decode(t, raw).RequestState
	for _, p := range []string{
		`{"name":"mixed","arguments":{"note":"\udc00"}}`,
		"{\"name\":\"mixed\",\"arguments\":{\"note\":\"\xff\"}}",
		`{"name":"mixed","arguments":{"note":"\ufffd"}}`,
	} {
		before := b.calls.Load()
		q := first
		q.Params, q.RequestState, q.InputResponses = json.RawMessage(p), state, json.RawMessage(hostLogin)
		if _, err := r.Call(ctx, c, q); !errors.Is(err, ErrInvalidState) {
			t.Errorf("params %q: err %v, want %v", p, err, ErrInvalidState)
		}
		if n := b.calls.Load(); n != before {
			t.Errorf("params %q: the server was called", p)
		}
	}
	// The same params, spaced and ordered otherwise, are the same.
	q := first
	q.Params, q.RequestState, q.InputResponses = json.RawMessage(` { "arguments" : { "note" : "\ud800" } , "name" : "mixed" } `), state, json.RawMessage(hostLogin)
	if _, err := r.Call(ctx, c, q); err != nil {
		t.Errorf("same params, other spacing: %v", err)
	}
}

// A server that asks the host for ever is given up on after MaxRounds
// rounds of one request, counted in the state across retries and
// replicas.
func TestRoundsAcrossRetriesAreBounded(t *testing.T) {
	b := newBackend(t)
	replicas := []*Rounds{mustNew(t, testKey(11)), mustNew(t, testKey(11))}
	clients := []*snodo.Client{b.connect(t), b.connect(t)}
	ctx := context.Background()
	q := CallRequest{Server: "srv", Method: "tools/call", Params: json.RawMessage(`{"name":"nag"}`), Identity: "alice"}
	for i := 0; ; i++ {
		raw, err := replicas[i%2].Call(ctx, clients[i%2], q)
		if err != nil {
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError || !strings.Contains(je.Message, fmt.Sprint(MaxRounds)) {
				t.Fatalf("err %v", err)
			}
			break
		}
		if i > MaxRounds {
			t.Fatalf("still going after %d host rounds", i)
		}
		q.RequestState, q.InputResponses = decode(t, raw).RequestState, json.RawMessage(hostLogin)
	}
	if n := b.calls.Load(); n != MaxRounds {
		t.Errorf("the server served %d rounds, want %d", n, MaxRounds)
	}
}

func TestSplit(t *testing.T) {
	rest, ir, rs, err := Split(json.RawMessage(`{"name":"t","inputResponses":{"a":{}},"requestState":"s1.x"}`))
	if err != nil || string(rest) != `{"name":"t"}` || string(ir) != `{"a":{}}` || rs != "s1.x" {
		t.Errorf("Split: %s %s %q %v", rest, ir, rs, err)
	}
	if rest, ir, rs, err := Split(json.RawMessage(`{"name":"t"}`)); err != nil || string(rest) != `{"name":"t"}` || ir != nil || rs != "" {
		t.Errorf("Split without: %s %s %q %v", rest, ir, rs, err)
	}
	for _, bad := range []string{`{"requestState":7}`, `[1]`, `"x"`} {
		var je *jsonrpc.Error
		if _, _, _, err := Split(json.RawMessage(bad)); !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("Split(%s): %v, want -32602", bad, err)
		}
	}
}

// clientFunc is a backend that answers every round with f.
type clientFunc func(params json.RawMessage) (json.RawMessage, error)

func (f clientFunc) Request(_ context.Context, _ string, params json.RawMessage, _ ...snodo.CallOption) (json.RawMessage, error) {
	return f(params)
}

// What a server asks for, and what a module answers, is bounded: too many
// inputs, too long a key, too much state to carry (escapes included), a
// module answer that is not an object, and a module's failure each fail
// the host's request with an error that says so; no state is handed out.
func TestServerAndModuleInputsAreBounded(t *testing.T) {
	login := `{"method":"elicitation/create","params":{"message":"Your name?","requestedSchema":{"type":"object","properties":{}}}}`
	roots := `{"method":"roots/list","params":{}}`
	many := make([]string, MaxInputs+1)
	for i := range many {
		many[i] = fmt.Sprintf(`"k%d":%s`, i, login)
	}
	state := func(n int, c string) string { return `"` + strings.Repeat(c, n) + `"` }
	moduleErr := errors.New("module trapped")
	for _, tc := range []struct {
		name, result string
		answer       AnswerFunc
		want         string
	}{
		{"too many inputs", `{"resultType":"input_required","inputRequests":{` + strings.Join(many, ",") + `}}`, nil, "inputs at once"},
		{"long key", `{"resultType":"input_required","inputRequests":{"` + strings.Repeat("k", MaxKeyBytes+1) + `":` + login + `}}`, nil, "key of"},
		{"large state", `{"resultType":"input_required","inputRequests":{"login":` + login + `},"requestState":` + state(MaxCarriedBytes+1, "s") + `}`, nil, "requestState is"},
		{"state of escapes", `{"resultType":"input_required","inputRequests":{"login":` + login + `},"requestState":` + state(MaxCarriedBytes/2, `\u0001`) + `}`, nil, "the state the gateway would hand"},
		{"large state and answers", `{"resultType":"input_required","inputRequests":{"login":` + login + `,"roots":` + roots + `},"requestState":` + state(MaxCarriedBytes-10, "s") + `}`, rootsModule(nil), "answers the gateway carries"},
		{"answer not an object", `{"resultType":"input_required","inputRequests":{"roots":` + roots + `}}`, func(context.Context, string, json.RawMessage) (json.RawMessage, bool, error) {
			return json.RawMessage(`[1]`), true, nil
		}, "not a JSON object"},
		{"module fails", `{"resultType":"input_required","inputRequests":{"roots":` + roots + `}}`, func(context.Context, string, json.RawMessage) (json.RawMessage, bool, error) {
			return nil, false, moduleErr
		}, moduleErr.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustNew(t, testKey(12))
			c := clientFunc(func(json.RawMessage) (json.RawMessage, error) { return json.RawMessage(tc.result), nil })
			res, err := r.Call(context.Background(), c, CallRequest{Server: "srv", Method: "tools/call", Params: json.RawMessage(`{"name":"t"}`), Answer: tc.answer})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("result %.200s, err %v; want an error containing %q", res, err, tc.want)
			}
		})
	}
}
