// Package scale measures how Snodo's client scales with the number of
// connections in one process: memory per idle connection and calls per
// second with 1, 10, 100 and 1,000 connections, over stdio (a lean server
// child per connection) and Streamable HTTP (one lean HTTP server), and
// memory per open subscriptions/listen stream with 10,000 streams.
//
// The servers (../cmd/leanserver, ../cmd/leanhttp) are processes of their
// own: what the figures count is the client's process alone.
//
//	go test -run '^$' -bench Scale -benchtime 20x ./scale
//
// Metrics: heap-B/conn is (HeapInuse after connecting − before) / N, both
// after a GC; stack-B/conn the same of StackInuse (the goroutines'
// stacks); rss-B/conn the same of the process's resident set (VmRSS);
// calls/s is tools/call round trips per second with one call in flight
// on every connection at once. One iteration is one call on every
// connection. TestScaleSmoke runs the same code at small N in the normal
// test run.
package scale

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo"
	mcphttp "github.com/snodo/snodo/transport/http"
	"github.com/snodo/snodo/transport/stdio"
)

var bin string // directory of the built servers

var heapProfile = flag.String("scale.heapprofile", "",
	"write a heap profile to `FILE.NAME` (the benchmark's name appended) when the connections are open and idle, for go tool pprof -sample_index=inuse_space")

// writeHeapProfile writes the heap profile -scale.heapprofile asks for.
func writeHeapProfile(tb testing.TB) {
	if *heapProfile == "" {
		return
	}
	f, err := os.Create(*heapProfile + "." + strings.NewReplacer("/", "_", "=", "").Replace(tb.Name()))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		tb.Fatal(err)
	}
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "snodo-scale-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	build := exec.Command("go", "build", "-o", dir+"/",
		"github.com/snodo/snodo/bench/cmd/leanserver", "github.com/snodo/snodo/bench/cmd/leanhttp")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	code := 1
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the lean servers:", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// mem is a reading of the process's memory after a GC.
type mem struct{ heap, stack, rss uint64 }

func readMem() mem {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return mem{heap: ms.HeapInuse, stack: ms.StackInuse, rss: rss()}
}

// rss is the process's VmRSS in bytes, 0 where /proc is not there.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			kb, _ := strconv.ParseUint(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(v), []byte("kB")))), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// perConn is (after − before) / n of each figure, as float64 (a figure
// that shrank gives a negative share).
func perConn(before, after mem, n int) (heap, stack, rss float64) {
	d := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) }
	return d(after.heap, before.heap), d(after.stack, before.stack), d(after.rss, before.rss)
}

// report reports the memory per connection; it is called after b.Loop,
// which would clear metrics reported before it.
func report(b *testing.B, before, after mem, n int) {
	heap, stack, rss := perConn(before, after, n)
	b.ReportMetric(heap, "heap-B/conn")
	b.ReportMetric(stack, "stack-B/conn")
	b.ReportMetric(rss, "rss-B/conn")
}

var sizes = []int{1, 10, 100, 1000}

func connectStdio(tb testing.TB, ctx context.Context) *snodo.Client {
	tb.Helper()
	// The connection outlives ctx, which bounds only the handshake.
	t, err := stdio.Connect(context.Background(), stdio.Config{Command: filepath.Join(bin, "leanserver"), Args: []string{"--era", "modern"}, Stderr: os.Stderr})
	if err != nil {
		tb.Fatal(err)
	}
	c, err := snodo.Connect(ctx, t, &snodo.Options{Era: snodo.EraModern})
	if err != nil {
		t.Close()
		tb.Fatal(err)
	}
	return c
}

// httpServer starts leanhttp and returns its URL; it stops at cleanup.
func httpServer(tb testing.TB) string {
	tb.Helper()
	cmd := exec.Command(filepath.Join(bin, "leanhttp"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	url, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("leanhttp printed no URL: %v", err)
	}
	return url[:len(url)-1]
}

func connectHTTP(tb testing.TB, ctx context.Context, url string) *snodo.Client {
	tb.Helper()
	t, err := mcphttp.New(mcphttp.Config{URL: url})
	if err != nil {
		tb.Fatal(err)
	}
	c, err := snodo.Connect(ctx, t, &snodo.Options{Era: snodo.EraModern})
	if err != nil {
		t.Close()
		tb.Fatal(err)
	}
	return c
}

// connectAll connects n clients with dial, one call each so that every
// connection is warm (an HTTP client has its connection open), and
// returns them with the memory before and after.
func connectAll(tb testing.TB, n int, dial func(testing.TB, context.Context) *snodo.Client) ([]*snodo.Client, mem, mem) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	before := readMem()
	clients := make([]*snodo.Client, n)
	tb.Cleanup(func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	})
	for i := range clients {
		clients[i] = dial(tb, ctx)
	}
	callAll(tb, ctx, clients)
	after := readMem()
	writeHeapProfile(tb)
	return clients, before, after
}

