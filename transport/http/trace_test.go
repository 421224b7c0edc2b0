package http_test

import (
	"context"
	"encoding/json"
	nethttp "net/http"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	mcphttp "github.com/snodo/snodo/transport/http"
)

// spanContext is a context holding a sampled span context with a
// tracestate, as an OpenTelemetry span started in it would.
func spanContext(t testing.TB) context.Context {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, err := trace.ParseTraceState("rojo=00f067aa0ba902b7")
	if err != nil {
		t.Fatal(err)
	}
	return trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts,
	}))
}

// TestTraceHeaders: a request or notification whose context holds a span
// carries its traceparent and tracestate headers; one without carries
// none; a traceparent the caller set is kept.
func TestTraceHeaders(t *testing.T) {
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		if req := reqOf(rec); req != nil {
			writeJSON(w, 200, result(req.ID, `{}`))
			return
		}
		w.WriteHeader(202)
	})
	tr := newTransport(t, mcphttp.Config{URL: srv.URL})
	req := &jsonrpc.Request{Method: "tools/list", Params: json.RawMessage(`{}`)}
	const want = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

	if _, err := tr.Request(spanContext(t), req, transport.RequestOptions{Dialect: legacyHeaders}); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Request(context.Background(), req, transport.RequestOptions{Dialect: legacyHeaders}); err != nil {
		t.Fatal(err)
	}
	const own = "00-11111111111111111111111111111111-2222222222222222-01"
	if _, err := tr.Request(spanContext(t), req, transport.RequestOptions{Dialect: legacyHeaders,
		Headers: []transport.Header{{Name: "traceparent", Value: own}}}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Notify(spanContext(t), &jsonrpc.Notification{Method: "notifications/roots/list_changed"}, transport.NotifyOptions{Dialect: legacyHeaders}); err != nil {
		t.Fatal(err)
	}
	recs := srv.requests()
	if len(recs) != 4 {
		t.Fatalf("%d requests", len(recs))
	}
	for i, w := range []struct{ tp, ts string }{{want, "rojo=00f067aa0ba902b7"}, {"", ""}, {own, ""}, {want, "rojo=00f067aa0ba902b7"}} {
		if got := recs[i].Header.Get("Traceparent"); got != w.tp {
			t.Errorf("request %d: traceparent %q, want %q", i, got, w.tp)
		}
		if got := recs[i].Header.Get("Tracestate"); got != w.ts {
			t.Errorf("request %d: tracestate %q, want %q", i, got, w.ts)
		}
	}
}

// BenchmarkHTTPRoundTripTraced is BenchmarkHTTPRoundTrip with a span in
// the caller's context: the cost of the trace headers.
func BenchmarkHTTPRoundTripTraced(b *testing.B) {
	s := newLeanServer(b)
	tr := benchTransport(b, s)
	req := &jsonrpc.Request{Method: "tools/call", Params: benchParams}
	opts := transport.RequestOptions{Dialect: benchHeaders}
	ctx := spanContext(b)
	b.ReportAllocs()
	for b.Loop() {
		if resp, err := tr.Request(ctx, req, opts); err != nil || len(resp.Result) == 0 {
			b.Fatal(resp, err)
		}
	}
}
