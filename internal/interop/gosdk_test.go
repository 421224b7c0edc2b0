package interop

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
)

// A Go SDK server in the 2026-07-28 era: Connect finds it modern, and its
// tools' input requests (elicitation, sampling, roots) come back as
// input_required results that the native handlers answer.
func TestGoSDKModern(t *testing.T) {
	srv := startServer(t, "gosdk-modern")
	var logs []snodo.LogMessage
	var mu sync.Mutex
	c, err := snodo.Connect(context.Background(), srv.conn, withLogHook(func(m snodo.LogMessage) {
		mu.Lock()
		logs = append(logs, m)
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Server().Era != snodo.EraModern || c.Server().ProtocolVersion != "2026-07-28" || c.Server().Implementation.Name != "interop-gosdk" {
		t.Fatalf("era %v version %s server %+v", c.Server().Era, c.Server().ProtocolVersion, c.Server().Implementation)
	}
	if c.Server().Instructions != "Interop server for Snodo." {
		t.Errorf("instructions %q", c.Server().Instructions)
	}
	exerciseCommon(t, c)

	// Input required over several rounds, with an escaped requestState
	// echoed exactly and each round's answers sent only with it.
	if got := mustCall(t, c, "multi", nil); got != "three rounds: snodo-test: Paris, 1 roots" {
		t.Errorf("multi: %q", got)
	}
	// Per-request log level.
	mustCall(t, c, "log", nil, snodo.WithLogLevel("debug"))
	mu.Lock()
	if len(logs) != 1 || logs[0].Level != "warning" || logs[0].Logger != "interop" {
		t.Errorf("logs %+v", logs)
	}
	mu.Unlock()

	// subscriptions/listen: a tools list change and a resource update.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	listenSeesToolAndResourceChanges(t, ctx, c)
	tools := 0
	for _, err := range c.Tools(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		tools++
	}
	if tools < 8 {
		t.Errorf("%d tools", tools)
	}
}

// A Go SDK server that serves only the legacy era: the probe is refused,
// Connect falls back to initialize, and the same tools ask through
// server-to-client requests answered by the same handlers.
func TestGoSDKLegacy(t *testing.T) {
	srv := startServer(t, "gosdk-legacy")
	var logs []snodo.LogMessage
	var mu sync.Mutex
	c, err := snodo.Connect(context.Background(), srv.conn, withLogHook(func(m snodo.LogMessage) {
		mu.Lock()
		logs = append(logs, m)
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Server().Era != snodo.EraLegacy || c.Server().ProtocolVersion != "2025-11-25" {
		t.Fatalf("era %v version %s", c.Server().Era, c.Server().ProtocolVersion)
	}
	exerciseCommon(t, c)
	ctx := context.Background()
	if err := c.Ping(ctx); err != nil {
		t.Error(err)
	}
	if err := c.SetLogLevel(ctx, "debug"); err != nil {
		t.Fatal(err)
	}
	mustCall(t, c, "log", nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(logs)
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	if len(logs) == 0 || logs[0].Logger != "interop" {
		t.Errorf("logs %+v", logs)
	}
	mu.Unlock()

	// Listen, emulated with resources/subscribe and list-changed
	// notifications.
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	listenSeesToolAndResourceChanges(t, lctx, c)
}

// exerciseCommon runs what both eras share: tools that elicit, sample and
// list roots, progress, cancellation, resources.
func exerciseCommon(t *testing.T, c *snodo.Client) {
	t.Helper()
	ctx := context.Background()
	if got := mustCall(t, c, "ask", nil); got != "hello Ada (accept)" {
		t.Errorf("ask: %q", got)
	}
	if got := mustCall(t, c, "sample", nil); got != "sampled snodo-test: Paris" {
		t.Errorf("sample: %q", got)
	}
	if got := mustCall(t, c, "roots", nil); got != "roots file:///work" {
		t.Errorf("roots: %q", got)
	}

	var mu sync.Mutex
	var progress []snodo.Progress
	got := mustCall(t, c, "count", map[string]int{"steps": 3, "delay_ms": 1}, snodo.WithProgress(func(p snodo.Progress) {
		mu.Lock()
		progress = append(progress, p)
		mu.Unlock()
	}), snodo.WithResetTimeoutOnProgress(), snodo.WithMaxTotalTimeout(time.Minute))
	if got != "counted to 3" {
		t.Errorf("count: %q", got)
	}
	mu.Lock()
	if len(progress) == 0 || progress[len(progress)-1].Message == "" {
		t.Errorf("progress %+v", progress)
	}
	mu.Unlock()

	// A timeout: -32001, and the server is told the request is cancelled.
	_, err := c.CallTool(ctx, "count", map[string]int{"steps": 1000, "delay_ms": 50}, snodo.WithTimeout(100*time.Millisecond))
	var e *snodo.Error
	if !errors.As(err, &e) || e.Code != jsonrpc.CodeRequestTimeout {
		t.Errorf("timeout: %v", err)
	}
	// Cancellation through ctx.
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if _, err := c.CallTool(cctx, "count", map[string]int{"steps": 1000, "delay_ms": 50}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancel: %v", err)
	}

	rr, err := c.ReadResource(ctx, "interop://counter")
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text == nil || *rr.Contents[0].Text != "1" {
		t.Errorf("read: %+v %v", rr, err)
	}
	if c.Server().Era == snodo.EraModern && rr.Scope == "" {
		t.Errorf("modern resources/read without cache hints: %+v", rr.Cache)
	}
}

// "the same native elicitation handler answers a legacy server's
// elicitation/create and a modern server's input_required round".
func TestSameNativeHandlerAnswersLegacyAndModernServers(t *testing.T) {
	for _, role := range []string{"gosdk-legacy", "gosdk-modern"} {
		srv := startServer(t, role)
		c, err := snodo.Connect(context.Background(), srv.conn, &snodo.Options{
			Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: elicitHandler},
		})
		if err != nil {
			t.Fatal(err)
		}
		before := elicitCalls.Load()
		if got := mustCall(t, c, "ask", nil); got != "hello Ada (accept)" {
			t.Errorf("%s: %q", role, got)
		}
		if elicitCalls.Load() != before+1 {
			t.Errorf("%s: the handler was not called", role)
		}
		// How the question came: a server request, or an input_required.
		wire := strings.Join(clientLines(t, srv.log), "\n")
		modern := strings.Contains(wire, `"inputResponses":{"name":{"action":"accept"`)
		if modern != (role == "gosdk-modern") {
			t.Errorf("%s: era %v, inputResponses on the wire %v", role, c.Server().Era, modern)
		}
	}
}

// Every request cancelled by timeout or ctx was announced to the server.
func TestCancellationReachesTheServer(t *testing.T) {
	srv := startServer(t, "gosdk-modern")
	c, err := snodo.Connect(context.Background(), srv.conn, nil)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, _ = c.CallTool(cctx, "count", map[string]int{"steps": 1000, "delay_ms": 50})
	var found bool
	deadline := time.Now().Add(10 * time.Second)
	for !found && time.Now().Before(deadline) {
		for _, line := range clientLines(t, srv.log) {
			var n struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal([]byte(line), &n)
			found = found || n.Method == "notifications/cancelled"
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !found {
		t.Error("no notifications/cancelled on the wire")
	}
}

// A Go SDK server restricted to legacy versions answers server/discover
// with -32022 and its list of legacy versions. That list says which version
// to use, so Connect offers the newest of them in initialize — following
// the server's list rather than falling back — and the connection works
// with no option.
func TestGoSDKLegacyVersionsOnlyAnswersDiscoverWith32022(t *testing.T) {
	srv := startServer(t, "gosdk-legacy-only-versions")
	c, err := snodo.Connect(context.Background(), srv.conn, allHandlers())
	if err != nil {
		t.Fatal(err)
	}
	if c.Server().Era != snodo.EraLegacy || c.Server().ProtocolVersion != "2025-11-25" {
		t.Errorf("era %v version %s, want legacy 2025-11-25", c.Server().Era, c.Server().ProtocolVersion)
	}
	discovers := 0
	for _, line := range clientLines(t, srv.log) {
		if strings.Contains(line, `"method":"server/discover"`) {
			discovers++
		}
	}
	if discovers != 1 {
		t.Errorf("server/discover sent %d times, want 1", discovers)
	}
	if got := mustCall(t, c, "ask", nil); got != "hello Ada (accept)" {
		t.Errorf("ask: %q", got)
	}
}
