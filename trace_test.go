package snodo_test

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
)

func spanContext(t *testing.T) context.Context {
	t.Helper()
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, err := trace.ParseTraceState("vendor=abc")
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	m, _ := baggage.NewMember("user", "ada")
	b, _ := baggage.New(m)
	return baggage.ContextWithBaggage(ctx, b)
}

const wantTraceparent = `"00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"`

// basic/index.mdx "OpenTelemetry trace context": traceparent, tracestate
// and baggage in _meta, on every request of a call including its input
// rounds; in both eras (2025-11-25 allows unprefixed _meta keys).
func TestTraceContextFromSpanInBothEras(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		handle := func(fc *fakeCall) *jsonrpc.Response {
			if !legacy && fc.param("inputResponses") == nil {
				return result(fc, `{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create","params":`+elicitParams+`}},"requestState":"s"}`)
			}
			return result(fc, `{"content":[]}`)
		}
		var (
			c *snodo.Client
			f *fake
		)
		if legacy {
			c, f = connectLegacy(t, handle, &snodo.Options{
				Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: nameHandler},
			})
		} else {
			c, f = connectModern(t, handle, &snodo.Options{
				Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: nameHandler},
			})
		}
		if _, err := c.CallTool(spanContext(t), "a", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CallTool(context.Background(), "b", nil); err != nil {
			t.Fatal(err)
		}
		calls := f.sent("tools/call")
		want := 2 // a, b
		if !legacy {
			want = 4 // two rounds each
		}
		if len(calls) != want {
			t.Fatalf("legacy=%v: %d calls, want %d", legacy, len(calls), want)
		}
		for _, fc := range calls {
			traced := string(fc.param("name")) == `"a"`
			if traced && (string(fc.meta("traceparent")) != wantTraceparent || string(fc.meta("tracestate")) != `"vendor=abc"` || string(fc.meta("baggage")) != `"user=ada"`) {
				t.Errorf("legacy=%v: _meta %s", legacy, fc.param("_meta"))
			}
			if !traced && (fc.meta("traceparent") != nil || fc.meta("baggage") != nil) {
				t.Errorf("legacy=%v: trace context without a span: %s", legacy, fc.Req.Params)
			}
			if !traced && legacy && fc.param("_meta") != nil {
				t.Errorf("legacy request without a span got _meta: %s", fc.Req.Params)
			}
		}
	}
}

// WithTraceContext takes precedence over the context's span; invalid
// values fail the call before anything is sent.
func TestWithTraceContext(t *testing.T) {
	c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response { return result(fc, `{"content":[]}`) })
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
	if _, err := c.CallTool(spanContext(t), "a", nil, snodo.WithTraceContext(snodo.TraceContext{Traceparent: tp, Baggage: "k=v"})); err != nil {
		t.Fatal(err)
	}
	fc := f.sent("tools/call")[0]
	if string(fc.meta("traceparent")) != `"`+tp+`"` || fc.meta("tracestate") != nil || string(fc.meta("baggage")) != `"k=v"` {
		t.Errorf("_meta %s", fc.param("_meta"))
	}
	// The caller's own _meta keys give way.
	if _, err := c.Request(context.Background(), "tools/call", []byte(`{"name":"x","_meta":{"traceparent":"junk","other":1}}`),
		snodo.WithTraceContext(snodo.TraceContext{Traceparent: tp})); err != nil {
		t.Fatal(err)
	}
	fc = f.sent("tools/call")[1]
	if string(fc.meta("traceparent")) != `"`+tp+`"` || string(fc.meta("other")) != `1` {
		t.Errorf("_meta %s", fc.param("_meta"))
	}
	for _, bad := range []snodo.TraceContext{
		{Traceparent: "nope"},
		{Traceparent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01"},
		{Traceparent: tp, Tracestate: "=bad="},
		{Traceparent: tp, Baggage: "no value"},
	} {
		n := len(f.methods())
		_, err := c.CallTool(context.Background(), "a", nil, snodo.WithTraceContext(bad))
		var e *snodo.Error
		if !errors.As(err, &e) || e.Code != jsonrpc.CodeInvalidParams || len(f.methods()) != n {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}
