package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/snodo/snodo/internal/fakeserver"
	"github.com/snodo/snodo/jsonrpc"
)

func init() { scenarios["keepalive-freeze"] = keepaliveFreeze }

// keepaliveFreeze answers the handshake of either era and keepalive pings
// until it is sent a tools/call; then it stops reading and answering, as a
// frozen server does, until it is stopped.
func keepaliveFreeze(s *fakeserver.Server) {
	for {
		m, err := s.Read()
		if err != nil {
			return
		}
		req, ok := m.(*jsonrpc.Request)
		if !ok {
			continue
		}
		switch req.Method {
		case "server/discover":
			s.Reply(req.ID, json.RawMessage(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"freeze","version":"1"}}}`))
		case "initialize":
			s.Reply(req.ID, json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"freeze","version":"1"}}`))
		case "ping":
			s.Reply(req.ID, struct{}{})
		case "tools/call":
			time.Sleep(time.Hour)
			return
		default:
			s.Send(jsonrpc.NewErrorResponse(req.ID, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no such method"}))
		}
	}
}

// --keepalive ends a call to a frozen server with a connection error that
// says the keepalive ping failed, long before the call's own --timeout.
func TestKeepaliveEndsCallToFrozenServer(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			r := cli(t, "--keepalive", "100ms", "--timeout", "5m", "--shutdown-grace", "100ms", "--protocol", era,
				"--env", fakeserver.ScenarioEnv+"=keepalive-freeze", "tools", "call", "freeze", "--", fakeserver.Executable())
			e := exits(t, r, exitConnection, "transport")
			contains(t, "error", e.Message, "keepalive ping failed", "within 100ms")
			if e.Code != jsonrpc.CodeConnectionClosed {
				t.Errorf("code %d, want -32000", e.Code)
			}
		})
	}
}

// The keepalive setting is read from the flag, the config file and
// SNODO_KEEPALIVE alike; an interval so short it would flood the server is
// refused with a usage error that names the setting.
func TestKeepaliveSetting(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "snodo.yaml")
	if err := os.WriteFile(cfg, []byte("keepalive: 1ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"flag":   {"--keepalive", "1ms", "tools", "list", "--", "true"},
		"config": {"--config", cfg, "tools", "list", "--", "true"},
		"shell":  {"--keepalive", "1ms", "shell", "--", "true"},
		"proxy":  {"--keepalive", "1ms", "proxy", "--", "true"},
	} {
		t.Run(name, func(t *testing.T) {
			e := exits(t, cli(t, args...), exitUsage, "usage")
			contains(t, "error", e.Message, "keepalive must be 0 (no pings) or at least 100ms", `"1ms"`)
		})
	}
	t.Run("env", func(t *testing.T) {
		e := exits(t, cliWith(t, runOpts{env: []string{"SNODO_KEEPALIVE=1ms"}}, "tools", "list", "--", "true"), exitUsage, "usage")
		contains(t, "error", e.Message, "keepalive must be 0")
	})
}
