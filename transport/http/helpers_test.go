package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	mcphttp "github.com/snodo/snodo/transport/http"
	"github.com/snodo/snodo/transport/internal/transporttest"
)

// recorded is one HTTP request the test server received.
type recorded struct {
	Method string
	Header nethttp.Header
	Body   []byte
	Msg    jsonrpc.Message // nil for GET and DELETE
}

// server is an httptest server whose MCP endpoint is a function of the
// test, recording every request.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
	seen chan recorded // every request, also sent here when not full
}

func newServer(t *testing.T, h func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded)) *server {
	t.Helper()
	s := &server{seen: make(chan recorded, 64)}
	s.Server = httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := recorded{Method: r.Method, Header: r.Header.Clone(), Body: body}
		if len(body) > 0 {
			rec.Msg, _ = jsonrpc.Decode(body)
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, rec)
		s.mu.Unlock()
		select {
		case s.seen <- rec:
		default:
		}
		h(w, r, rec)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) requests() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.reqs...)
}

// waitFor returns the first request (already received or arriving) that
// matches, or fails the test when ctx ends.
func (s *server) waitFor(t *testing.T, ctx context.Context, match func(recorded) bool) recorded {
	t.Helper()
	for _, r := range s.requests() {
		if match(r) {
			return r
		}
	}
	for {
		select {
		case r := <-s.seen:
			if match(r) {
				return r
			}
		case <-ctx.Done():
			for _, r := range s.requests() {
				if match(r) {
					return r
				}
			}
			t.Fatalf("no matching request; got %d requests", len(s.requests()))
			return recorded{}
		}
	}
}

func newTransport(t *testing.T, cfg mcphttp.Config) *mcphttp.Transport {
	t.Helper()
	tr, err := mcphttp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

func writeJSON(w nethttp.ResponseWriter, status int, v string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, v)
}

// sse starts an SSE response and returns a function that writes one event
// and flushes it.
func sse(w nethttp.ResponseWriter) func(format string, args ...any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	w.(nethttp.Flusher).Flush()
	return func(format string, args ...any) {
		fmt.Fprintf(w, format, args...)
		w.(nethttp.Flusher).Flush()
	}
}

func reqOf(rec recorded) *jsonrpc.Request {
	r, _ := rec.Msg.(*jsonrpc.Request)
	return r
}

func isMethod(m string) func(recorded) bool {
	return func(r recorded) bool {
		switch x := r.Msg.(type) {
		case *jsonrpc.Request:
			return x.Method == m
		case *jsonrpc.Notification:
			return x.Method == m
		}
		return false
	}
}

// result is the JSON text of a response to id with result res.
func result(id jsonrpc.ID, res string) string {
	return transporttest.Response(id, `"result":`+res)
}

// fixedDialect is a transport.PolicySource with fixed headers.
type fixedDialect []transport.Header

func (d fixedDialect) TransportPolicy(*jsonrpc.Request) transport.Policy {
	return transport.Policy{Headers: d}
}

var (
	legacyHeaders = fixedDialect{{Name: "MCP-Protocol-Version", Value: "2025-11-25"}}
	modernHeaders = fixedDialect{{Name: "MCP-Protocol-Version", Value: "2026-07-28"}}
)

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

var _ = strings.Contains
