package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"

	"go.opentelemetry.io/otel/trace"
)

// startTrace returns ctx with a new root span context — a random trace ID
// and span ID, sampled — so that every request of the run carries it in
// _meta as traceparent, and prints the trace ID to stderr as one JSON
// line, {"traceId":…,"traceparent":…}, to find the server's spans by.
// Nothing is exported: snodo-run has no tracer, only the context.
func startTrace(ctx context.Context, stderr io.Writer) (context.Context, error) {
	var tid trace.TraceID
	var sid trace.SpanID
	for !tid.IsValid() {
		if _, err := rand.Read(tid[:]); err != nil {
			return ctx, err
		}
	}
	for !sid.IsValid() {
		if _, err := rand.Read(sid[:]); err != nil {
			return ctx, err
		}
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	line, _ := json.Marshal(struct {
		TraceID     string `json:"traceId"`
		Traceparent string `json:"traceparent"`
	}{tid.String(), fmt.Sprintf("00-%s-%s-%s", tid, sid, sc.TraceFlags())})
	fmt.Fprintf(stderr, "%s\n", line)
	return trace.ContextWithSpanContext(ctx, sc), nil
}
