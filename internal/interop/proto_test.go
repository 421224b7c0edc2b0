package interop

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo"
)

// WithLogLevel on a legacy connection to the official Go SDK: the client
// sends logging/setLevel before the call (the SDK's server logs nothing
// before a level is set), so the call's log message arrives — before its
// result, on the one ordered stream.
func TestGoSDKLegacyPerCallLogLevel(t *testing.T) {
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
	mustCall(t, c, "log", nil, snodo.WithLogLevel("warning"))
	mu.Lock()
	defer mu.Unlock()
	if len(logs) != 1 || logs[0].Level != "warning" || logs[0].Logger != "interop" {
		t.Errorf("logs %+v", logs)
	}
}

// toolCount lists every tool.
func toolCount(t *testing.T, c *snodo.Client, opts ...snodo.CallOption) int {
	t.Helper()
	n := 0
	for _, err := range c.Tools(context.Background(), opts...) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// The result cache against the official Go SDK serving ttlMs: in
// 2026-07-28 a fresh tools/list is reused until the subscription's
// tools/list_changed drops it (WithoutCache asks anyway); in the legacy era
// nothing is cached.
func TestGoSDKResultCache(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := snodo.Connect(ctx, startServer(t, "gosdk-modern-cached").conn, allHandlers())
	if err != nil {
		t.Fatal(err)
	}
	n := toolCount(t, c)
	mustCall(t, c, "grow", nil) // adds a tool; nobody listens yet
	if got := toolCount(t, c); got != n {
		t.Errorf("within the ttl: %d tools, want the cached %d", got, n)
	}
	if got := toolCount(t, c, snodo.WithoutCache()); got != n+1 {
		t.Errorf("WithoutCache: %d tools, want %d", got, n+1)
	}
	_, sub, err := c.Listen(ctx, snodo.SubscriptionFilter{ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	mustCall(t, c, "grow", nil)
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Method == "notifications/tools/list_changed" {
			break
		}
	}
	if got := toolCount(t, c); got != n+2 {
		t.Errorf("after tools/list_changed: %d tools, want %d", got, n+2)
	}

	legacy, err := snodo.Connect(ctx, startServer(t, "gosdk-legacy-cached").conn, allHandlers())
	if err != nil {
		t.Fatal(err)
	}
	n = toolCount(t, legacy)
	mustCall(t, legacy, "grow", nil)
	if got := toolCount(t, legacy); got != n+1 {
		t.Errorf("legacy era: %d tools, want %d (nothing cached)", got, n+1)
	}
}
