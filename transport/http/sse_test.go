package http

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestSSEReader(t *testing.T) {
	in := "\xEF\xBB\xBFid: a\r\nretry: 250\r\ndata: one\r\ndata:two\r\n\r\n" +
		": comment\n\n" +
		"event: ping\ndata: x\n\n" +
		"id: b\x00c\ndata: {\"a\":1}\rdata: more\n\n" +
		"retry: 12x\nid\ndata\n\n" +
		"data: unterminated"
	r := newSSEReader(strings.NewReader(in), 1024)
	want := []sseEvent{{data: []byte("one\ntwo")}, {typ: "ping", data: []byte("x")}, {data: []byte("{\"a\":1}\nmore")}, {data: []byte("")}}
	for i, w := range want {
		ev, err := r.next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ev.typ != w.typ || string(ev.data) != string(w.data) {
			t.Errorf("event %d = %q %q, want %q %q", i, ev.typ, ev.data, w.typ, w.data)
		}
		switch i {
		case 0, 1, 2:
			if r.lastID != "a" || r.retry != 250*time.Millisecond {
				t.Errorf("event %d: last ID %q retry %v", i, r.lastID, r.retry)
			}
		case 3:
			if r.lastID != "" || !r.sawID || r.retry != 250*time.Millisecond {
				t.Errorf("event %d: last ID %q retry %v", i, r.lastID, r.retry)
			}
		}
	}
	if _, err := r.next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("unterminated event: %v", err)
	}
}

func TestSSEReaderBounds(t *testing.T) {
	long := "data: " + strings.Repeat("x", 2000) + "\n\n"
	if _, err := newSSEReader(strings.NewReader(long), 1024).next(); !errors.Is(err, errEventTooLarge) {
		t.Errorf("long line: %v", err)
	}
	many := strings.Repeat("data: "+strings.Repeat("x", 100)+"\n", 20) + "\n"
	if _, err := newSSEReader(strings.NewReader(many), 1024).next(); !errors.Is(err, errEventTooLarge) {
		t.Errorf("long event: %v", err)
	}
	// A stream of comments is read without buffering them.
	comments := strings.Repeat(":"+strings.Repeat(" ", 500)+"\n", 1000) + "data: ok\n\n"
	ev, err := newSSEReader(strings.NewReader(comments), 1024).next()
	if err != nil || string(ev.data) != "ok" {
		t.Errorf("after comments: %q %v", ev.data, err)
	}
}

// The wait before reconnecting follows the server's retry field within
// [minRetry, maxRetry]: a hostile value cannot park a stream for days.
func TestRetryDelayBounds(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{
		{0, defaultRetry},
		{time.Millisecond, minRetry},
		{500 * time.Millisecond, 500 * time.Millisecond},
		{(1<<31 - 1) * time.Millisecond, maxRetry},
	} {
		if got := retryDelay(c.in); got != c.want {
			t.Errorf("retryDelay(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
