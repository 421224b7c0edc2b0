package main

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
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// startWait bounds the waits for a process to serve; it only bounds a
// wait (a healthy start takes well under a second per backend).
const startWait = 120 * time.Second

// build compiles snodo-run (from the repository at root) and the lean
// server (from the bench module) into dir.
func build(root, dir string) (snodoRun, lean string, err error) {
	snodoRun, lean = filepath.Join(dir, "snodo-run"), filepath.Join(dir, "leanserver")
	for _, c := range []*exec.Cmd{
		exec.Command("go", "build", "-o", snodoRun, "./cmd/snodo-run"),
		exec.Command("go", "build", "-o", lean, "./cmd/leanserver"),
	} {
		c.Dir = root
		if strings.HasSuffix(c.Args[len(c.Args)-1], "leanserver") {
			c.Dir = filepath.Join(root, "bench")
		}
		if out, err := c.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("%s: %v\n%s", strings.Join(c.Args, " "), err, out)
		}
	}
	return snodoRun, lean, nil
}

// gateway is one running `snodo-run gateway` process.
type gateway struct {
	URL  string // http://127.0.0.1:port/mcp
	Addr string // 127.0.0.1:port
	cmd  *exec.Cmd
	done chan error

	mu      sync.Mutex
	gcs     int     // GC cycles reported by gctrace
	liveMB  float64 // live heap after the last GC, in MB
	stackMB float64 // goroutine stacks at the last GC, in MB
	logTail []byte  // the last non-gctrace stderr output
}

// gatewayConfig is the config file of a gateway with n lean backends over
// stdio, named b1…bn (or "lean" when n is 1).
func gatewayConfig(lean string, n int, stateKey string) []byte {
	servers := map[string]any{}
	for i := 1; i <= n; i++ {
		name := "lean"
		if n > 1 {
			name = fmt.Sprintf("b%d", i)
		}
		servers[name] = map[string]any{"command": lean}
	}
	cfg := map[string]any{"mcpServers": servers, "maxSessions": 100000, "stateKey": stateKey}
	b, _ := json.Marshal(cfg)
	return b
}

// newStateKey returns a random stateKey (64 hexadecimal digits), shared by
// the replicas of one run.
func newStateKey() string {
	var k [32]byte
	_, _ = rand.Read(k[:])
	return hex.EncodeToString(k[:])
}

var gcLine = regexp.MustCompile(`^gc \d+ .* (\d+)->(\d+)->(\d+) MB, \d+ MB goal, (\d+) MB stacks`)

// startGateway starts snodo-run gateway with config on a free port of
// 127.0.0.1, GODEBUG=gctrace=1 (its live heap is read from the trace), and
// waits for /readyz to answer 200.
func startGateway(snodoRun, dir string, config []byte) (*gateway, error) {
	cfgPath := filepath.Join(dir, fmt.Sprintf("gateway-%d.json", time.Now().UnixNano()))
	if err := os.WriteFile(cfgPath, config, 0o600); err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	g := &gateway{Addr: addr, URL: "http://" + addr + "/mcp", done: make(chan error, 1)}
	g.cmd = exec.Command(snodoRun, "gateway", "--config", cfgPath, "--listen", addr)
	g.cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1")
	stderr, err := g.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	g.cmd.Stdout = io.Discard
	if err := g.cmd.Start(); err != nil {
		return nil, err
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		g.scan(stderr)
	}()
	go func() {
		<-scanned
		g.done <- g.cmd.Wait()
	}()
	if err := g.waitReady(); err != nil {
		g.Stop()
		return nil, err
	}
	return g, nil
}

func (g *gateway) scan(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		g.mu.Lock()
		if m := gcLine.FindStringSubmatch(line); m != nil {
			g.gcs++
			g.liveMB, _ = strconv.ParseFloat(m[3], 64)
			g.stackMB, _ = strconv.ParseFloat(m[4], 64)
		} else {
			g.logTail = append(g.logTail, line...)
			g.logTail = append(g.logTail, '\n')
			if len(g.logTail) > 16<<10 {
				g.logTail = g.logTail[len(g.logTail)-8<<10:]
			}
		}
		g.mu.Unlock()
	}
}

func (g *gateway) waitReady() error {
	deadline := time.Now().Add(startWait)
	var last string
	for time.Now().Before(deadline) {
		select {
		case err := <-g.done:
			g.done <- err
			return fmt.Errorf("gateway exited before it was ready: %v\n%s", err, g.log())
		default:
		}
		resp, err := http.Get("http://" + g.Addr + "/readyz")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(b))
		} else {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("gateway at %s not ready after %v: %s\n%s", g.Addr, startWait, last, g.log())
}

