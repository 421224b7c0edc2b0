package snodo

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/baggage"
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
// formatted as OpenTelemetry's W3C TraceContext and Baggage propagators
// format them. A context with neither costs a call nothing.
func WithTraceContext(tc TraceContext) CallOption { return func(c *callConfig) { c.trace = &tc } }

// traceMembers sets cc.traceMeta: the _meta members of the call's trace
// context, from WithTraceContext or from ctx, or nil.
//
// The members are what OpenTelemetry's W3C TraceContext and Baggage
// propagators (go.opentelemetry.io/otel/propagation) inject, and an
// invalid WithTraceContext is what their Extract rejects, written here
// rather than called: that package also carries HTTP headers and links
// net/http, which a program using Snodo over stdio otherwise does without
// (2 MB of executable, and with net's cgo resolver, libc and a dynamic
// executable). trace_internal_test.go holds the two to the same output.
func traceMembers(ctx context.Context, cc *callConfig) error {
	if cc.trace == nil && !trace.SpanContextFromContext(ctx).IsValid() && baggage.FromContext(ctx).Len() == 0 {
		return nil // the common case: nothing to carry, nothing allocated
	}
	var sc trace.SpanContext
	var bag string
	if tc := cc.trace; tc != nil {
		scc, ok := parseTraceparent(tc.Traceparent)
		if ok {
			// A tracestate that does not parse is dropped, as the
			// propagator drops it; it is refused below.
			scc.TraceState, _ = trace.ParseTraceState(tc.Tracestate)
			scc.Remote = true
			sc = trace.NewSpanContext(scc)
		}
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
			bag = b.String()
		}
	} else {
		sc = trace.SpanContextFromContext(ctx)
		bag = baggage.FromContext(ctx).String()
	}
	var b []byte
	member := func(k, v string) {
		if v == "" {
			return
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = appendMember(b, k, mustMarshal(v))
	}
	if sc.IsValid() {
		member(metaTraceparent, formatTraceparent(sc))
		member(metaTracestate, sc.TraceState().String())
	}
	member(metaBaggage, bag)
	cc.traceMeta = b
	return nil
}

// traceFlags are the flags a traceparent carries: sampled and random, the
// ones W3C Trace Context defines.
const traceFlags = trace.FlagsSampled | trace.FlagsRandom

// formatTraceparent is sc as a version 00 traceparent.
func formatTraceparent(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + (sc.TraceFlags() & traceFlags).String()
}

// parseTraceparent reads a traceparent header, version-trace id-parent
// id-flags in lower-case hex. Version 00 allows nothing after the flags
// and only the two defined flag bits; a later version may add fields and
// flags, which are ignored; version ff is invalid. The ids are not checked
// for zero here (trace.SpanContext.IsValid does).
func parseTraceparent(h string) (scc trace.SpanContextConfig, ok bool) {
	var version, flags [1]byte
	if !traceparentField(version[:], &h) || version[0] == 0xff ||
		!traceparentField(scc.TraceID[:], &h) || !traceparentField(scc.SpanID[:], &h) ||
		!traceparentField(flags[:], &h) {
		return trace.SpanContextConfig{}, false
	}
	if version[0] == 0 && (h != "" || flags[0] > byte(traceFlags)) {
		return trace.SpanContextConfig{}, false
	}
	scc.TraceFlags = trace.TraceFlags(flags[0]) & traceFlags
	return scc, true
}

// traceparentField decodes the next dash-separated field of *h into dst:
// exactly 2×len(dst) lower-case hex digits. *h becomes what follows the
// dash.
func traceparentField(dst []byte, h *string) bool {
	field, rest, _ := strings.Cut(*h, "-")
	*h = rest
	if len(field) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := lowerHexDigit(field[2*i])
		lo, ok2 := lowerHexDigit(field[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func lowerHexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
