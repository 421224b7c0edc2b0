// Package lbtest runs the gateway's shipped load-balancer config
// (deploy/haproxy/haproxy.cfg) with a real haproxy in front of replicas on
// 127.0.0.1, for tests: StartHAProxy. Only the frontend's bind address and
// the backend's server lines are replaced; everything else is the file as
// shipped, so the tests check what operators run. The package's tests run
// it in front of stand-in replicas, and in front of two real `snodo-run
// gateway` replicas (TestGatewayReplicasBehindHAProxy).
package lbtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// InstallHint is the failure message when haproxy is not on PATH.
const InstallHint = "haproxy not found on PATH: install haproxy (.ci/deps.d/70-haproxy.sh)"

// Backend is the name of the shipped config's backend of gateway replicas.
const Backend = "gateways"

// startWait bounds the waits for haproxy to start and for its first health
// checks; it only bounds a wait, a healthy start takes well under a second.
const startWait = 60 * time.Second

// ShippedConfig returns the path of deploy/haproxy/haproxy.cfg in the
// source tree this package was built from, or else (a -trimpath build) in
// the nearest directory above the working directory that holds one.
func ShippedConfig(t testing.TB) string {
	t.Helper()
	const rel = "deploy/haproxy/haproxy.cfg"
	var tried []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		p := filepath.Join(filepath.Dir(file), "..", "..", "..", rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		tried = append(tried, p)
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		tried = append(tried, p)
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("lbtest: the shipped haproxy config is at none of %q", tried)
		}
		dir = parent
	}
}

// HAProxyPath returns haproxy's path, failing t (never skipping) when it is
// missing.
func HAProxyPath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatal(InstallHint)
	}
	return p
}

// Check runs `haproxy -c -f cfg` and returns its combined output and error.
func Check(t testing.TB, cfg string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startWait)
	defer cancel()
	out, err := exec.CommandContext(ctx, HAProxyPath(t), "-c", "-f", cfg).CombinedOutput()
	return string(out), err
}

// Render returns the shipped config text with the frontend's bind line
// replaced by front, the backend's server lines by one per backend
// (gw1, gw2, …), and a stats socket at sock added to global (for the
// health states; empty: none). It fails when the shipped file lacks what
// it replaces.
func Render(shipped, front string, backends []string, sock string) (string, error) {
	var out strings.Builder
	var section string
	binds, servers := 0, 0
	for line := range strings.Lines(shipped) {
		trimmed := strings.TrimSpace(line)
		if line != "" && line[0] != '\t' && line[0] != ' ' && trimmed != "" && !strings.HasPrefix(trimmed, "#") {
			section = trimmed
		}
		switch {
		case section == "global" && trimmed == "global":
			out.WriteString(line)
			if sock != "" {
				fmt.Fprintf(&out, "\tstats socket %s mode 600 level admin\n", sock)
			}
			continue
		case strings.HasPrefix(section, "frontend ") && strings.HasPrefix(trimmed, "bind "):
			binds++
			if binds == 1 {
				fmt.Fprintf(&out, "\tbind %s\n", front)
			}
			continue
		case section == "backend "+Backend && strings.HasPrefix(trimmed, "server "):
			if servers == 0 {
				for i, b := range backends {
					fmt.Fprintf(&out, "\tserver gw%d %s\n", i+1, b)
				}
			}
			servers++
			continue
		}
		out.WriteString(line)
	}
	if binds == 0 || servers == 0 {
		return "", fmt.Errorf("shipped haproxy config has %d bind lines in a frontend and %d server lines in backend %s; want at least one of each", binds, servers, Backend)
	}
	return out.String(), nil
}

// HAProxy is a running haproxy.
type HAProxy struct {
	// URL is the frontend, http://127.0.0.1:port.
	URL string
	// Config is the path of the config it runs.
	Config string
	sock   string
	out    *syncBuffer
}

// StartHAProxy starts haproxy with the shipped config in front of
// backends (host:port each), and returns its frontend's URL once every
// backend has passed its first health check (GET /readyz). haproxy is
// stopped when t ends; its log is in t's output if t failed.
func StartHAProxy(t testing.TB, backends []string) (frontURL string) {
	t.Helper()
	return Start(t, backends).URL
}

// Start is StartHAProxy, returning the running haproxy.
func Start(t testing.TB, backends []string) *HAProxy {
	t.Helper()
	h := start(t, backends)
	h.WaitChecked(t)
	return h
}

