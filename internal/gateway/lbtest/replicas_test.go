package lbtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wait bounds every wait of the replica test: it is not a verdict.
const wait = 2 * time.Minute

// gatewayReplica is one `snodo-run gateway` process: its address, its
// working directory (where its audit log is) and its process.
type gatewayReplica struct {
	name   string // gw1, gw2: its name in haproxy
	addr   string
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
	out    *syncBuffer
}

// auditRecord is what the test reads of an audit log line.
type auditRecord struct {
	Direction string `json:"direction"`
	Session   string `json:"session"`
	Server    string `json:"server"`
	Method    string `json:"method"`
	Tool      string `json:"tool"`
	Decision  string `json:"decision"`
	ErrorCode int64  `json:"errorCode"`
}

// audit reads the replica's audit log: the host requests it served.
func (g *gatewayReplica) audit(t *testing.T) []auditRecord {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(g.dir, "audit.jsonl"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []auditRecord
	for line := range bytes.Lines(b) {
		var r auditRecord
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("%s: audit line %q: %v", g.name, line, err)
		}
		if r.Direction == "host" {
			out = append(out, r)
		}
	}
	return out
}

// count is the number of host requests the replica served that match ok.
func (g *gatewayReplica) count(t *testing.T, ok func(auditRecord) bool) int {
	n := 0
	for _, r := range g.audit(t) {
		if ok(r) {
			n++
		}
	}
	return n
}

// children are the processes whose parent is the replica (its servers).
func (g *gatewayReplica) children(t *testing.T) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _ := procState(pid); ppid == g.cmd.Process.Pid {
			out = append(out, pid)
		}
	}
	return out
}

// procState returns a process's parent and state letter from
// /proc/PID/stat; state "" when the process is gone.
func procState(pid int) (ppid int, state string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, ""
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, ""
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0]
}

// buildGateway builds snodo-run and the demo server into dir.
func buildGateway(t *testing.T, dir string) (snodoRun, demo string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator),
		"github.com/snodo/snodo/cmd/snodo-run", "github.com/snodo/snodo/examples/servers/demo")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return filepath.Join(dir, "snodo-run"), filepath.Join(dir, "demo")
}

// npmEverything is the npm server-everything's command, failing the test
// with what to install when it is missing.
func npmEverything(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no source path")
	}
	p := filepath.Join(filepath.Dir(file), "..", "..", "interop", "everything", "node_modules", ".bin", "mcp-server-everything")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("mcp-server-everything is not installed at %s: run `bash .ci/deps.d/20-npm-interop.sh` (npm ci in internal/interop/everything; needs node 20 and npm)", p)
	}
	return p
}

// startReplica starts `snodo-run gateway --config config --listen ADDR`
// in its own working directory (where the config's relative audit file
// lands) and waits until its /readyz answers 200.
func startReplica(t *testing.T, bin, config, name string) *gatewayReplica {
	t.Helper()
	var lastErr error
	for range 3 { // a free port taken between its pick and the bind
		g := &gatewayReplica{name: name, addr: freeAddr(t), dir: t.TempDir(), exited: make(chan struct{}), out: &syncBuffer{}}
		g.cmd = exec.Command(bin, "gateway", "--config", config, "--listen", g.addr)
		g.cmd.Dir = g.dir
		g.cmd.Stdout, g.cmd.Stderr = g.out, g.out
		if err := g.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			_ = g.cmd.Wait()
			close(g.exited)
		}()
		if lastErr = g.waitReady(); lastErr == nil {
			t.Cleanup(func() {
				g.stop()
				if t.Failed() {
					t.Logf("%s output:\n%s", g.name, g.out.String())
				}
			})
			return g
		}
		g.stop()
		lastErr = fmt.Errorf("%w\n%s output:\n%s", lastErr, name, g.out.String())
	}
	t.Fatalf("gateway replica %s did not start: %v", name, lastErr)
	return nil
}

