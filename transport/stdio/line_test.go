package stdio_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// longLineCase sends a first request that the server answers with a line
// of lineBytes, and a second one answered normally.
func longLineCase(t *testing.T, lineBytes int64, maxLineBytes int) {
	cfg := config("longline", strconv.FormatInt(lineBytes, 10))
	cfg.MaxLineBytes = maxLineBytes
	c := connect(t, cfg)
	_, err := c.Request(context.Background(), &jsonrpc.Request{Method: "first"}, transport.RequestOptions{Timeout: 500 * time.Millisecond})
	if !errors.Is(err, transport.ErrTimeout) {
		t.Fatalf("request answered by the over-long line: %v, want a -32001 timeout", err)
	}
	resp := call(t, c, "second", nil, transport.RequestOptions{})
	if string(resp.Result) != `{"ok":"after long line"}` {
		t.Fatalf("later response %s", resp.Result)
	}
}

// ":max_line_bytes - the largest response line to accept, default 16 MiB.
// The rest of a longer line is discarded as it arrives, so the request it
// answered times out; later responses are unaffected." (17 MiB, default)
func TestLineOverDefaultMaxLineBytesTimesOutItsRequestOnly(t *testing.T) {
	longLineCase(t, 17<<20, 0)
}

// The same with a configured limit.
func TestLineOverConfiguredMaxLineBytesTimesOutItsRequestOnly(t *testing.T) {
	longLineCase(t, 4096, 1024)
}

// A line just within the configured limit is accepted.
func TestLineWithinMaxLineBytesIsAccepted(t *testing.T) {
	cfg := config("longline", "1024")
	cfg.MaxLineBytes = 1024
	c := connect(t, cfg)
	if _, err := c.Request(context.Background(), &jsonrpc.Request{Method: "first"}, transport.RequestOptions{Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
}

// "The rest of a longer line is discarded as it arrives": a 100 MiB line
// under the default limit costs memory bounded by the limit, not by the
// line. (The bound has generous slack: 4 × 16 MiB against a 100 MiB line.)
func TestHundredMiBLineMemoryBoundedByLimit(t *testing.T) {
	c := connect(t, config("longline", strconv.Itoa(100<<20)))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := c.Request(context.Background(), &jsonrpc.Request{Method: "first"}, transport.RequestOptions{Timeout: 100 * time.Millisecond})
	if !errors.Is(err, transport.ErrTimeout) {
		t.Fatalf("request answered by the 100 MiB line: %v", err)
	}
	call(t, c, "second", nil, transport.RequestOptions{}) // the whole line has been read
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %.1f MiB while reading a 100 MiB line", float64(allocated)/(1<<20))
	if limit := uint64(4 * jsonrpc.DefaultMaxLineBytes); allocated > limit {
		t.Fatalf("allocated %d bytes for a 100 MiB line, more than %d: the line is being kept", allocated, limit)
	}
}
