package front

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/snodo/snodo/jsonrpc"
)

// errStreamDone is the error of a write to a request's stream after its
// response was written.
var errStreamDone = errors.New("the request's stream has ended")

// sseWriter writes one HTTP response as a text/event-stream, opened at the
// first message that is not the final response: a request answered with
// no notification before its result gets a plain JSON body instead.
// Each message is one JSON-RPC message on one line (jsonrpc.Append never
// writes a line break), so one data field carries it.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController

	mu     sync.Mutex
	opened bool
	done   bool
	err    error // the first failed write
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

// open sends the stream's headers, once.
func (s *sseWriter) open() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.openLocked()
}

func (s *sseWriter) openLocked() {
	if s.opened {
		return
	}
	s.opened = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	s.err = s.rc.Flush()
}

// writeLocked writes one event and flushes it.
func (s *sseWriter) writeLocked(line []byte) error {
	if s.err != nil {
		return s.err
	}
	buf := make([]byte, 0, len(line)+24)
	buf = append(buf, "event: message\ndata: "...)
	buf = append(buf, line...)
	buf = append(buf, "\n\n"...)
	if _, err := s.w.Write(buf); err != nil {
		s.err = err
		return err
	}
	s.err = s.rc.Flush()
	return s.err
}

// send writes a message on the stream.
func (s *sseWriter) send(m jsonrpc.Message) error {
	b, err := jsonrpc.Append(nil, m)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return errStreamDone
	}
	s.openLocked()
	return s.writeLocked(b)
}

// notify writes a notification on the stream.
func (s *sseWriter) notify(method string, params json.RawMessage) error {
	return s.send(&jsonrpc.Notification{Method: method, Params: params})
}

// finish writes the final response on the stream when it is open, and
// reports whether it was; either way nothing more is written.
func (s *sseWriter) finish(b []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	if !s.opened {
		return false
	}
	_ = s.writeLocked(b)
	return true
}

// end marks the stream ended without a response (the request was
// cancelled, or a stream of notifications stopped): later writes fail
// instead of touching a finished HTTP response.
func (s *sseWriter) end() {
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
}

// keepAlive writes an SSE comment every interval while the stream is open
// and ctx lasts, so that proxies and hosts do not close a quiet long-lived
// stream (a GET stream, a subscriptions/listen); it returns when ctx ends.
func (s *sseWriter) keepAlive(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.mu.Lock()
			if s.opened && !s.done && s.err == nil {
				if _, err := s.w.Write([]byte(":\n\n")); err != nil {
					s.err = err
				} else {
					s.err = s.rc.Flush()
				}
			}
			s.mu.Unlock()
		}
	}
}