func (g *gatewayReplica) waitReady() error {
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		select {
		case <-g.exited:
			return fmt.Errorf("%s exited: %v", g.name, g.cmd.ProcessState)
		default:
		}
		resp, err := c.Get("http://" + g.addr + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready within %v", g.name, wait)
}

// stop ends the replica as an orchestrator does (SIGTERM, then SIGKILL if
// it outstays the bound) and waits for it.
func (g *gatewayReplica) stop() {
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(wait):
		_ = g.cmd.Process.Kill()
		<-g.exited
	}
}

// kill ends the replica with SIGKILL, as a crash does, and waits for it.
func (g *gatewayReplica) kill() {
	_ = g.cmd.Process.Kill()
	<-g.exited
}

// metric is the sum of the Prometheus samples of the replica's /metrics
// whose line starts with name and holds every one of labels.
func (g *gatewayReplica) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Get("http://" + g.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
lines:
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(line, l) {
				continue lines
			}
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("%s /metrics: %q", g.name, line)
		}
		sum += v
	}
	return sum
}

// cluster is two gateway replicas behind haproxy.
type cluster struct {
	replicas []*gatewayReplica
	lb       *HAProxy
	http     *http.Client // kept-alive connections
	fresh    *http.Client // a new connection per request
	id       atomic.Int64
	mu       sync.Mutex // serializes served: one audited request at a time
}

func (c *cluster) hostRequests(t *testing.T) []int {
	n := make([]int, len(c.replicas))
	for i, g := range c.replicas {
		n[i] = len(g.audit(t))
	}
	return n
}

// served runs f, which sends host requests one after the other, and
// returns the index of the one replica that served them; it fails t if
// none did or both did.
func (c *cluster) served(t *testing.T, what string, f func()) int {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	before := c.hostRequests(t)
	f()
	after := c.hostRequests(t)
	who := -1
	for i := range after {
		if after[i] > before[i] {
			if who >= 0 {
				t.Fatalf("%s: served by both replicas (audited host requests %v → %v)", what, before, after)
			}
			who = i
		}
	}
	if who < 0 {
		t.Fatalf("%s: no replica audited it (audited host requests %v → %v)", what, before, after)
	}
	return who
}

const modernMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw-host","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

// errTransport is a request the host retries: the connection failed, or
// haproxy answered for a replica that failed (502, 503, 504).
var errTransport = errors.New("transport error")

// modernCall sends one 2026-07-28 tools/call of tool with args through
// haproxy and returns its JSON-RPC response's result (or error).
func (c *cluster) modernCall(ctx context.Context, tool string, args map[string]any) (result map[string]json.RawMessage, rpcErr json.RawMessage, err error) {
	return c.modernRequest(ctx, c.http, map[string]any{"name": tool, "arguments": args})
}

// modernRequest sends one 2026-07-28 tools/call with params (_meta added)
// through haproxy with hc.
func (c *cluster) modernRequest(ctx context.Context, hc *http.Client, params map[string]any) (result map[string]json.RawMessage, rpcErr json.RawMessage, err error) {
	id := c.id.Add(1)
	if params["_meta"] == nil {
		params["_meta"] = json.RawMessage(modernMeta)
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	if err != nil {
		return nil, nil, err
	}
	tool, _ := params["name"].(string)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.lb.URL+"/mcp", bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errTransport, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: reading the response: %v", errTransport, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return nil, nil, fmt.Errorf("%w: HTTP %d %s", errTransport, resp.StatusCode, raw)
	default:
		return nil, nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, raw)
	}
	msg := raw
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msg = nil
		for line := range strings.Lines(string(raw)) {
			if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok && strings.Contains(d, `"id":`) {
				msg = []byte(d)
			}
		}
		if msg == nil {
			return nil, nil, fmt.Errorf("%w: the stream ended before the response: %s", errTransport, raw)
		}
	}
	var out struct {
		Result map[string]json.RawMessage `json:"result"`
		Error  json.RawMessage            `json:"error"`
	}
	if err := json.Unmarshal(msg, &out); err != nil {
		return nil, nil, fmt.Errorf("response %q: %v", msg, err)
	}
	return out.Result, out.Error, nil
}

// retried is modernCall as the test's host does it: a request that fails
// on transport is sent once more, on a new connection (a kept-alive one
// may be one haproxy is closing, which fails a POST without a response).
// It returns the tool's text.
func (c *cluster) retried(ctx context.Context, tool string, args map[string]any) (text string, retries int, err error) {
	return c.retriedWithMeta(ctx, tool, args, nil)
}

