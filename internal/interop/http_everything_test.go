package interop

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo"
)

// startEverythingHTTP runs @modelcontextprotocol/server-everything's
// Streamable HTTP server (the official TypeScript SDK's transport, with
// resumability) on a free port and returns its MCP endpoint.
func startEverythingHTTP(t *testing.T) string {
	t.Helper()
	argv := everythingArgv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(argv[0], argv[1], "streamableHttp")
	cmd.Env = append(cmd.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	var once sync.Once
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on port") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		cmd.Wait()
	})
	select {
	case <-ready:
	case <-done:
		t.Fatal("server-everything exited before listening")
	case <-time.After(30 * time.Second):
		t.Fatal("server-everything did not start listening")
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// The reference server over Streamable HTTP (TypeScript SDK, initialize
// era): the probe is refused with a JSON-RPC error and Connect falls back
// to initialize; its requests for sampling, elicitation and roots come on
// SSE streams and are answered by POST; progress; Close deletes the
// session.
func TestHTTPServerEverything(t *testing.T) {
	url := startEverythingHTTP(t)
	c, tr := connectHTTP(t, url)
	if c.Server().Era != snodo.EraLegacy || c.Server().Implementation.Name != "mcp-servers/everything" {
		t.Fatalf("era %v server %+v", c.Server().Era, c.Server().Implementation)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var names []string
	for range 100 {
		names = names[:0]
		for tool, err := range c.Tools(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		if strings.Contains(strings.Join(names, ","), "get-roots-list") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := mustCall(t, c, "echo", map[string]string{"message": "over http"}); !strings.Contains(got, "over http") {
		t.Errorf("echo: %q", got)
	}
	if got := mustCall(t, c, "trigger-sampling-request", map[string]any{"prompt": "Capital of France?", "maxTokens": 20}); !strings.Contains(got, "Paris") {
		t.Errorf("trigger-sampling-request: %q", got)
	}
	before := elicitCalls.Load()
	if got := mustCall(t, c, "trigger-elicitation-request", nil); elicitCalls.Load() != before+1 || !strings.Contains(got, "accept") {
		t.Errorf("trigger-elicitation-request: %q", got)
	}
	if got := mustCall(t, c, "get-roots-list", nil); !strings.Contains(got, "file:///work") {
		t.Errorf("get-roots-list: %q", got)
	}
	var progress int
	mustCall(t, c, "trigger-long-running-operation", map[string]any{"duration": 0.3, "steps": 3}, snodo.WithProgress(func(snodo.Progress) { progress++ }))
	if progress == 0 {
		t.Error("no progress")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.Done():
	default:
		t.Error("the transport is still open")
	}
}