func (g *gateway) log() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return string(g.logTail)
}

// GC returns the number of GC cycles so far, and the live heap after the
// last one and the goroutine stacks then, in MB.
func (g *gateway) GC() (n int, liveMB, stackMB float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gcs, g.liveMB, g.stackMB
}

// RSS returns the process's resident set size in bytes (VmRSS).
func (g *gateway) RSS() (int64, error) { return rss(g.cmd.Process.Pid) }

// Stop ends the gateway with SIGTERM (its backends with it), killing it
// if it has not exited after a generous grace.
func (g *gateway) Stop() {
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-g.done:
		g.done <- err
	case <-time.After(30 * time.Second):
		_ = g.cmd.Process.Kill()
		g.done <- <-g.done
	}
}

func rss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				n, err := strconv.ParseInt(f[0], 10, 64)
				return n << 10, err
			}
		}
	}
	return 0, errors.New("no VmRSS in /proc/PID/status")
}

// leanHTTP is the lean server over Streamable HTTP.
type leanHTTP struct {
	URL   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func startLeanHTTP(lean string) (*leanHTTP, error) {
	cmd := exec.Command(lean, "--http")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stdin.Close()
		_ = cmd.Wait()
		return nil, fmt.Errorf("leanserver --http printed no URL: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return &leanHTTP{URL: strings.TrimSpace(line), cmd: cmd, stdin: stdin}, nil
}

func (l *leanHTTP) Stop() {
	l.stdin.Close()
	_ = l.cmd.Wait()
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// hostHTTP is the HTTP client of the raw host sessions.
var hostHTTP = &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}}

// post sends one JSON-RPC message to the MCP endpoint in session sid
// (none: "") and returns the response's status, session ID and body.
func post(ctx context.Context, url, sid, body string) (int, string, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", legacyVersion)
	}
	resp, err := hostHTTP.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), b, err
}

const legacyVersion = "2025-11-25"

// openSession opens one idle legacy session (initialize, then
// notifications/initialized) and returns its Mcp-Session-Id.
func openSession(ctx context.Context, url string) (string, error) {
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + legacyVersion +
		`","capabilities":{},"clientInfo":{"name":"gwbench","version":"1.0.0"}}}`
	st, sid, body, err := post(ctx, url, "", init)
	if err != nil {
		return "", err
	}
	if st != http.StatusOK || sid == "" {
		return "", fmt.Errorf("initialize: status %d, session %q: %s", st, sid, body)
	}
	st, _, body, err = post(ctx, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil {
		return "", err
	}
	if st != http.StatusAccepted {
		return "", fmt.Errorf("notifications/initialized: status %d: %s", st, body)
	}
	return sid, nil
}

// callEcho calls tool (echo on some backend) with text in session sid
// and checks the result carries text.
func callEcho(ctx context.Context, url, sid, tool, text string) error {
	st, _, body, err := post(ctx, url, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"text":"`+text+`"}}}`)
	if err != nil {
		return err
	}
	if st != http.StatusOK || !bytes.Contains(body, []byte(`"text":"`+text+`"`)) || bytes.Contains(body, []byte(`"error":`)) {
		return fmt.Errorf("tools/call %s: status %d: %s", tool, st, body)
	}
	return nil
}

// streams are legacy sessions' standalone GET streams, held open.
type streams struct {
	bodies []io.ReadCloser
	wg     sync.WaitGroup
}

// openStreams opens the standalone GET stream of each session, 16 at a
// time, and reads each (the keepalive comments) until it is closed.
func openStreams(ctx context.Context, url string, sids []string) (*streams, error) {
	s := &streams{bodies: make([]io.ReadCloser, len(sids))}
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(sids) || failed.Load() != nil {
					return
				}
				body, err := openStream(ctx, url, sids[i])
				if err != nil {
					err = fmt.Errorf("GET stream %d of %d: %w", i+1, len(sids), err)
					failed.CompareAndSwap(nil, &err)
					return
				}
				s.bodies[i] = body
				s.wg.Go(func() { _, _ = io.Copy(io.Discard, body) })
			}
		})
	}
	wg.Wait()
	if e := failed.Load(); e != nil {
		s.Close()
		return nil, *e
	}
	return s, nil
}

func openStream(ctx context.Context, url, sid string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", legacyVersion)
	resp, err := hostHTTP.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return resp.Body, nil
}

// Close closes every stream and waits for their readers.
func (s *streams) Close() {
	for _, b := range s.bodies {
		if b != nil {
			b.Close()
		}
	}
	s.wg.Wait()
}