// retriedWithMeta is retried with meta (nil: modernMeta) as the params'
// _meta.
func (c *cluster) retriedWithMeta(ctx context.Context, tool string, args map[string]any, meta json.RawMessage) (text string, retries int, err error) {
	var first error
	for attempt := 0; ; attempt++ {
		hc := c.http
		if attempt > 0 {
			hc = c.fresh
		}
		params := map[string]any{"name": tool, "arguments": args}
		if meta != nil {
			params["_meta"] = meta
		}
		res, rpcErr, err := c.modernRequest(ctx, hc, params)
		if errors.Is(err, errTransport) && attempt == 0 {
			retries, first = retries+1, err
			continue
		}
		if err != nil {
			if first != nil {
				err = fmt.Errorf("%w, after %v", err, first)
			}
			return "", retries, err
		}
		if rpcErr != nil {
			return "", retries, fmt.Errorf("JSON-RPC error %s", rpcErr)
		}
		if string(res["isError"]) == "true" {
			return "", retries, fmt.Errorf("tool error: %s", resultText(res))
		}
		return resultText(res), retries, nil
	}
}

func resultText(res map[string]json.RawMessage) string {
	var content []struct{ Text string }
	_ = json.Unmarshal(res["content"], &content)
	var b strings.Builder
	for _, c := range content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func sdkText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// connect opens a Go SDK client session through haproxy in version's era.
func (c *cluster) connect(t *testing.T, ctx context.Context, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "sdk-host", Version: "1.0.0"}, opts)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.lb.URL + "/mcp", HTTPClient: c.http, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect (%s): %v", version, err)
	}
	return cs
}

