package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo"
	shttp "github.com/snodo/snodo/transport/http"
)

// tsv2Dir holds server.mjs and its pinned packages, installed by
// .ci/deps.d/50-npm-tsv2.sh.
const tsv2Dir = "tsv2"

// startTSv2 runs server.mjs, the TypeScript SDK v2 server over Streamable
// HTTP, behind a recording proxy whose wire log checkWire validates when
// the test ends; it returns the proxy's MCP endpoint.
func startTSv2(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed: the TypeScript SDK v2 interop tests need node 20 and npm (then run bash .ci/deps.d/50-npm-tsv2.sh)")
	}
	if _, err := os.Stat(filepath.Join(tsv2Dir, "node_modules", "@modelcontextprotocol", "server", "package.json")); err != nil {
		t.Fatalf("the TypeScript SDK v2 is not installed in internal/interop/%s: run bash .ci/deps.d/50-npm-tsv2.sh (npm ci there)", tsv2Dir)
	}
	cmd := exec.Command("node", "server.mjs", "0")
	cmd.Dir = tsv2Dir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		stdin.Close() // server.mjs exits at the end of its stdin
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Error("server.mjs did not exit when its stdin closed")
		}
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		t.Fatalf("server.mjs did not say where it listens: %v", err)
	}
	target, err := url.Parse(strings.TrimSpace(strings.TrimPrefix(line, "listening ")))
	if err != nil || target.Host == "" {
		stop()
		t.Fatalf("server.mjs said %q", line)
	}
	logPath := filepath.Join(t.TempDir(), "wire.log")
	rec, err := newWireRecorder(logPath, target)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	proxy := httptest.NewServer(rec)
	t.Cleanup(func() {
		proxy.Close()
		stop()
		rec.close()
		checkWire(t, logPath)
	})
	return proxy.URL + target.Path
}

// wireRecorder forwards to the server and writes the messages both ways to
// a log in the tee role's format: "C " and the client's message, "S " and
// each message the server sent, as a JSON body or as SSE data.
type wireRecorder struct {
	proxy *httputil.ReverseProxy
	mu    sync.Mutex
	log   *os.File
}

func newWireRecorder(logPath string, target *url.URL) (*wireRecorder, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	w := &wireRecorder{log: f}
	w.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: target.Scheme, Host: target.Host})
			r.Out.Host = target.Host // server.mjs accepts only its own loopback Host
		},
		FlushInterval: -1, // SSE events as they come
		ModifyResponse: func(resp *http.Response) error {
			resp.Body = &sseRecorder{ReadCloser: resp.Body, w: w, sse: strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")}
			return nil
		},
	}
	return w, nil
}

func (w *wireRecorder) record(dir string, msg []byte) {
	msg = bytes.TrimSpace(msg)
	if len(msg) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if msg[0] == '[' { // a batch: one line per message
		var batch []json.RawMessage
		if json.Unmarshal(msg, &batch) == nil {
			for _, m := range batch {
				w.log.WriteString(dir + string(m) + "\n")
			}
			return
		}
	}
	w.log.WriteString(dir + strings.ReplaceAll(string(msg), "\n", " ") + "\n")
}

func (w *wireRecorder) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.log.Close()
}

func (w *wireRecorder) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Body != nil && r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		w.record("C ", body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	w.proxy.ServeHTTP(rw, r)
}

// sseRecorder records a response body as it is read: each SSE event's data,
// or the whole JSON body.
type sseRecorder struct {
	io.ReadCloser
	w       *wireRecorder
	sse     bool
	pending []byte
}

func (s *sseRecorder) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	s.pending = append(s.pending, p[:n]...)
	if s.sse {
		for {
			i := bytes.IndexByte(s.pending, '\n')
			if i < 0 {
				break
			}
			line := bytes.TrimRight(s.pending[:i], "\r")
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				s.w.record("S ", data)
			}
			s.pending = s.pending[i+1:]
		}
	} else if err == io.EOF {
		s.w.record("S ", s.pending)
		s.pending = nil
	}
	return n, err
}

// The TypeScript SDK v2 server over Streamable HTTP, in each era it
// speaks: tools listed, an elicitation answered (a server request on the
// call's SSE stream in the legacy era, an input_required round in
// 2026-07-28), progress, and the tool list's change (a
// notifications/tools/list_changed on the session in the legacy era, a
// subscriptions/listen event in 2026-07-28). Every message the client sent
// is checked against the schema of its version.
func TestTSv2OverHTTP(t *testing.T) {
	for _, tc := range []struct {
		name string
		era  snodo.Era
	}{
		{"legacy", snodo.EraLegacy},
		{"modern", snodo.EraModern}, // probed: the server answers server/discover
	} {
		t.Run(tc.name, func(t *testing.T) {
			endpoint := startTSv2(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			changed := make(chan string, 8)
			opts := allHandlers()
			opts.OnNotification = func(method string, _ json.RawMessage) {
				select {
				case changed <- method:
				default:
				}
			}
			if tc.era == snodo.EraLegacy {
				opts.Era = snodo.EraLegacy
			}
			tr, err := shttp.New(shttp.Config{URL: endpoint})
			if err != nil {
				t.Fatal(err)
			}
			c, err := snodo.Connect(ctx, tr, opts)
			if err != nil {
				tr.Close()
				t.Fatal(err)
			}
			defer c.Close()
			if c.Server().Era != tc.era {
				t.Fatalf("era %v (version %s), want %v", c.Server().Era, c.Server().ProtocolVersion, tc.era)
			}
			if got := toolNames(t, ctx, c); got != "ask,count,grow" {
				t.Errorf("tools: %s", got)
			}
			before := elicitCalls.Load()
			if got := mustCall(t, c, "ask", nil); got != "hello Ada (accept)" {
				t.Errorf("ask: %q", got)
			}
			if elicitCalls.Load() == before {
				t.Error("the elicitation handler did not run")
			}
			var mu sync.Mutex
			var progress []float64
			got := mustCall(t, c, "count", map[string]any{"steps": 3}, snodo.WithProgress(func(p snodo.Progress) {
				mu.Lock()
				progress = append(progress, p.Progress)
				mu.Unlock()
			}))
			mu.Lock()
			if got != "counted to 3" || len(progress) != 3 || progress[2] != 3 {
				t.Errorf("count: %q, progress %v; want counted to 3, progress [1 2 3]", got, progress)
			}
			mu.Unlock()

			if tc.era == snodo.EraModern {
				_, sub, err := c.Listen(ctx, snodo.SubscriptionFilter{ToolsListChanged: true})
				if err != nil {
					t.Fatal(err)
				}
				mustCall(t, c, "grow", nil)
				ev, err := sub.Next(ctx)
				if err != nil || ev.Method != "notifications/tools/list_changed" {
					t.Fatalf("listen: %v %v", ev, err)
				}
				sub.Close()
			} else {
				mustCall(t, c, "grow", nil)
				select {
				case m := <-changed:
					if m != "notifications/tools/list_changed" {
						t.Errorf("notification %s", m)
					}
				case <-ctx.Done():
					t.Fatal("no notifications/tools/list_changed")
				}
			}
			if got := toolNames(t, ctx, c); got != "ask,count,extra,grow" {
				t.Errorf("tools after grow: %s", got)
			}
		})
	}
}

func toolNames(t *testing.T, ctx context.Context, c *snodo.Client) string {
	t.Helper()
	var names []string
	for tool, err := range c.Tools(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}
