package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestGatewayNeedsItsConfig(t *testing.T) {
	r := cli(t, "gateway")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--config") {
		t.Fatalf("gateway without --config: exit %d\n%s", r.code, r.stderr)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "gw.json")
	if err := os.WriteFile(bad, []byte(`{"mcpServers":{"a":{"command":"x"}},"identites":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r = cli(t, "gateway", "--config", bad)
	if r.code != exitUsage || !strings.Contains(r.stderr, `identites`) {
		t.Fatalf("a misspelt section: exit %d\n%s", r.code, r.stderr)
	}
}

func TestGatewayHashToken(t *testing.T) {
	sum := sha256.Sum256([]byte("s3cret-token"))
	want := hex.EncodeToString(sum[:])
	if r := cli(t, "gateway", "hash-token", "s3cret-token"); r.code != 0 || strings.TrimSpace(r.stdout) != want {
		t.Fatalf("argument: exit %d, %q, want %s\n%s", r.code, r.stdout, want, r.stderr)
	}
	if r := cliWith(t, runOpts{stdin: "s3cret-token\n"}, "gateway", "hash-token"); r.code != 0 || strings.TrimSpace(r.stdout) != want {
		t.Fatalf("stdin: exit %d, %q\n%s", r.code, r.stdout, r.stderr)
	}
	if r := cliWith(t, runOpts{stdin: ""}, "gateway", "hash-token"); r.code != exitUsage {
		t.Fatalf("no token: exit %d\n%s", r.code, r.stderr)
	}
}

// TestGatewayServesAndStopsInOrder starts the gateway with the demo server
// behind it, reads /healthz and /readyz, and stops it with SIGINT: it
// exits 0 (or with the signal's code) and leaves no process behind (cli
// checks).
func TestGatewayServesAndStopsInOrder(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gw.yaml")
	if err := os.WriteFile(cfg, []byte("listen: 127.0.0.1:0\nmcpServers:\n  demo:\n    command: "+demo+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var health, ready string
	r := cliWith(t, runOpts{interrupt: func(p *os.Process, line string) {
		_, url, ok := strings.Cut(line, "url=")
		if !ok || !strings.Contains(line, "gateway serving") {
			if strings.Contains(line, "backend connected") && health != "" && ready == "" {
				ready = get(t, strings.TrimSuffix(health, "/healthz")+"/readyz")
				_ = p.Signal(syscall.SIGINT)
			}
			return
		}
		base := strings.TrimSuffix(strings.TrimSpace(url), "/mcp")
		health = base + "/healthz"
		if got := get(t, health); got == "" {
			t.Errorf("/healthz answered nothing")
		}
	}}, "gateway", "--config", cfg)
	if ready == "" {
		t.Fatalf("the gateway never said it serves and its server connected: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.HasPrefix(ready, "200") {
		t.Errorf("/readyz once the server connected: %s", ready)
	}
	if r.code != 0 && r.code != 130 {
		t.Errorf("exit %d after SIGINT\n%s", r.code, r.stderr)
	}
}

// get returns "STATUS BODY" of a GET, or "" when it fails.
func get(t *testing.T, url string) string {
	resp, err := http.Get(url)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Status[:3] + " " + string(b)
}

// A gateway with no identities serves every host everything: it does so
// on a loopback address, and elsewhere only when told to.
func TestGatewayRefusesAnonymousHostsBeyondLoopback(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gw.yaml")
	if err := os.WriteFile(cfg, []byte("mcpServers:\n  demo:\n    command: "+demo+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		r := cli(t, "gateway", "--config", cfg, "--listen", addr)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--allow-anonymous") {
			t.Errorf("--listen %s with no identities: exit %d\n%s", addr, r.code, r.stderr)
		}
	}
	for _, addr := range []string{"127.0.0.1:8080", "localhost:80", "[::1]:9"} {
		if !loopback(addr) {
			t.Errorf("%s is loopback", addr)
		}
	}
	for _, addr := range []string{"0.0.0.0:1", ":1", "10.0.0.1:1", "example.com:1", "nonsense"} {
		if loopback(addr) {
			t.Errorf("%s is not loopback", addr)
		}
	}
}
