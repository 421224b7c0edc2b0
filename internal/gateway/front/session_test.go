package front

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/snodo/snodo/jsonrpc"
)

// TestAskTableIsBounded: at most maxPendingAsks server-to-client requests
// wait for a session's host; one more is refused at once, and a host that
// did not declare the capability is never asked.
func TestAskTableIsBounded(t *testing.T) {
	s := newSession(context.Background(), "s", nil)
	defer s.cancel(nil)
	s.caps = json.RawMessage(`{"elicitation":{}}`)
	ctx, cancel := context.WithCancel(context.Background())
	var sent sync.WaitGroup
	sent.Add(maxPendingAsks)
	send := func(jsonrpc.Message) error { sent.Done(); return nil }
	var wg sync.WaitGroup
	for range maxPendingAsks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.ask(ctx, "elicitation/create", json.RawMessage(`{}`), send); !errors.Is(err, context.Canceled) {
				t.Errorf("a waiting ask ended with %v", err)
			}
		}()
	}
	sent.Wait()
	// The ask past the bound has an ended context, so that a missing bound
	// fails here rather than waiting.
	ended, end := context.WithCancel(context.Background())
	end()
	_, err := s.ask(ended, "elicitation/create", json.RawMessage(`{}`), func(jsonrpc.Message) error {
		t.Error("the ask past the bound was sent")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "too many requests waiting") {
		t.Errorf("ask past the bound: %v", err)
	}
	cancel()
	wg.Wait()
	s.mu.Lock()
	left := len(s.pending)
	s.mu.Unlock()
	if left != 0 {
		t.Errorf("%d asks left in the table after their requests ended", left)
	}
	s.caps = json.RawMessage(`{}`)
	if _, err := s.ask(context.Background(), "sampling/createMessage", nil, func(jsonrpc.Message) error {
		t.Error("a host without the capability was asked")
		return nil
	}); err == nil {
		t.Error("no error for a capability the host did not declare")
	}
}

// fakeTel records the spans the front starts.
type fakeTel struct {
	mu    sync.Mutex
	spans []string
}

func (f *fakeTel) ServerSpan(ctx context.Context, method, target string, meta map[string]json.RawMessage, h http.Header) (context.Context, func(error)) {
	f.mu.Lock()
	f.spans = append(f.spans, method+" "+target)
	f.mu.Unlock()
	return ctx, func(error) {}
}

func (f *fakeTel) ClientSpan(ctx context.Context, method, target, server string) (context.Context, func(error)) {
	return ctx, func(error) {}
}

func (f *fakeTel) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("fake_metric 1\n")) })
}