func start(t testing.TB, backends []string) *HAProxy {
	t.Helper()
	bin := HAProxyPath(t)
	shipped, err := os.ReadFile(ShippedConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "admin.sock")
	var lastErr error
	for range 3 { // a free port taken between its pick and haproxy's bind
		addr := freeAddr(t)
		text, err := Render(string(shipped), addr, backends, sock)
		if err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(dir, "haproxy.cfg")
		if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := Check(t, cfg); err != nil {
			t.Fatalf("haproxy -c refuses the rendered shipped config: %v\n%s", err, out)
		}
		h := &HAProxy{URL: "http://" + addr, Config: cfg, sock: sock, out: &syncBuffer{}}
		cmd := exec.Command(bin, "-f", cfg, "-db")
		cmd.Stdout, cmd.Stderr = h.out, h.out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		if lastErr = h.waitListening(addr, exited); lastErr == nil {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
				if t.Failed() {
					t.Logf("haproxy output:\n%s", h.out.String())
				}
			})
			return h
		}
		_ = cmd.Process.Kill()
		<-exited
		lastErr = fmt.Errorf("%w\nhaproxy output:\n%s", lastErr, h.out.String())
		_ = os.Remove(sock)
	}
	t.Fatalf("haproxy did not start: %v", lastErr)
	return nil
}

func (h *HAProxy) waitListening(addr string, exited <-chan error) error {
	deadline := time.Now().Add(startWait)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("haproxy exited: %v", err)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			if _, err := h.Stat(); err == nil {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("haproxy not listening on %s after %v", addr, startWait)
}

// Server is one backend server's state in haproxy's statistics.
type Server struct {
	Name        string // gw1, gw2, …
	Status      string // UP, DOWN, "UP 1/2", "DOWN 1/2", MAINT, …
	CheckStatus string // L7OK, L7STS, L4CON, INI, …
}

// Stat returns the states of the backend's servers, from haproxy's stats
// socket.
func (h *HAProxy) Stat() ([]Server, error) {
	out, err := h.command("show stat")
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	var cols map[string]int
	var servers []Server
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# ") {
			cols = map[string]int{}
			for i, c := range strings.Split(strings.TrimPrefix(line, "# "), ",") {
				cols[c] = i
			}
			continue
		}
		f := strings.Split(line, ",")
		if cols == nil || len(f) <= max(cols["status"], cols["check_status"]) {
			continue
		}
		if f[cols["pxname"]] != Backend || f[cols["svname"]] == "BACKEND" {
			continue
		}
		servers = append(servers, Server{Name: f[cols["svname"]], Status: f[cols["status"]], CheckStatus: f[cols["check_status"]]})
	}
	if cols == nil {
		return nil, fmt.Errorf("haproxy show stat: no header in %q", out)
	}
	return servers, nil
}

// TableEntries returns the number of entries in the backend's stick table.
func (h *HAProxy) TableEntries() (int, error) {
	out, err := h.command("show table " + Backend)
	if err != nil {
		return 0, err
	}
	// "# table: gateways, type: string, size:102400, used:3"
	_, used, ok := strings.Cut(out, "used:")
	if !ok {
		return 0, fmt.Errorf("haproxy show table: %q", out)
	}
	var n int
	if _, err := fmt.Sscanf(used, "%d", &n); err != nil {
		return 0, fmt.Errorf("haproxy show table: %q: %w", out, err)
	}
	return n, nil
}

func (h *HAProxy) command(cmd string) (string, error) {
	c, err := net.DialTimeout("unix", h.sock, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(cmd + "\n")); err != nil {
		return "", err
	}
	var b bytes.Buffer
	_, err = b.ReadFrom(c)
	return b.String(), err
}

// WaitChecked waits until every server has been health-checked at least
// once and is up.
func (h *HAProxy) WaitChecked(t testing.TB) {
	t.Helper()
	h.WaitFor(t, "every replica up after a passed health check", func(s []Server) bool {
		for _, x := range s {
			if x.Status != "UP" || x.CheckStatus != "L7OK" {
				return false
			}
		}
		return len(s) > 0
	})
}

// WaitFor waits, bounded by a generous limit, until ok holds of the
// servers' states, failing t with what and the last states otherwise.
func (h *HAProxy) WaitFor(t testing.TB, what string, ok func([]Server) bool) {
	t.Helper()
	var last []Server
	var lastErr error
	deadline := time.Now().Add(startWait)
	for time.Now().Before(deadline) {
		last, lastErr = h.Stat()
		if lastErr == nil && ok(last) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("haproxy: not %s within %v: servers %+v, error %v", what, startWait, last, lastErr)
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatal(err)
	}
	return addr
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 1<<20 { // keep the log bounded
		return len(p), nil
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
