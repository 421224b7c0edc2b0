package snodo_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// "a DiscoverResult → modern": server info, capabilities, instructions and
// the negotiated version come from the discover result; no initialize.
func TestConnectDiscoverResultMakesModernConnection(t *testing.T) {
	f := newFake(t, modernServer(noMore))
	c, err := snodo.Connect(context.Background(), f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server().Era != snodo.EraModern || c.Server().ProtocolVersion != "2026-07-28" {
		t.Errorf("era %v version %s, want modern 2026-07-28", c.Server().Era, c.Server().ProtocolVersion)
	}
	if c.Server().Implementation.Name != "fake" || c.Server().Implementation.Version != "1.2.3" {
		t.Errorf("server info %+v", c.Server().Implementation)
	}
	if c.Server().Capabilities.Tools == nil || !c.Server().Capabilities.Tools.ListChanged || c.Server().Capabilities.Resources == nil || !c.Server().Capabilities.Resources.Subscribe {
		t.Errorf("capabilities %+v", c.Server().Capabilities)
	}
	if c.Server().Instructions != "be nice" {
		t.Errorf("instructions %q", c.Server().Instructions)
	}
	if got := f.methods(); !slices.Equal(got, []string{"server/discover"}) {
		t.Errorf("sent %v, want only server/discover", got)
	}
	d := f.sent("server/discover")[0]
	if string(d.meta("io.modelcontextprotocol/protocolVersion")) != `"2026-07-28"` {
		t.Errorf("probe _meta version %s", d.meta("io.modelcontextprotocol/protocolVersion"))
	}
	if d.Opts.Timeout != 5*time.Second {
		t.Errorf("probe timeout %v, want 5s", d.Opts.Timeout)
	}
	if c.Server().Discovered == nil || c.Server().Discovered.TTL() != time.Second || c.Server().Discovered.Scope != "public" {
		t.Errorf("discover cache hints not exposed: %+v", c.Server().Discovered)
	}
}

// "any other error ... → legacy: initialize offering 2025-11-25 ..., then
// notifications/initialized".
func TestConnectOtherProbeErrorFallsBackToInitialize(t *testing.T) {
	f := newFake(t, legacyServer("2025-06-18", noMore))
	c, err := snodo.Connect(context.Background(), f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server().Era != snodo.EraLegacy || c.Server().ProtocolVersion != "2025-06-18" {
		t.Errorf("era %v version %s, want legacy 2025-06-18", c.Server().Era, c.Server().ProtocolVersion)
	}
	if got := f.methods(); !slices.Equal(got, []string{"server/discover", "initialize"}) {
		t.Errorf("sent %v", got)
	}
	init := f.sent("initialize")[0]
	if string(init.param("protocolVersion")) != `"2025-11-25"` {
		t.Errorf("initialize offered %s, want 2025-11-25", init.param("protocolVersion"))
	}
	if len(f.notifications) != 1 || f.notifications[0].Method != "notifications/initialized" {
		t.Errorf("notifications %v, want notifications/initialized", f.notifications)
	}
	if c.Server().Implementation.Name != "legacy-fake" || c.Server().Instructions != "legacy hello" || c.Server().Capabilities.Prompts == nil {
		t.Errorf("server info %+v, instructions %q", c.Server().Implementation, c.Server().Instructions)
	}
}

// "no answer within a probe timeout (default 5 s, configurable) → legacy".
func TestConnectProbeTimeoutFallsBackToInitialize(t *testing.T) {
	f := newFake(t, func(fc *fakeCall) *jsonrpc.Response {
		switch fc.Req.Method {
		case "server/discover":
			return nil // silence
		case "initialize":
			return result(fc, initializeResult("2025-11-25"))
		}
		return noMore(fc)
	})
	c, err := snodo.Connect(context.Background(), f, &snodo.Options{ProbeTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if c.Server().Era != snodo.EraLegacy {
		t.Errorf("era %v, want legacy", c.Server().Era)
	}
	if got := f.sent("server/discover")[0].Opts.Timeout; got != 20*time.Millisecond {
		t.Errorf("probe timeout %v, want the configured 20ms", got)
	}
}

// "an UnsupportedProtocolVersionError (-32022) → modern with a version from
// its supported list (never fall back to initialize then)": a list with no
// version Snodo speaks is an error, and initialize is never tried.
func TestConnectUnsupportedVersionNeverFallsBack(t *testing.T) {
	f := newFake(t, func(fc *fakeCall) *jsonrpc.Response {
		switch fc.Req.Method {
		case "server/discover":
			return errorResponse(fc, -32022, "Unsupported protocol version", `{"supported":["2027-03-01","2019-01-01"],"requested":"2026-07-28"}`)
		case "initialize":
			return result(fc, initializeResult("2025-11-25"))
		}
		return noMore(fc)
	})
	_, err := snodo.Connect(context.Background(), f, nil)
	if !errors.Is(err, snodo.ErrUnsupportedVersion) {
		t.Fatalf("err %v, want ErrUnsupportedVersion", err)
	}
	if len(f.sent("initialize")) != 0 {
		t.Error("fell back to initialize after -32022")
	}
}

// A -32022 whose supported list names only legacy versions is the server
// saying which version to use (the official Go SDK's servers answer so
// when configured for legacy versions only): the newest listed legacy
// version is the one offered in initialize — not 2025-11-25 by default.
func TestConnectUnsupportedVersionListingLegacyVersionsUsesThem(t *testing.T) {
	f := newFake(t, func(fc *fakeCall) *jsonrpc.Response {
		switch fc.Req.Method {
		case "server/discover":
			return errorResponse(fc, -32022, "Unsupported protocol version", `{"supported":["2025-06-18","2025-03-26"],"requested":"2026-07-28"}`)
		case "initialize":
			var offered string
			_ = json.Unmarshal(fc.param("protocolVersion"), &offered)
			if offered != "2025-06-18" {
				return errorResponse(fc, -32602, "offered "+offered, "")
			}
			return result(fc, initializeResult("2025-06-18"))
		}
		return noMore(fc)
	})
	c, err := snodo.Connect(context.Background(), f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server().Era != snodo.EraLegacy || c.Server().ProtocolVersion != "2025-06-18" {
		t.Fatalf("era %v version %s, want legacy 2025-06-18", c.Server().Era, c.Server().ProtocolVersion)
	}
	if n := len(f.sent("server/discover")); n != 1 {
		t.Errorf("server/discover sent %d times, want 1", n)
	}
}

// Forcing the modern era keeps a legacy-only -32022 list an error.
func TestConnectForcedModernRefusesLegacyOnlyList(t *testing.T) {
	f := newFake(t, func(fc *fakeCall) *jsonrpc.Response {
		if fc.Req.Method == "server/discover" {
			return errorResponse(fc, -32022, "Unsupported protocol version", `{"supported":["2025-11-25"],"requested":"2026-07-28"}`)
		}
		return result(fc, initializeResult("2025-11-25"))
	})
	_, err := snodo.Connect(context.Background(), f, &snodo.Options{Era: snodo.EraModern})
	if !errors.Is(err, snodo.ErrUnsupportedVersion) || len(f.sent("initialize")) != 0 {
		t.Fatalf("err %v, initialize sent %d times", err, len(f.sent("initialize")))
	}
}

// "accept the server's choice among 2024-11-05, 2025-03-26, 2025-06-18,
// 2025-11-25 (anything else: a clear error)".
func TestConnectAcceptsLegacyVersionsAndRefusesOthers(t *testing.T) {
	for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		c, err := snodo.Connect(context.Background(), newFake(t, legacyServer(v, noMore)), nil)
		if err != nil {
			t.Errorf("%s: err %v", v, err)
		} else if c.Server().ProtocolVersion != v {
			t.Errorf("%s: negotiated %s", v, c.Server().ProtocolVersion)
		}
	}
	for _, v := range []string{"2026-07-28", "2099-01-01", ""} {
		f := newFake(t, legacyServer(v, noMore))
		_, err := snodo.Connect(context.Background(), f, nil)
		var e *snodo.Error
		if !errors.As(err, &e) || e.Kind != jsonrpc.KindProtocol || !errors.Is(err, snodo.ErrUnsupportedVersion) {
			t.Errorf("%q: err %v, want a protocol error", v, err)
		}
		if len(f.notifications) != 0 {
			t.Errorf("%q: sent notifications/initialized after refusing the version", v)
		}
	}
}

// "Options force an era or a version."
func TestConnectForcedEraAndVersion(t *testing.T) {
	f := newFake(t, legacyServer("2025-11-25", noMore))
	c, err := snodo.Connect(context.Background(), f, &snodo.Options{Era: snodo.EraLegacy})
	if err != nil || c.Server().Era != snodo.EraLegacy {
		t.Fatalf("forced legacy: %v", err)
	}
	if len(f.sent("server/discover")) != 0 {
		t.Error("forced legacy still probed")
	}

	f = newFake(t, legacyServer("2025-06-18", noMore))
	c, err = snodo.Connect(context.Background(), f, &snodo.Options{ProtocolVersion: "2025-06-18"})
	if err != nil || c.Server().ProtocolVersion != "2025-06-18" {
		t.Fatalf("forced 2025-06-18: %v", err)
	}
	if got := string(f.sent("initialize")[0].param("protocolVersion")); got != `"2025-06-18"` {
		t.Errorf("offered %s", got)
	}

	// A forced version the server does not take is an error.
	f = newFake(t, legacyServer("2025-11-25", noMore))
	if _, err := snodo.Connect(context.Background(), f, &snodo.Options{
		ProtocolVersion: "2025-06-18",
	}); !errors.Is(err, snodo.ErrUnsupportedVersion) {
		t.Errorf("server chose another version than the forced one: err %v", err)
	}

	// Forced modern never falls back.
	f = newFake(t, legacyServer("2025-11-25", noMore))
	_, err = snodo.Connect(context.Background(), f, &snodo.Options{Era: snodo.EraModern})
	var e *snodo.Error
	if !errors.As(err, &e) || e.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("forced modern against a legacy server: err %v", err)
	}
	if len(f.sent("initialize")) != 0 {
		t.Error("forced modern fell back to initialize")
	}

	if _, err := snodo.Connect(context.Background(), newFake(t, noMore), &snodo.Options{
		ProtocolVersion: "1999-01-01",
	}); err == nil {
		t.Error("a version Snodo does not speak was accepted")
	}
}

// "The era is cached for the connection": later calls never probe again.
func TestConnectEraIsCached(t *testing.T) {
	f := newFake(t, modernServer(func(fc *fakeCall) *jsonrpc.Response {
		return result(fc, `{"tools":[],"ttlMs":0,"cacheScope":"public"}`)
	}))
	c, err := snodo.Connect(context.Background(), f, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := snodo.ListTools(c, context.Background(), ""); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.sent("server/discover")); n != 1 {
		t.Errorf("%d probes, want 1", n)
	}
}

// "The client needs [Notify] for notifications/initialized, so a transport
// without it cannot open an initialize-era connection."
func TestConnectLegacyNeedsNotifier(t *testing.T) {
	f := newFake(t, legacyServer("2025-11-25", noMore))
	_, err := snodo.Connect(context.Background(), requestOnly{f}, &snodo.Options{Era: snodo.EraLegacy})
	if err == nil || !contains(err.Error(), "notifications/initialized") {
		t.Errorf("err %v", err)
	}
}

// requestOnly hides every optional interface of a transport.
type requestOnly struct{ f *fake }

func (r requestOnly) Request(ctx context.Context, req *jsonrpc.Request, opts transport.RequestOptions) (*jsonrpc.Response, error) {
	return r.f.Request(ctx, req, opts)
}
func (r requestOnly) Close() error { return r.f.Close() }

var _ = json.RawMessage(nil)

// "an UnsupportedProtocolVersionError (-32022) → modern with a version from
// its supported list", and "a DiscoverResult → modern, choosing the newest
// mutually supported version".
func TestConnectUnsupportedVersionRetriesWithSupportedModernVersion(t *testing.T) {
	defer snodo.SetModernVersions([]string{"2027-01-01", "2026-07-28"})()
	f := newFake(t, func(fc *fakeCall) *jsonrpc.Response {
		if fc.Req.Method != "server/discover" {
			return noMore(fc)
		}
		if string(fc.meta("io.modelcontextprotocol/protocolVersion")) == `"2027-01-01"` {
			return errorResponse(fc, -32022, "Unsupported protocol version", `{"supported":["2026-07-28","2025-11-25"],"requested":"2027-01-01"}`)
		}
		return result(fc, discoverResult)
	})
	c, err := snodo.Connect(context.Background(), f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server().Era != snodo.EraModern || c.Server().ProtocolVersion != "2026-07-28" {
		t.Errorf("era %v version %s", c.Server().Era, c.Server().ProtocolVersion)
	}
	if n := len(f.sent("server/discover")); n != 2 || len(f.sent("initialize")) != 0 {
		t.Errorf("%d probes, %d initialize", n, len(f.sent("initialize")))
	}

	// The discover result lists both; the newest common one wins.
	f = newFake(t, func(fc *fakeCall) *jsonrpc.Response {
		return result(fc, `{"supportedVersions":["2026-07-28","2027-01-01"],"capabilities":{},"ttlMs":0,"cacheScope":"public"}`)
	})
	c, err = snodo.Connect(context.Background(), f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server().ProtocolVersion != "2027-01-01" {
		t.Errorf("version %s, want 2027-01-01", c.Server().ProtocolVersion)
	}
	f = newFake(t, func(fc *fakeCall) *jsonrpc.Response {
		return result(fc, `{"supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"public"}`)
	})
	c, err = snodo.Connect(context.Background(), f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server().ProtocolVersion != "2026-07-28" {
		t.Errorf("version %s, want 2026-07-28", c.Server().ProtocolVersion)
	}
}

// A result that is not a DiscoverResult (a lax legacy server answering any
// method with {}) is not a modern answer: fall back.
func TestConnectNonDiscoverResultFallsBack(t *testing.T) {
	f := newFake(t, func(fc *fakeCall) *jsonrpc.Response {
		switch fc.Req.Method {
		case "server/discover":
			return result(fc, `{}`)
		case "initialize":
			return result(fc, initializeResult("2025-03-26"))
		}
		return noMore(fc)
	})
	c, err := snodo.Connect(context.Background(), f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server().Era != snodo.EraLegacy || c.Server().ProtocolVersion != "2025-03-26" {
		t.Errorf("era %v version %s", c.Server().Era, c.Server().ProtocolVersion)
	}
}

// A -32022 whose list names the very version the client asked for (a
// server behind a load balancer whose instances disagree, or one that
// rejects the first request of every client, as the conformance suite's
// request-metadata scenario does) is retried once with that version; a
// second -32022 is the error.
func TestConnectUnsupportedVersionListingTheSameVersionRetriesOnce(t *testing.T) {
	for _, rejections := range []int{1, 2} {
		n := 0
		f := newFake(t, func(fc *fakeCall) *jsonrpc.Response {
			if fc.Req.Method != "server/discover" {
				return noMore(fc)
			}
			if n++; n <= rejections {
				return errorResponse(fc, -32022, "Unsupported protocol version", `{"supported":["2026-07-28"],"requested":"2026-07-28"}`)
			}
			return result(fc, discoverResult)
		})
		c, err := snodo.Connect(context.Background(), f, &snodo.Options{ProtocolVersion: "2026-07-28"})
		switch {
		case rejections == 1 && err != nil:
			t.Fatalf("one -32022 naming 2026-07-28: %v, want a retry that connects", err)
		case rejections == 1 && (c.Server().ProtocolVersion != "2026-07-28" || len(f.sent("server/discover")) != 2):
			t.Errorf("version %s after %d probes", c.Server().ProtocolVersion, len(f.sent("server/discover")))
		case rejections == 2 && !errors.Is(err, snodo.ErrUnsupportedVersion):
			t.Fatalf("two -32022: %v, want ErrUnsupportedVersion", err)
		case rejections == 2 && len(f.sent("server/discover")) != 2:
			t.Errorf("%d probes after two -32022, want 2", len(f.sent("server/discover")))
		}
	}
}
