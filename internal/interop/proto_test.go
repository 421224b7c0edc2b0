package interop

import (
	"context"
	"sync"
	"testing"

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
	c, err := snodo.Connect(context.Background(), srv.conn, append(allHandlers(), snodo.WithLogHook(func(m snodo.LogMessage) {
		mu.Lock()
		logs = append(logs, m)
		mu.Unlock()
	}))...)
	if err != nil {
		t.Fatal(err)
	}
	mustCall(t, c, "log", nil, snodo.WithLogLevel(snodo.LogWarning))
	mu.Lock()
	defer mu.Unlock()
	if len(logs) != 1 || logs[0].Level != snodo.LogWarning || logs[0].Logger != "interop" {
		t.Errorf("logs %+v", logs)
	}
}