// TestGatewayReplicasBehindHAProxy runs two `snodo-run gateway` replicas,
// with the same config and stateKey, each in front of the demo server
// (2026-07-28) and the npm server-everything, behind haproxy with the
// shipped config: 2026-07-28 requests spread over both replicas, a multi
// round-trip completes on the replica that did not answer its first
// round, a subscriptions/listen on one replica gets its events while
// calls go to the other, legacy sessions stick to their replica, and when
// a replica is killed no 2026-07-28 call the host retries is lost, while
// the legacy sessions it held are gone and their hosts initialize again.
func TestGatewayReplicasBehindHAProxy(t *testing.T) {
	HAProxyPath(t)
	everything := npmEverything(t)
	bin := t.TempDir()
	snodoRun, demo := buildGateway(t, bin)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "gateway.json")
	raw, _ := json.MarshalIndent(map[string]any{
		"stateKey": hex.EncodeToString(key),
		"mcpServers": map[string]any{
			// --churn: the demo server's lists change on their own, so
			// that a listener gets events whatever the calls do.
			"demo":       map[string]any{"command": demo, "args": []string{"--era", "modern", "--churn", "200ms"}},
			"everything": map[string]any{"command": everything},
		},
		// Relative: each replica's own working directory.
		"audit": map[string]any{"file": "audit.jsonl"},
	}, "", "  ")
	if err := os.WriteFile(config, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	replicas := []*gatewayReplica{startReplica(t, snodoRun, config, "gw1"), startReplica(t, snodoRun, config, "gw2")}
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	c := &cluster{replicas: replicas, http: &http.Client{Transport: tr}, fresh: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	defer tr.CloseIdleConnections()
	c.lb = Start(t, []string{replicas[0].addr, replicas[1].addr})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	gw1, gw2 := replicas[0], replicas[1]

	// 2026-07-28, no stickiness: consecutive requests of one host land on
	// both replicas.
	t.Run("modern calls spread", func(t *testing.T) {
		cs := c.connect(t, ctx, "2026-07-28", nil)
		defer cs.Close()
		have := map[string]bool{}
		for tl, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			have[tl.Name] = true
		}
		for _, want := range []string{"demo__register", "demo__echo", "everything__echo"} {
			if !have[want] {
				t.Errorf("tools/list lacks %s", want)
			}
		}
		servedBy := make([]int, 2)
		for i := range 6 {
			tool, args, want := "demo__echo", map[string]any{"text": fmt.Sprint("hello ", i)}, fmt.Sprint("hello ", i)
			if i%2 == 1 {
				tool, args = "everything__echo", map[string]any{"message": fmt.Sprint("hello ", i)}
			}
			servedBy[c.served(t, tool, func() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
				if err != nil || res.IsError || !strings.Contains(sdkText(res), want) {
					t.Fatalf("%s: %v %v", tool, res, err)
				}
			})]++
		}
		if servedBy[0] == 0 || servedBy[1] == 0 {
			t.Errorf("6 consecutive calls served %v by gw1 and gw2: not spread", servedBy)
		}
	})

	// A multi round-trip whose retry lands on the other replica completes
	// there: the raw host retries until the other replica takes it (round
	// robin: the first retry), the Go SDK host (its own retry) completes
	// too.
	t.Run("multi round-trip across replicas", func(t *testing.T) {
		var first map[string]json.RawMessage
		firstOn := c.served(t, "the first round", func() {
			var rpcErr json.RawMessage
			var err error
			if first, rpcErr, err = c.modernCall(ctx, "demo__register", map[string]any{}); err != nil || rpcErr != nil {
				t.Fatalf("first round: %v %s", err, rpcErr)
			}
		})
		var state string
		if string(first["resultType"]) != `"input_required"` || json.Unmarshal(first["requestState"], &state) != nil || !strings.Contains(string(first["inputRequests"]), "elicitation/create") {
			t.Fatalf("first round: %v", first)
		}
		answer := map[string]any{"registration": map[string]any{"action": "accept", "content": map[string]any{"name": "Grace"}}}
		otherDone := false
		for attempt := 0; attempt < 4 && !otherDone; attempt++ {
			var res map[string]json.RawMessage
			on := c.served(t, "the retry", func() {
				var rpcErr json.RawMessage
				var err error
				res, rpcErr, err = c.modernRequest(ctx, c.http, map[string]any{"name": "demo__register", "arguments": map[string]any{},
					"inputResponses": answer, "requestState": state})
				if err != nil || rpcErr != nil {
					t.Fatalf("retry: %v %s", err, rpcErr)
				}
			})
			if !strings.Contains(resultText(res), "registered Grace") {
				t.Fatalf("retry on %s: %v", c.replicas[on].name, res)
			}
			otherDone = on != firstOn
		}
		if !otherDone {
			t.Fatalf("no retry landed on the replica that did not answer the first round (%s)", c.replicas[firstOn].name)
		}

		cs := c.connect(t, ctx, "2026-07-28", &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
			},
		})
		defer cs.Close()
		before := []int{gw1.count(t, isRegister), gw2.count(t, isRegister)}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "demo__register", Arguments: map[string]any{}})
		if err != nil || !strings.Contains(sdkText(res), "registered Ada") {
			t.Fatalf("the Go SDK host's multi round-trip: %v %v", res, err)
		}
		after := []int{gw1.count(t, isRegister), gw2.count(t, isRegister)}
		t.Logf("the Go SDK host's two rounds: gw1 %d, gw2 %d", after[0]-before[0], after[1]-before[1])
	})

	// A subscriptions/listen held open on one replica keeps getting that
	// replica's events while the host's calls go to the other.
	t.Run("listen on one replica, calls on the other", func(t *testing.T) {
		lctx, lcancel := context.WithCancel(ctx)
		defer lcancel()
		events, listenDone := c.listen(t, lctx)
		listensBefore := []float64{gw1.listens(t), gw2.listens(t)}
		select {
		case ev := <-events:
			if !strings.Contains(ev, "notifications/subscriptions/acknowledged") {
				t.Fatalf("first event: %s", ev)
			}
		case <-time.After(wait):
			t.Fatal("no acknowledgement")
		}
		servedBy := make([]int, 2)
		for i := range 6 {
			servedBy[c.served(t, "a call during the listen", func() {
				text, _, err := c.retried(ctx, "demo__echo", map[string]any{"text": fmt.Sprint("during ", i)})
				if err != nil || !strings.Contains(text, fmt.Sprint("during ", i)) {
					t.Fatalf("a call during the listen: %q %v", text, err)
				}
			})]++
		}
		// The demo server changes its list every 200 ms: the listener
		// sees it after the calls, with its stream still open.
		got := 0
		for got < 2 {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatalf("the listen ended after %d events", got)
				}
				if strings.Contains(ev, "notifications/tools/list_changed") {
					got++
				}
			case <-time.After(wait):
				t.Fatalf("%d list changes within %v", got, wait)
			}
		}
		lcancel()
		<-listenDone
		// Which replica held it: the one whose /metrics counts the listen
		// once it has ended.
		on := -1
		deadline := time.Now().Add(wait)
		for on < 0 && time.Now().Before(deadline) {
			for i, g := range c.replicas {
				if g.listens(t) > listensBefore[i] {
					on = i
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		if on < 0 {
			t.Fatal("no replica's /metrics counts the subscriptions/listen")
		}
		if servedBy[1-on] == 0 {
			t.Errorf("the listen was on %s and every call during it too (%v): none went to the other", c.replicas[on].name, servedBy)
		}
		t.Logf("listen on %s; calls during it served %v by gw1 and gw2", c.replicas[on].name, servedBy)
	})

	// Legacy sessions: every request of a session reaches the replica that
	// issued its Mcp-Session-Id. Sessions are opened until each replica
	// holds one.
	sessionOn := map[int]*mcp.ClientSession{}
	defer func() {
		for _, cs := range sessionOn {
			cs.Close()
		}
	}()
	t.Run("legacy sessions stick", func(t *testing.T) {
		for tries := 0; len(sessionOn) < 2 && tries < 8; tries++ {
			cs := c.connect(t, ctx, "2025-11-25", nil)
			if cs.ID() == "" {
				t.Fatal("no Mcp-Session-Id")
			}
			for i := range 8 {
				tool, args, want := "demo__echo", map[string]any{"text": fmt.Sprint("legacy ", i)}, fmt.Sprint("legacy ", i)
				if i%2 == 1 {
					tool, args = "everything__echo", map[string]any{"message": want}
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
				if err != nil || res.IsError || !strings.Contains(sdkText(res), want) {
					t.Fatalf("%s in session %s: %v %v", tool, cs.ID(), res, err)
				}
			}
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatal(err)
			}
			of := func(r auditRecord) bool { return r.Session == cs.ID() }
			n1, n2 := gw1.count(t, of), gw2.count(t, of)
			if n1+n2 != 9 || (n1 != 0 && n2 != 0) {
				t.Fatalf("session %s: its 9 requests served %d by gw1 and %d by gw2", cs.ID(), n1, n2)
			}
			on := 0
			if n2 > 0 {
				on = 1
			}
			if sessionOn[on] == nil {
				sessionOn[on] = cs
			} else {
				cs.Close()
			}
		}
		if len(sessionOn) < 2 {
			t.Fatalf("8 sessions, all on one replica")
		}
	})
	if len(sessionOn) < 2 {
		t.FailNow()
	}

	// A replica killed mid-run: 2026-07-28 calls in flight on it fail on
	// transport (haproxy answers 502) and the host's one retry completes
	// on the other; haproxy's health check takes the dead one out.
	t.Run("replica killed mid-run", func(t *testing.T) {
		servers := gw2.children(t)
		if len(servers) < 2 {
			t.Fatalf("gw2 runs %d server processes, want 2", len(servers))
		}
		// Two long counts with progress, opened one after the other (round
		// robin: one on each replica), each held until its first progress
		// notification: the one on gw2 has begun its response when gw2
		// dies, so haproxy cannot send it again and the host retries it.
		type longResult struct {
			text    string
			retried bool
			err     error
		}
		longs := make([]chan longResult, 2)
		for k := range longs {
			longs[k] = make(chan longResult, 1)
			first := make(chan struct{})
			go func() {
				var r longResult
				params := func() map[string]any {
					var meta map[string]any
					_ = json.Unmarshal([]byte(modernMeta), &meta)
					meta["progressToken"] = fmt.Sprint("long-", k)
					return map[string]any{"name": "demo__count", "arguments": map[string]any{"steps": 20, "delay_ms": 100}, "_meta": meta}
				}
				res, err := c.streamed(ctx, c.http, params(), first)
				if errors.Is(err, errTransport) {
					r.retried = true
					res, err = c.streamed(ctx, c.fresh, params(), nil)
				}
				r.text, r.err = resultText(res), err
				longs[k] <- r
			}()
			select {
			case <-first:
			case r := <-longs[k]:
				t.Fatalf("long count %d ended before its first progress: %+v", k, r)
			case <-time.After(wait):
				t.Fatalf("long count %d: no progress within %v", k, wait)
			}
		}
		var (
			mu             sync.Mutex
			calls, retries int
			failed         []string
			killed         = make(chan struct{})
			stop           = make(chan struct{})
			workers        sync.WaitGroup
			callsAfterKill int
		)
		for w := range 4 {
			workers.Add(1)
			go func() {
				defer workers.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					after := false
					select {
					case <-killed:
						after = true
					default:
					}
					// A count with progress: its response is a stream
					// that has begun when the replica dies, which haproxy
					// cannot send again; the host retries it.
					tool, args, want := "demo__count", map[string]any{"steps": 3, "delay_ms": 30}, "counted to 3"
					var meta map[string]any
					_ = json.Unmarshal([]byte(modernMeta), &meta)
					meta["progressToken"] = fmt.Sprint(w, "-", i)
					rawMeta, _ := json.Marshal(meta)
					if i%2 == 1 {
						want = fmt.Sprint(w, "-", i)
						tool, args, rawMeta = "everything__echo", map[string]any{"message": want}, nil
					}
					text, r, err := c.retriedWithMeta(ctx, tool, args, rawMeta)
					mu.Lock()
					calls++
					retries += r
					if after {
						callsAfterKill++
					}
					if err != nil || !strings.Contains(text, want) {
						failed = append(failed, fmt.Sprintf("%s: %q %v", tool, text, err))
					}
					mu.Unlock()
				}
			}()
		}
		// Kill gw2 once calls are running on both.
		deadline := time.Now().Add(wait)
		for gw2.count(t, func(r auditRecord) bool { return r.Tool == "count" }) < 2 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		gw2.kill()
		close(killed)
		c.lb.WaitFor(t, "gw2 down", func(s []Server) bool {
			for _, x := range s {
				if x.Name == "gw2" && !strings.HasPrefix(x.Status, "DOWN") {
					return false
				}
			}
			return true
		})
		// Calls go on after haproxy took gw2 out.
		mu.Lock()
		n := calls
		mu.Unlock()
		for {
			mu.Lock()
			m := calls
			mu.Unlock()
			if m >= n+20 || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		close(stop)
		workers.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(failed) > 0 {
			t.Errorf("%d of %d calls lost despite the host's retry: %v", len(failed), calls, failed)
		}
		if callsAfterKill < 20 {
			t.Errorf("%d calls after the kill, want at least 20", callsAfterKill)
		}
		t.Logf("%d calls, %d after the kill, %d retried once on a transport error", calls, callsAfterKill, retries)
		hostRetried := 0
		for k, ch := range longs {
			select {
			case r := <-ch:
				if r.err != nil || !strings.Contains(r.text, "counted to 20") {
					t.Errorf("long count %d (retried by the host: %v): %q %v", k, r.retried, r.text, r.err)
				}
				if r.retried {
					hostRetried++
				}
			case <-time.After(wait):
				t.Errorf("long count %d did not end within %v", k, wait)
			}
		}
		if hostRetried != 1 {
			t.Errorf("%d of the 2 long counts were retried by the host, want 1 (the one on gw2)", hostRetried)
		} else {
			t.Log("the long count on gw2, its response begun, failed on transport and the host's retry completed")
		}
		// The dead replica's servers die with it (their parent-death
		// signal): no process is left behind.
		for _, pid := range servers {
			for {
				if _, st := procState(pid); st == "" || st == "Z" {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("server process %d of the killed replica is still running", pid)
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	})

	// The legacy session gw2 held is gone with it: its next request is
	// answered 404 by gw1 (the stick table's replica is down, haproxy
	// redispatches), and the host initializes again, on gw1. The session
	// gw1 held goes on.
	t.Run("legacy sessions after the loss", func(t *testing.T) {
		lost, kept := sessionOn[1], sessionOn[0]
		// Its requests, stuck to gw2 in the stick table, are redispatched
		// to gw1, which does not know the session: 404.
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.lb.URL+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		req.Header.Set("Mcp-Session-Id", lost.ID())
		resp, err := c.fresh.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("a request of the lost session: %s %s, want 404", resp.Status, body)
		}
		// The Go SDK host learns it too (its stream broke, or its next
		// request is answered 404) …
		if _, err := lost.CallTool(ctx, &mcp.CallToolParams{Name: "demo__echo", Arguments: map[string]any{"text": "still there?"}}); err == nil {
			t.Fatal("a call in the session of the killed replica succeeded")
		} else {
			t.Logf("the lost session's call: %v", err)
		}
		res, err := kept.CallTool(ctx, &mcp.CallToolParams{Name: "demo__echo", Arguments: map[string]any{"text": "kept"}})
		if err != nil || !strings.Contains(sdkText(res), "kept") {
			t.Errorf("the session of the live replica: %v %v", res, err)
		}
		// … and initializes again: its new session is on gw1.
		again := c.connect(t, ctx, "2025-11-25", nil)
		defer again.Close()
		res, err = again.CallTool(ctx, &mcp.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "again"}})
		if err != nil || !strings.Contains(sdkText(res), "again") {
			t.Fatalf("the host's new session: %v %v", res, err)
		}
		if n := gw1.count(t, func(r auditRecord) bool { return r.Session == again.ID() }); n != 1 {
			t.Errorf("the new session's call: %d audited by gw1, want 1", n)
		}
	})
}

