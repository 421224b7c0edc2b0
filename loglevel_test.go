package snodo_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/jsonrpc"
)

func setLevels(f *fake) []string {
	var out []string
	for _, fc := range f.sent("logging/setLevel") {
		out = append(out, string(fc.param("level")))
	}
	return out
}

// WithLogLevel in the legacy era sends logging/setLevel before the call when
// the level differs from the last one sent, never per call when unchanged.
func TestLogLevelLegacySendsSetLevelOnChange(t *testing.T) {
	c, f := connectLegacy(t, func(fc *fakeCall) *jsonrpc.Response {
		switch fc.Req.Method {
		case "logging/setLevel":
			return result(fc, `{}`)
		case "tools/call":
			return result(fc, `{"content":[]}`)
		}
		return noMore(fc)
	})
	ctx := context.Background()
	call := func(opts ...snodo.CallOption) {
		t.Helper()
		if _, err := c.CallTool(ctx, "a", nil, opts...); err != nil {
			t.Fatal(err)
		}
	}
	call()
	call(snodo.WithLogLevel("warning"))
	call(snodo.WithLogLevel("warning"))
	call()
	call(snodo.WithLogLevel("debug"))
	if err := c.SetLogLevel(ctx, "debug"); err != nil { // explicit: always sent
		t.Fatal(err)
	}
	call(snodo.WithLogLevel("debug"))
	if got := setLevels(f); len(got) != 3 || got[0] != `"warning"` || got[1] != `"debug"` || got[2] != `"debug"` {
		t.Errorf("setLevel sent %v, want warning, debug, debug", got)
	}
	// The setLevel goes before its call, and no _meta logLevel in legacy.
	m := f.methods()
	if i := indexOf(m, "logging/setLevel"); i < 0 || m[i+1] != "tools/call" {
		t.Errorf("order %v", m)
	}
	for _, fc := range f.sent("tools/call") {
		if fc.meta("io.modelcontextprotocol/logLevel") != nil {
			t.Errorf("legacy request with a _meta logLevel: %s", fc.Req.Params)
		}
	}

	// Concurrent callers asking for a new level send it once.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := c.CallTool(ctx, "a", nil, snodo.WithLogLevel("error")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := setLevels(f); len(got) != 4 || got[3] != `"error"` {
		t.Errorf("setLevel sent %v, want one more: error", got)
	}

	// An unknown level fails the call before anything is sent.
	n := len(f.methods())
	_, err := c.CallTool(ctx, "a", nil, snodo.WithLogLevel("loud"))
	var e *snodo.Error
	if !errors.As(err, &e) || e.Code != jsonrpc.CodeInvalidParams || len(f.methods()) != n {
		t.Errorf("unknown level: %v, %d requests sent", err, len(f.methods())-n)
	}
}

// A failed setLevel fails the call, and is tried again next time; a server
// without the logging capability is sent nothing.
func TestLogLevelLegacyFailureAndNoCapability(t *testing.T) {
	fail := true
	c, f := connectLegacy(t, func(fc *fakeCall) *jsonrpc.Response {
		switch fc.Req.Method {
		case "logging/setLevel":
			if fail {
				return errorResponse(fc, jsonrpc.CodeInternalError, "nope", "")
			}
			return result(fc, `{}`)
		case "tools/call":
			return result(fc, `{"content":[]}`)
		}
		return noMore(fc)
	})
	ctx := context.Background()
	if _, err := c.CallTool(ctx, "a", nil, snodo.WithLogLevel("info")); err == nil || len(f.sent("tools/call")) != 0 {
		t.Fatalf("a failed setLevel: %v, %d calls", err, len(f.sent("tools/call")))
	}
	fail = false
	if _, err := c.CallTool(ctx, "a", nil, snodo.WithLogLevel("info")); err != nil {
		t.Fatal(err)
	}
	if len(setLevels(f)) != 2 {
		t.Errorf("setLevel sent %v", setLevels(f))
	}

	nolog := newFake(t, func(fc *fakeCall) *jsonrpc.Response {
		switch fc.Req.Method {
		case "server/discover":
			return errorResponse(fc, jsonrpc.CodeMethodNotFound, "Method not found", "")
		case "initialize":
			return result(fc, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}`)
		case "tools/call":
			return result(fc, `{"content":[]}`)
		}
		return noMore(fc)
	})
	c2, err := snodo.Connect(ctx, nolog, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.CallTool(ctx, "a", nil, snodo.WithLogLevel("info")); err != nil {
		t.Fatal(err)
	}
	if len(nolog.sent("logging/setLevel")) != 0 {
		t.Error("setLevel sent to a server without the logging capability")
	}
}

// In 2026-07-28, WithLogLevel stays per request, in _meta.
func TestLogLevelModernStaysInMeta(t *testing.T) {
	c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response { return result(fc, `{"content":[]}`) })
	if _, err := c.CallTool(context.Background(), "a", nil, snodo.WithLogLevel("notice")); err != nil {
		t.Fatal(err)
	}
	if len(f.sent("logging/setLevel")) != 0 || string(f.sent("tools/call")[0].meta("io.modelcontextprotocol/logLevel")) != `"notice"` {
		t.Errorf("modern log level: %v", f.methods())
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
