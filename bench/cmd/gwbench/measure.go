package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/transport"
	mcphttp "github.com/snodo/snodo/transport/http"
	"github.com/snodo/snodo/transport/stdio"
)

// dialHTTP connects a Snodo client over Streamable HTTP.
func dialHTTP(ctx context.Context, url string, era snodo.Era) (*snodo.Client, error) {
	t, err := mcphttp.New(mcphttp.Config{URL: url})
	if err != nil {
		return nil, err
	}
	return connect(ctx, t, era)
}

// dialStdio starts the lean server and connects a Snodo client over stdio.
func dialStdio(ctx context.Context, lean string) (*snodo.Client, error) {
	t, err := stdio.Connect(ctx, stdio.Config{Command: lean, Stderr: os.Stderr})
	if err != nil {
		return nil, err
	}
	return connect(ctx, t, snodo.EraLegacy)
}

func connect(ctx context.Context, t transport.Transport, era snodo.Era) (*snodo.Client, error) {
	c, err := snodo.Connect(ctx, t, &snodo.Options{Era: era, ClientInfo: snodo.Implementation{Name: "gwbench", Version: "1.0.0"}})
	if err != nil {
		t.Close()
		return nil, err
	}
	return c, nil
}

// echo calls tool with text and checks the answer.
func echo(ctx context.Context, c *snodo.Client, tool, text string) error {
	res, err := c.CallTool(ctx, tool, map[string]any{"text": text})
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) != 1 || res.Content[0].Text != text {
		return fmt.Errorf("%s: unexpected result %+v", tool, res)
	}
	return nil
}

// latency makes warm sequential calls of tool on c, then n measured
// ones, and returns their p50 and p99.
func latency(ctx context.Context, c *snodo.Client, tool string, warm, n int) (p50, p99 time.Duration, err error) {
	for i := range warm {
		if err := echo(ctx, c, tool, fmt.Sprintf("w%d", i)); err != nil {
			return 0, 0, err
		}
	}
	d := make([]time.Duration, n)
	for i := range n {
		start := time.Now()
		if err := echo(ctx, c, tool, fmt.Sprintf("m%d", i)); err != nil {
			return 0, 0, err
		}
		d[i] = time.Since(start)
	}
	slices.Sort(d)
	return pct(d, 50), pct(d, 99), nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(len(sorted)-1, i-1))]
}

// throughput connects callers clients to url (each its own legacy
// session, or stateless 2026-07-28 requests) and has each make perCaller
// calls of tool at once; it returns calls per second over the whole.
func throughput(ctx context.Context, url string, era snodo.Era, tool string, callers, perCaller int) (float64, error) {
	clients := make([]*snodo.Client, callers)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range clients {
		c, err := dialHTTP(ctx, url, era)
		if err != nil {
			return 0, err
		}
		clients[i] = c
		if err := echo(ctx, c, tool, "warm"); err != nil {
			return 0, err
		}
	}
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	start := time.Now()
	for i, c := range clients {
		wg.Go(func() {
			for j := range perCaller {
				if err := echo(ctx, c, tool, fmt.Sprintf("c%d-%d", i, j)); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if e := failed.Load(); e != nil {
		return 0, *e
	}
	return float64(callers*perCaller) / elapsed.Seconds(), nil
}

// openSessions opens n idle legacy sessions, 16 at a time.
func openSessions(ctx context.Context, url string, n int) ([]string, error) {
	sids := make([]string, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || failed.Load() != nil {
					return
				}
				sid, err := openSession(ctx, url)
				if err != nil {
					err = fmt.Errorf("session %d of %d: %w", i+1, n, err)
					failed.CompareAndSwap(nil, &err)
					return
				}
				sids[i] = sid
			}
		})
	}
	wg.Wait()
	if e := failed.Load(); e != nil {
		return nil, *e
	}
	return sids, nil
}

// memory is what a gateway holds at one point, after two GC cycles.
type memory struct {
	RSS     int64   // bytes
	LiveMB  float64 // live heap after the last GC (gctrace, MB resolution)
	StackMB float64 // goroutine stacks at the last GC (gctrace, MB resolution)
}

// settle pings the gateway in session sid until it has run two more GC
// cycles (so gctrace reports the live heap of this point), then reads
// its RSS.
func settle(ctx context.Context, g *gateway, sid string) (memory, error) {
	gcs0, _, _ := g.GC()
	deadline := time.Now().Add(startWait)
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	var stop atomic.Bool
	var id atomic.Int64
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				st, _, body, err := post(ctx, g.URL, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id.Add(1)))
				if err == nil && st != 200 {
					err = fmt.Errorf("ping: status %d: %s", st, body)
				}
				if err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	for {
		gcs, _, _ := g.GC()
		if gcs >= gcs0+2 || failed.Load() != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if e := failed.Load(); e != nil {
		return memory{}, *e
	}
	if gcs, _, _ := g.GC(); gcs < gcs0+2 {
		return memory{}, fmt.Errorf("the gateway ran %d GC cycles in %v of pings; want 2", gcs-gcs0, startWait)
	}
	_, live, stacks := g.GC()
	r, err := g.RSS()
	return memory{RSS: r, LiveMB: live, StackMB: stacks}, err
}
