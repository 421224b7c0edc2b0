package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo/bench/internal/driver"
	"go.uber.org/goleak"
)

// binDir holds the executables built once for every test (build).
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bench-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildErr  error
	built     Paths
	builtWith bool
)

// build checks that the node client can run and builds the executables,
// once for every test; it reports whether the Snodo client was built.
func build(t *testing.T) (Paths, bool) {
	t.Helper()
	buildOnce.Do(func() {
		root, err := FindRoot()
		if err != nil {
			buildErr = err
			return
		}
		p := Paths{Root: root, Bin: binDir}
		if err := CheckNode(p); err != nil {
			buildErr = fmt.Errorf("the TypeScript SDK client cannot run: %v", err)
			return
		}
		withSnodo, snodoErr, err := Build(context.Background(), p)
		if err != nil {
			buildErr = err
			return
		}
		if _, statErr := os.Stat(filepath.Join(root, SnodoProgram)); statErr == nil && !withSnodo {
			buildErr = fmt.Errorf("the Snodo client does not build: %v", snodoErr)
			return
		}
		built, builtWith = p, withSnodo
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built, builtWith
}

// runTiny runs each client once in each case over transport it applies to,
// with a handful of calls, and checks the result; check, if not nil, adds
// checks.
func runTiny(t *testing.T, p Paths, withSnodo bool, transport string, check func(t *testing.T, c Case, cl Client, res driver.Result)) {
	ctx := context.Background()
	for _, c := range Cases(0.002) {
		if (c.Transport == HTTP) != (transport == HTTP) {
			continue
		}
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
				if check != nil {
					check(t, c, cl, res)
				}
			})
		}
	}
}

// TestEveryClientRunsEveryCaseWithRepliesChecked runs each client once in
// each case it applies to, with a handful of calls, so that the comparison
// cannot rot unnoticed: every reply is checked by the client (a wrong echo,
// blob, elicitation answer or slow result fails the run), and every slow call
// must finish. Progress delivery is a measured figure, not checked here.
func TestEveryClientRunsEveryCaseWithRepliesChecked(t *testing.T) {
	p, withSnodo := build(t)
	ctx := context.Background()
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
	runTiny(t, p, withSnodo, Stdio, nil)
}

// TestEveryClientRunsEveryHTTPCase runs each client once in each Streamable
// HTTP case (the lean server with --http, both eras; the floor's POSTs),
// with a handful of calls and every reply checked as over stdio: the
// server's URL reaches the client, the server counts the connections the
// client opened, and a sequential client that keeps its connection (the
// floor) is counted as opening exactly one.
func TestEveryClientRunsEveryHTTPCase(t *testing.T) {
	p, withSnodo := build(t)
	ran := 0
	runTiny(t, p, withSnodo, HTTP, func(t *testing.T, c Case, cl Client, res driver.Result) {
		ran++
		if res.Transport != HTTP {
			t.Fatalf("the client ran over %q, not HTTP", res.Transport)
		}
		if res.ConnsOpened < 1 {
			t.Fatalf("the server counted %d connections", res.ConnsOpened)
		}
		if cl.Name == Floor && c.Scenario == "seq" && res.ConnsOpened != 1 {
			t.Fatalf("the floor's sequential calls opened %d connections, want 1", res.ConnsOpened)
		}
	})
	if ran == 0 {
		t.Fatal("no HTTP case ran")
	}
}
