package http_test

import (
	"context"
	nethttp "net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	mcphttp "github.com/snodo/snodo/transport/http"
)

// N callers with requests in flight at once, over many calls, open at
// most N connections: each keeps reusing one (the transport's own client
// keeps enough idle connections), instead of closing the ones past a small
// idle bound and opening new ones per request.
//
// The server holds the first N requests until all N have arrived: each
// caller's first request then has a connection of its own, and none is
// freed while another request waits for a connection being dialled (which
// net/http would hand it, leaving the new one spare). From then on a
// caller always finds one of the N idle.
//
// One thing can still add a connection: net/http drops a connection
// instead of reusing it when its writer has not reported the request
// written within 50 ms of the response (a goroutine not scheduled on a
// loaded machine), and the next request dials. The bound allows N/4 of
// those; with the idle bound of 16 kept before, this test's 48 callers
// opened 117–249 connections in three runs.
func TestConcurrentCallersReuseConnections(t *testing.T) {
	const callers, calls = 48, 100
	var arrived atomic.Int64
	all := make(chan struct{})
	s := newLeanServer(t, func(r *nethttp.Request) {
		if n := arrived.Add(1); n <= callers {
			if n == callers {
				close(all)
			}
			select {
			case <-all:
			case <-r.Context().Done():
			}
		}
	})
	tr, err := mcphttp.New(mcphttp.Config{URL: s.URL + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := &jsonrpc.Request{Method: "tools/call", Params: benchParams}
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range calls {
				resp, err := tr.Request(ctx, req, transport.RequestOptions{Dialect: benchHeaders})
				if err != nil {
					t.Error(err)
					return
				}
				if string(resp.Result) != string(benchParams) {
					t.Errorf("result %s, want %s", resp.Result, benchParams)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := s.conns.Load(); n > callers+callers/4 {
		t.Errorf("%d callers × %d calls opened %d connections, want at most %d (+%d)", callers, calls, n, callers, callers/4)
	}
}
