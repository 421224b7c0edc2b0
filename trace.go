package snodo

import (
	"context"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo/jsonrpc"
)

// The _meta keys of OpenTelemetry trace context (2026-07-28
// basic/index.mdx "OpenTelemetry trace context"). They carry no prefix, so
// they are valid _meta keys in the legacy versions too.
const (
	metaTraceparent = "traceparent"
	metaTracestate  = "tracestate"
	metaBaggage     = "baggage"
)

// TraceContext is W3C Trace Context (traceparent, tracestate) and W3C
// Baggage, in their header formats, for a request's _meta.
type TraceContext struct {
	// Traceparent is required, as "00-<trace id>-<parent id>-<flags>".
	Traceparent string
	// Tracestate is optional vendor data.
	Tracestate string
	// Baggage is optional, as "key=value,key2=value2".
	Baggage string
}

// WithTraceContext puts tc in the _meta of every request of the call (each
// round of a multi round-trip request included), as traceparent,
// tracestate and baggage, in both eras, so that the server's spans join
// the caller's trace. It takes precedence over a span in the call's
// context. An invalid tc fails the call (-32602) before anything is sent.
//
// Without it, a call whose context holds a valid OpenTelemetry span
// context (go.opentelemetry.io/otel/trace.ContextWithSpanContext, or a
// span started by any OpenTelemetry tracer) or baggage carries them,
// formatted by OpenTelemetry's W3C TraceContext and Baggage propagators. A
// context with neither costs a call nothing.
func WithTraceContext(tc TraceContext) CallOption { return func(c *callConfig) { c.trace = &tc } }

// w3c is the propagator of trace context and baggage.
var w3c = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// traceMembers sets cc.traceMeta: the _meta members of the call's trace
// context, from WithTraceContext or from ctx, or nil.
func traceMembers(ctx context.Context, cc *callConfig) error {
	if cc.trace == nil && !trace.SpanContextFromContext(ctx).IsValid() && baggage.FromContext(ctx).Len() == 0 {
		return nil // the common case: nothing to carry, nothing allocated
	}
	carrier := propagation.MapCarrier{}
	if tc := cc.trace; tc != nil {
		in := propagation.MapCarrier{metaTraceparent: tc.Traceparent}
		if tc.Tracestate != "" {
			in[metaTracestate] = tc.Tracestate
		}
		ectx := propagation.TraceContext{}.Extract(context.Background(), in)
		sc := trace.SpanContextFromContext(ectx)
		if !sc.IsValid() {
			return protocolError(jsonrpc.CodeInvalidParams, nil, "WithTraceContext: invalid traceparent %q", tc.Traceparent)
		}
		if tc.Tracestate != "" && sc.TraceState().Len() == 0 {
			return protocolError(jsonrpc.CodeInvalidParams, nil, "WithTraceContext: invalid tracestate %q", tc.Tracestate)
		}
		if tc.Baggage != "" {
			b, err := baggage.Parse(tc.Baggage)
			if err != nil {
				return protocolError(jsonrpc.CodeInvalidParams, err, "WithTraceContext: invalid baggage %q", tc.Baggage)
			}
			ectx = baggage.ContextWithBaggage(ectx, b)
		}
		w3c.Inject(ectx, carrier)
	} else {
		w3c.Inject(ctx, carrier)
	}
	var b []byte
	for _, k := range []string{metaTraceparent, metaTracestate, metaBaggage} {
		v, ok := carrier[k]
		if !ok || v == "" {
			continue
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = appendMember(b, k, mustMarshal(v))
	}
	cc.traceMeta = b
	return nil
}
