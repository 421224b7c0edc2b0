package wasm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/snodo/snodo/intercept"
)

// The request and result of the interceptor benchmarks: a small tools/call.
var (
	benchToolParams = json.RawMessage(`{"name":"read_text_file","arguments":{"path":"/srv/data/notes.txt"}}`)
	benchToolResult = json.RawMessage(`{"content":[{"type":"text","text":"hello"}]}`)
)

// benchChain makes one intercepted call per iteration: the request chain
// and the result chain, as the client runs them around a request.
func benchChain(b *testing.B, c *intercept.Chain, result json.RawMessage) {
	ctx := context.Background()
	call := func() {
		r := &intercept.Request{Method: "tools/call", Params: benchToolParams, Server: "fs", Era: "legacy", ProtocolVersion: "2025-11-25"}
		p, err := c.Request(ctx, r)
		if err != nil {
			b.Fatal(err)
		}
		r.Params = p
		if _, err := c.Result(ctx, &intercept.Result{Request: *r, Result: result}); err != nil {
			b.Fatal(err)
		}
	}
	call()
	b.ReportAllocs()
	b.SetBytes(int64(len(result)))
	b.ResetTimer()
	for b.Loop() {
		call()
	}
}

// BenchmarkIntercept: what interceptors add to one call (request and
// result): none, a native Go no-op, and the WAT no-op module
// (examples/handlers/wat/intercept-noop) with the deadline mechanism and
// trusted.
func BenchmarkIntercept(b *testing.B) {
	noop := func(context.Context, *intercept.Request) (intercept.Decision, error) {
		return intercept.Decision{}, nil
	}
	b.Run("none", func(b *testing.B) { benchChain(b, nil, benchToolResult) })
	b.Run("native-go-noop", func(b *testing.B) {
		benchChain(b, intercept.NewChain(intercept.Funcs{OnRequest: noop,
			OnResult: func(context.Context, *intercept.Result) (intercept.Decision, error) { return intercept.Decision{}, nil }}), benchToolResult)
	})
	h := benchHost(b)
	for _, trusted := range []bool{false, true} {
		name := "wat-noop/deadline"
		if trusted {
			name = "wat-noop/trusted"
		}
		m, err := h.Load(context.Background(), ModuleConfig{Name: name, Wasm: wasmFile(b, "wat/intercept-noop/intercept-noop.wasm"), Trusted: trusted})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) { benchChain(b, intercept.NewChain(m), benchToolResult) })
	}
}

// benchMiB is a 1 MiB tools/call result: lines of text (each a \n
// escape in JSON) with an API key on one line in 64.
func benchMiB() json.RawMessage {
	var sb strings.Builder
	for i := 0; sb.Len() < 1<<20-200; i++ {
		if i%64 == 0 {
			sb.WriteString("OPENAI_API_KEY=sk-live-4f9c2a7e1b3d8f6a0c5e9b2d7a1f3c8e\n")
		} else {
			sb.WriteString("the quick brown fox jumps over the lazy dog, line of a log file\n")
		}
	}
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": sb.String()}}})
	return b
}

// BenchmarkInterceptRedact1MiB: a 1 MiB result through the WAT no-op
// (the host's checks and copies alone) and through the redact-secrets
// example (examples/handlers/go/redact-secrets), which replaces it.
func BenchmarkInterceptRedact1MiB(b *testing.B) {
	res := benchMiB()
	h := benchHost(b)
	noop, err := h.Load(context.Background(), ModuleConfig{Name: "noop", Wasm: wasmFile(b, "wat/intercept-noop/intercept-noop.wasm")})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("wat-noop", func(b *testing.B) { benchChain(b, intercept.NewChain(noop), res) })
	red, err := h.Load(context.Background(), ModuleConfig{Name: "redact-secrets", Wasm: goGuest(b, "redact-secrets")})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("redact-secrets/deadline", func(b *testing.B) { benchChain(b, intercept.NewChain(red), res) })
}