// callAll makes one echo call on every client at once.
func callAll(tb testing.TB, ctx context.Context, clients []*snodo.Client) {
	var wg sync.WaitGroup
	errs := make(chan error, len(clients))
	args := map[string]any{"text": "hello"}
	for _, c := range clients {
		wg.Go(func() {
			res, err := c.CallTool(ctx, "echo", args)
			if err == nil && (len(res.Content) != 1 || res.Content[0].Text != "hello") {
				err = fmt.Errorf("echo answered %+v", res)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		tb.Fatal(err)
	}
}

func benchCalls(b *testing.B, clients []*snodo.Client) {
	ctx := context.Background()
	start := time.Now()
	for b.Loop() {
		callAll(b, ctx, clients)
	}
	b.ReportMetric(float64(b.N*len(clients))/time.Since(start).Seconds(), "calls/s")
}

func BenchmarkScaleStdio(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("conns=%d", n), func(b *testing.B) {
			clients, before, after := connectAll(b, n, connectStdio)
			benchCalls(b, clients)
			report(b, before, after, n)
		})
	}
}

func BenchmarkScaleHTTP(b *testing.B) {
	url := httpServer(b)
	for _, n := range sizes {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			clients, before, after := connectAll(b, n, func(tb testing.TB, ctx context.Context) *snodo.Client {
				return connectHTTP(tb, ctx, url)
			})
			benchCalls(b, clients)
			report(b, before, after, n)
		})
	}
}

// listenAll opens n subscriptions/listen streams on one client.
func listenAll(tb testing.TB, c *snodo.Client, n int) (mem, mem) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	before := readMem()
	subs := make([]*snodo.Subscription, 0, n)
	tb.Cleanup(func() {
		for _, s := range subs {
			s.Close()
		}
	})
	for range n {
		f, s, err := c.Listen(context.Background(), snodo.SubscriptionFilter{ToolsListChanged: true}, snodo.WithTimeout(time.Minute))
		if err != nil {
			tb.Fatal(err)
		}
		if !f.ToolsListChanged {
			s.Close()
			tb.Fatalf("accepted %+v", f)
		}
		subs = append(subs, s)
		if ctx.Err() != nil {
			tb.Fatal(ctx.Err())
		}
	}
	after := readMem()
	writeHeapProfile(tb)
	return before, after
}

// BenchmarkScaleListen holds 10,000 open subscriptions/listen streams on
// one HTTP client. An iteration is one more call on the client while they
// are open.
func BenchmarkScaleListen(b *testing.B) {
	url := httpServer(b)
	c := connectHTTP(b, context.Background(), url)
	b.Cleanup(func() { c.Close() })
	const n = 10000
	before, after := listenAll(b, c, n)
	benchCalls(b, []*snodo.Client{c})
	report(b, before, after, n)
}

// TestScaleSmoke runs the benchmarks' code at small N: it connects, calls
// and measures, and checks that the figures are there.
func TestScaleSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, dial := range map[string]func(testing.TB, context.Context) *snodo.Client{
		"stdio": connectStdio,
		"http": func() func(testing.TB, context.Context) *snodo.Client {
			url := httpServer(t)
			return func(tb testing.TB, ctx context.Context) *snodo.Client { return connectHTTP(tb, ctx, url) }
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			clients, before, after := connectAll(t, 3, dial)
			callAll(t, ctx, clients)
			if before.heap == 0 || after.heap == 0 {
				t.Errorf("no heap figures: %+v %+v", before, after)
			}
		})
	}
	t.Run("listen", func(t *testing.T) {
		c := connectHTTP(t, ctx, httpServer(t))
		t.Cleanup(func() { c.Close() })
		listenAll(t, c, 5)
		callAll(t, ctx, []*snodo.Client{c})
	})
}
