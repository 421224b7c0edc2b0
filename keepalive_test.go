package snodo_test

import (
	"context"
	"encoding/json"
	"errors"
	nethttp "net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/fakeserver"
	"github.com/snodo/snodo/internal/subbuf"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/stdio"
)

// waitBound only bounds the waits of these tests; no verdict depends on it.
const waitBound = 60 * time.Second

var keepaliveEras = []struct {
	name   string
	era    snodo.Era
	method string // what a keepalive ping sends
}{
	{"legacy", snodo.EraLegacy, "ping"},
	{"2026-07-28", snodo.EraModern, "server/discover"},
}

// wantKeepaliveError checks that err is the error of a connection a failed
// keepalive ping ended: -32000, wrapping ErrKeepalive, saying why.
func wantKeepaliveError(t *testing.T, what string, err error, method string) {
	t.Helper()
	var e *jsonrpc.Error
	if !errors.As(err, &e) || e.Code != jsonrpc.CodeConnectionClosed || !errors.Is(err, snodo.ErrKeepalive) || errors.Is(err, snodo.ErrTimeout) {
		t.Fatalf("%s: want a -32000 error wrapping ErrKeepalive (not a timeout), got %v", what, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "keepalive ping failed") || !strings.Contains(msg, method) {
		t.Errorf("%s: the message does not say that the keepalive %s failed: %q", what, method, msg)
	}
}

// keepaliveFreeze is a stdio server (fakeserver scenario) that answers
// the handshake of either era and keepalive pings until it is sent a
// tools/call; then it stops reading and answering, as a frozen server
// does, until it is killed.
func keepaliveFreeze(s *fakeserver.Server) {
	for {
		m, err := s.Read()
		if err != nil {
			return
		}
		req, ok := m.(*jsonrpc.Request)
		if !ok {
			continue
		}
		switch req.Method {
		case "server/discover":
			s.Reply(req.ID, json.RawMessage(discoverResult))
		case "initialize":
			s.Reply(req.ID, json.RawMessage(initializeResult("2025-11-25")))
		case "ping":
			s.Reply(req.ID, struct{}{})
		case "tools/call":
			time.Sleep(time.Hour)
			return
		default:
			s.Send(jsonrpc.NewErrorResponse(req.ID, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "unexpected " + req.Method}))
		}
	}
}

// A stdio server that stops reading is found by the keepalive ping: the
// call in flight, and every later call, fail with -32000 saying the ping
// failed and why — not with the call's own (long) timeout.
func TestKeepaliveStdioFrozenServer(t *testing.T) {
	for _, tc := range keepaliveEras {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitBound)
			defer cancel()
			conn, err := stdio.Connect(ctx, stdio.Config{
				Command: fakeserver.Executable(),
				Env:     []stdio.EnvVar{{Name: fakeserver.ScenarioEnv, Value: "keepalive-freeze"}},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				conn.Close()
				_ = syscall.Kill(conn.Pid(), syscall.SIGKILL)
				wctx, wcancel := context.WithTimeout(context.Background(), waitBound)
				defer wcancel()
				_, _ = conn.Wait(wctx)
			})
			c, err := snodo.Connect(ctx, conn, &snodo.Options{Era: tc.era, Keepalive: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.Request(ctx, "tools/call", json.RawMessage(`{"name":"freeze"}`), snodo.WithTimeout(waitBound))
			wantKeepaliveError(t, "the call in flight", err, tc.method)
			if ctx.Err() != nil {
				t.Fatal("the call ended only at the test's bound")
			}
			_, err = c.Request(ctx, "tools/list", nil)
			wantKeepaliveError(t, "a later call", err, tc.method)
			if !strings.Contains(err.Error(), "did not answer "+tc.method+" within 50ms") {
				t.Errorf("the error does not say why the ping failed: %v", err)
			}
			err = c.Notify(ctx, "notifications/x", nil)
			wantKeepaliveError(t, "a later notification", err, tc.method)
		})
	}
}

