package telemetry_test

import (
	"context"
	"encoding/json"
	"testing"
)

// BenchmarkServerAndClientSpan is one host tools/call with its _meta
// trace context and one backend request: two spans and two measurements,
// no OTLP export (the Prometheus reader only).
func BenchmarkServerAndClientSpan(b *testing.B) {
	tel := start(b, `{}`)
	defer tel.Shutdown(context.Background())
	meta := map[string]json.RawMessage{"traceparent": json.RawMessage(`"` + hostTraceparent + `"`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		sctx, end := tel.ServerSpan(ctx, "tools/call", "fs__read", meta, nil)
		_, cend := tel.ClientSpan(sctx, "tools/call", "read", "fs")
		cend(nil)
		end(nil)
	}
}
