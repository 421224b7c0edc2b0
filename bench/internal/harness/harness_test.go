package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestEveryClientRunsEveryCaseWithRepliesChecked runs each client once in
// each case it applies to, with a handful of calls, so that the comparison
// cannot rot unnoticed: every reply is checked by the client (a wrong echo,
// blob, elicitation answer or slow result fails the run), and every slow call
// must finish. Progress delivery is a measured figure, not checked here.
func TestEveryClientRunsEveryCaseWithRepliesChecked(t *testing.T) {
	root, err := FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	p := Paths{Root: root, Bin: t.TempDir()}
	if err := CheckNode(p); err != nil {
		t.Fatalf("the TypeScript SDK client cannot run: %v", err)
	}
	ctx := context.Background()
	withSnodo, snodoErr, err := Build(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, statErr := os.Stat(filepath.Join(root, SnodoProgram)); statErr == nil && !withSnodo {
		t.Fatalf("the Snodo client does not build: %v", snodoErr)
	}
	if withSnodo {
		t.Run("snodo refuses --wasm without the Wasm host", func(t *testing.T) {
			c := Case{Server: Lean, Era: "modern", Scenario: "elicit", N: 1}
			cl := Client{Name: Snodo, Argv: []string{p.Snodo(), "--wasm", p.WasmGo()}, Modern: true}
			res := Run(ctx, p, c, cl, time.Minute)
			if !strings.Contains(res.Error, "without the Wasm host") {
				t.Fatalf("bin/snodo --wasm: error %q, want a refusal naming the Wasm host", res.Error)
			}
		})
	}
	for _, c := range Cases(0.002) {
		if c.Size > 0 {
			c.Size = 64 << 10
		}
		for _, cl := range Clients(p, withSnodo) {
			if !c.Applies(cl) {
				continue
			}
			t.Run(c.Key()+"/"+cl.Name, func(t *testing.T) {
				res := Run(ctx, p, c, cl, time.Minute)
				if strings.Contains(res.Error, "signal: killed") {
					// A run that hangs until its deadline is retried once,
					// and says so. Seen once in about 2,000 runs of the
					// go-sdk server (2026-07-28 era, 64 callers): the
					// server process stuck in the Go runtime's
					// gcMarkDone, every client request waiting on it. A
					// second hang fails.
					t.Logf("retrying a run killed at its deadline: %s", res.Error)
					res = Run(ctx, p, c, cl, time.Minute)
				}
				if res.Error != "" {
					t.Fatalf("%s", res.Error)
				}
				if res.OK != c.N {
					t.Fatalf("%d of %d calls answered", res.OK, c.N)
				}
				if res.PeakRSSMiB <= 0 || res.WallMS <= 0 {
					t.Fatalf("no measurements: %+v", res)
				}
			})
		}
	}
}