// A Streamable HTTP server whose handlers block is found by the keepalive
// ping: the call in flight and later calls fail with -32000.
func TestKeepaliveHTTPBlockingServer(t *testing.T) {
	for _, tc := range keepaliveEras {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			var discovers atomic.Int32
			srv := newMCPHTTPServer(t, func(req *jsonrpc.Request, h nethttp.Header) (int, string, nethttp.Header) {
				switch req.Method {
				case "server/discover":
					if tc.era == snodo.EraLegacy {
						return 400, "Bad Request: unknown method", nil
					}
					if discovers.Add(1) == 1 {
						return 200, httpDiscoverResult, nil
					}
				case "initialize":
					return 200, initResult, nethttp.Header{"Mcp-Session-Id": {"sess-ka"}}
				}
				<-release // the server hangs
				return 200, `{"jsonrpc":"2.0","id":ID,"result":{}}`, nil
			})
			t.Cleanup(func() { close(release) }) // before the server closes
			ctx, cancel := context.WithTimeout(context.Background(), waitBound)
			defer cancel()
			c, err := snodo.Connect(ctx, httpTransport(t, srv.URL), &snodo.Options{Keepalive: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if c.Server().Era != tc.era {
				t.Fatalf("era %v", c.Server().Era)
			}
			defer c.Close()
			_, err = c.Request(ctx, "tools/call", json.RawMessage(`{"name":"hang"}`), snodo.WithTimeout(waitBound))
			wantKeepaliveError(t, "the call in flight", err, tc.method)
			if ctx.Err() != nil {
				t.Fatal("the call ended only at the test's bound")
			}
			_, err = c.Request(ctx, "tools/list", nil)
			wantKeepaliveError(t, "a later call", err, tc.method)
			if n := len(srv.requests(tc.method)); tc.era == snodo.EraLegacy && n != 1 {
				t.Errorf("%d pings sent; one at a time, and none after the failure", n)
			}
		})
	}
}

// connectKeepalive connects over the in-memory fake server of the era,
// whose keepalive pings go to ping (nil: no answer).
func connectKeepalive(t *testing.T, era snodo.Era, ping func(fc *fakeCall) *jsonrpc.Response, opts *snodo.Options) (*snodo.Client, *fake) {
	t.Helper()
	var connected atomic.Bool
	var method string
	next := func(fc *fakeCall) *jsonrpc.Response {
		if connected.Load() && fc.Req.Method == method {
			return ping(fc)
		}
		switch fc.Req.Method {
		case "ping":
			return result(fc, `{}`)
		case "tools/list":
			return result(fc, `{"tools":[],"resultType":"complete","ttlMs":0,"cacheScope":"private"}`)
		}
		return noMore(fc)
	}
	var f *fake
	if era == snodo.EraModern {
		method = "server/discover"
		f = newFake(t, func(fc *fakeCall) *jsonrpc.Response {
			if connected.Load() && fc.Req.Method == method {
				return ping(fc)
			}
			return modernServer(next)(fc)
		})
	} else {
		method = "ping"
		f = newFake(t, legacyServer("2025-11-25", next))
	}
	var o snodo.Options
	if opts != nil {
		o = *opts
	}
	o.Era = era
	c, err := snodo.Connect(context.Background(), f, &o)
	if err != nil {
		t.Fatal(err)
	}
	connected.Store(true)
	return c, f
}

