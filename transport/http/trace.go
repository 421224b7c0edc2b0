package http

import (
	"context"
	nethttp "net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceHeaders adds to h the W3C Trace Context headers (traceparent,
// tracestate) of the span in ctx, as OpenTelemetry's TraceContext
// propagator writes them, so that an HTTP proxy or server that traces by
// headers joins the caller's trace as the request's _meta does. A header
// the caller set (RequestOptions.Headers) is kept. A context without a
// valid span context costs one context lookup and adds nothing.
func traceHeaders(ctx context.Context, h nethttp.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	if _, ok := h["Traceparent"]; ok {
		return
	}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
}
