package http

import "testing"

// The transport's own client keeps each idle connection small: 1 KiB read
// and 2 KiB write buffers instead of net/http's 4 and 4, and no HTTP/2
// set-up for a plain http endpoint, where HTTP/2 is never negotiated. Over
// https HTTP/2 is still attempted.
func TestOwnClientLeanConnections(t *testing.T) {
	for _, tc := range []struct {
		url   string
		http2 bool
	}{
		{"http://127.0.0.1:1/mcp", false},
		{"HTTP://127.0.0.1:1/mcp", false},
		{"https://127.0.0.1:1/mcp", true},
	} {
		tr, err := New(Config{URL: tc.url})
		if err != nil {
			t.Fatal(err)
		}
		own := tr.own
		tr.Close()
		if own.ReadBufferSize != 1<<10 || own.WriteBufferSize != 2<<10 {
			t.Errorf("%s: buffers of %d and %d bytes, want 1024 and 2048", tc.url, own.ReadBufferSize, own.WriteBufferSize)
		}
		if own.ForceAttemptHTTP2 != tc.http2 {
			t.Errorf("%s: ForceAttemptHTTP2 %v, want %v", tc.url, own.ForceAttemptHTTP2, tc.http2)
		}
	}
}