func isRegister(r auditRecord) bool {
	return r.Method == "tools/call" && r.Server == "demo" && r.Tool == "register" && r.Decision == "allow"
}

// listens is how many subscriptions/listen the replica has finished
// serving, from its /metrics.
func (g *gatewayReplica) listens(t *testing.T) float64 {
	return g.metric(t, "mcp_server_operation_duration_seconds_count", `mcp_method_name="subscriptions/listen"`)
}

// listen opens a 2026-07-28 subscriptions/listen for list changes through
// haproxy and sends each of its SSE data lines to events, until ctx ends;
// done is closed once the stream is closed.
func (c *cluster) listen(t *testing.T, ctx context.Context) (events <-chan string, done <-chan struct{}) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":"listen-1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":` + modernMeta + `}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.lb.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		t.Fatalf("subscriptions/listen: %s %s: %s", resp.Status, resp.Header.Get("Content-Type"), b)
	}
	ch := make(chan string, 64)
	fin := make(chan struct{})
	go func() {
		defer close(fin)
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				select {
				case ch <- d:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return ch, fin
}

// streamed sends one 2026-07-28 tools/call with params through haproxy
// with hc, expecting a response stream (a call with progress); first, when
// not nil, is closed at its first progress notification. A stream that
// ends without the response is a transport error.
func (c *cluster) streamed(ctx context.Context, hc *http.Client, params map[string]any, first chan<- struct{}) (map[string]json.RawMessage, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id.Add(1), "method": "tools/call", "params": params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.lb.URL+"/mcp", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", params["name"].(string))
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errTransport, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable {
			return nil, fmt.Errorf("%w: HTTP %d %s", errTransport, resp.StatusCode, b)
		}
		return nil, fmt.Errorf("HTTP %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var msg struct {
			ID     json.RawMessage            `json:"id"`
			Method string                     `json:"method"`
			Result map[string]json.RawMessage `json:"result"`
			Error  json.RawMessage            `json:"error"`
		}
		if err := json.Unmarshal([]byte(d), &msg); err != nil {
			return nil, fmt.Errorf("stream event %q: %v", d, err)
		}
		switch {
		case msg.Method == "notifications/progress" && first != nil:
			close(first)
			first = nil
		case msg.ID != nil && msg.Error != nil:
			return nil, fmt.Errorf("JSON-RPC error %s", msg.Error)
		case msg.ID != nil:
			return msg.Result, nil
		}
	}
	return nil, fmt.Errorf("%w: the stream ended without the response (%v)", errTransport, sc.Err())
}
