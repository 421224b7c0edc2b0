package interop

import (
	"context"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/interop/gosdkserver"
	mcphttp "github.com/snodo/snodo/transport/http"
)

// The Go SDK's SSE handler serves the HTTP+SSE transport of 2024-11-05:
// the client opens its stream with DialSSE, negotiates with initialize,
// calls tools, answers the server's elicitation, sampling and roots
// requests with POSTs (202), receives progress on the stream, and cancels
// requests given up by timeout or ctx with a POST of
// notifications/cancelled, which stops the tool on the server.
func TestSSEGoSDK(t *testing.T) {
	s := gosdkserver.NewServer(legacyVersions)
	h := mcp.NewSSEHandler(func(*nethttp.Request) *mcp.Server { return s }, nil)
	var mu sync.Mutex
	var posts []string // each POST's body and status
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.Method != nethttp.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		rec := &statusRecorder{ResponseWriter: w, onStatus: func(code int) {
			mu.Lock()
			posts = append(posts, string(body)+" "+nethttp.StatusText(code))
			mu.Unlock()
		}}
		h.ServeHTTP(rec, r)
	}))
	defer func() {
		srv.CloseClientConnections()
		srv.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr, err := mcphttp.DialSSE(ctx, mcphttp.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tr.Endpoint(), srv.URL+"/?sessionid=") {
		t.Errorf("endpoint %s", tr.Endpoint())
	}
	opts := allHandlers()
	opts.Era = snodo.EraLegacy
	c, err := snodo.Connect(ctx, tr, opts)
	if err != nil {
		tr.Close()
		t.Fatal(err)
	}
	if srv := c.Server(); srv.Era != snodo.EraLegacy || srv.ProtocolVersion != "2025-11-25" || srv.Implementation.Name != "interop-gosdk" {
		t.Fatalf("server %+v", c.Server())
	}
	exerciseCommon(t, c)
	if err := c.Ping(ctx); err != nil {
		t.Error(err)
	}
	// The cancellations are POSTed in the background, and Close ends a
	// POST still under way: wait (bounded) until the server has both.
	countCancelled := func() (n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range posts {
			if strings.Contains(p, `"method":"notifications/cancelled"`) {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(20 * time.Second); countCancelled() < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var elicited, sampled, cancelled int
	for _, p := range posts {
		if !strings.HasSuffix(p, " Accepted") {
			t.Errorf("POST answered %s", p)
		}
		switch {
		case strings.Contains(p, `"result":{"action":"accept"`):
			elicited++
		case strings.Contains(p, `"model":`):
			sampled++
		case strings.Contains(p, `"method":"notifications/cancelled"`):
			cancelled++
		}
	}
	if elicited != 1 || sampled != 1 || cancelled != 2 {
		t.Errorf("POSTs: %d elicitation answers, %d sampling answers, %d cancellations; want 1, 1, 2:\n%s", elicited, sampled, cancelled, strings.Join(posts, "\n"))
	}
}