// A server that answers keeps the connection through many intervals; the
// pings stop at Close.
func TestKeepaliveAnsweredKeepsConnection(t *testing.T) {
	for _, tc := range keepaliveEras {
		t.Run(tc.name, func(t *testing.T) {
			var pings atomic.Int32
			// A generous wait for each answer: the verdict must not depend
			// on how fast the machine runs the fake.
			c, f := connectKeepalive(t, tc.era, func(fc *fakeCall) *jsonrpc.Response {
				pings.Add(1)
				if tc.era == snodo.EraModern {
					return result(fc, discoverResult)
				}
				return result(fc, `{}`)
			}, keepaliveTimeout(5*time.Millisecond, waitBound))
			deadline := time.Now().Add(waitBound)
			for pings.Load() < 5 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if n := pings.Load(); n < 5 {
				t.Fatalf("%d pings in %v", n, waitBound)
			}
			if _, err := snodo.ListTools(c, context.Background(), ""); err != nil {
				t.Fatalf("the connection did not survive answered pings: %v", err)
			}
			c.Close()
			n := len(f.sent(tc.method))
			time.Sleep(50 * time.Millisecond)
			if m := len(f.sent(tc.method)); m != n {
				t.Errorf("%d pings sent after Close", m-n)
			}
		})
	}
}

// Pings do not pile up: while one is unanswered, no other is sent.
func TestKeepaliveOnePingOutstanding(t *testing.T) {
	for _, tc := range keepaliveEras {
		t.Run(tc.name, func(t *testing.T) {
			var pings atomic.Int32
			c, _ := connectKeepalive(t, tc.era, func(fc *fakeCall) *jsonrpc.Response {
				pings.Add(1)
				return nil // never answered
			}, keepaliveTimeout(time.Millisecond, waitBound))
			deadline := time.Now().Add(waitBound)
			for pings.Load() < 1 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond) // a hundred intervals
			if n := pings.Load(); n != 1 {
				t.Errorf("%d pings outstanding, want 1", n)
			}
			c.Close() // cancels the outstanding ping; goleak checks the pinger ended
		})
	}
}

// A client without an interval sends no pings.
func TestKeepaliveOffSendsNoPings(t *testing.T) {
	for _, tc := range keepaliveEras {
		t.Run(tc.name, func(t *testing.T) {
			var pings atomic.Int32
			c, _ := connectKeepalive(t, tc.era, func(fc *fakeCall) *jsonrpc.Response {
				pings.Add(1)
				return result(fc, `{}`)
			}, nil)
			time.Sleep(100 * time.Millisecond)
			c.Close()
			if n := pings.Load(); n != 0 {
				t.Errorf("%d pings sent without Options.Keepalive", n)
			}
		})
	}
}

// Subscriptions open when a ping fails end with the keepalive error, and
// later ones are refused with it.
func TestKeepaliveFailureEndsSubscriptions(t *testing.T) {
	for _, tc := range keepaliveEras {
		t.Run(tc.name, func(t *testing.T) {
			var silent atomic.Bool
			c, f := connectKeepalive(t, tc.era, func(fc *fakeCall) *jsonrpc.Response {
				if silent.Load() {
					return nil
				}
				if tc.era == snodo.EraModern {
					return result(fc, discoverResult)
				}
				return result(fc, `{}`)
			}, &snodo.Options{Keepalive: 5 * time.Millisecond})
			defer c.Close()
			f.listen = func(req *jsonrpc.Request, sub *subbuf.Buffer[transport.Event]) (json.RawMessage, error) {
				return json.RawMessage(`{"notifications":{"toolsListChanged":true}}`), nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitBound)
			defer cancel()
			_, sub, err := c.Listen(ctx, snodo.SubscriptionFilter{ToolsListChanged: true})
			if err != nil {
				t.Fatal(err)
			}
			silent.Store(true)
			_, err = sub.Next(ctx)
			wantKeepaliveError(t, "the subscription", err, tc.method)
			_, _, err = c.Listen(ctx, snodo.SubscriptionFilter{ToolsListChanged: true})
			wantKeepaliveError(t, "a later Listen", err, tc.method)
			_, err = snodo.ListTools(c, ctx, "")
			wantKeepaliveError(t, "a later call", err, tc.method)
		})
	}
}

// keepaliveTimeout is a keepalive every interval that waits timeout for
// each ping's answer.
func keepaliveTimeout(interval, timeout time.Duration) *snodo.Options {
	o := &snodo.Options{Keepalive: interval}
	snodo.KeepaliveTimeout(o, timeout)
	return o
}
