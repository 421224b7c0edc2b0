package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/snodo/snodo/internal/fakeserver"
	"github.com/snodo/snodo/jsonrpc"
)

func init() { scenarios["deprecated-features"] = deprecatedFeatures }

// deprecatedFeatures is a legacy server that, for each tools/call, logs
// twice (notifications/message, without being asked) and asks twice for
// sampling and for roots before it answers.
func deprecatedFeatures(s *fakeserver.Server) {
	n := 0
	for {
		m, err := s.Read()
		if err != nil {
			return
		}
		req, ok := m.(*jsonrpc.Request)
		if !ok {
			continue // notifications, and the client's answers
		}
		switch req.Method {
		case "initialize":
			s.Reply(req.ID, json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"old-school","version":"1"}}`))
		case "tools/call":
			for range 2 {
				s.Notify("notifications/message", map[string]any{"level": "info", "data": "hello"})
				n++
				s.Send(&jsonrpc.Request{ID: jsonrpc.Int64ID(int64(n)), Method: "sampling/createMessage",
					Params: json.RawMessage(`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}`)})
				n++
				s.Send(&jsonrpc.Request{ID: jsonrpc.Int64ID(int64(n)), Method: "roots/list", Params: json.RawMessage(`{}`)})
			}
			s.Reply(req.ID, json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`))
		default:
			s.Send(jsonrpc.NewErrorResponse(req.ID, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no such method"}))
		}
	}
}

// Under --verbose, a server that uses sampling, roots and logging — all
// deprecated in MCP 2026-07-28 — gets one line per feature per run, however
// often it uses them; without --verbose, none.
func TestVerboseNamesDeprecatedFeatures(t *testing.T) {
	args := []string{"--protocol", "legacy", "--env", fakeserver.ScenarioEnv + "=deprecated-features", "tools", "call", "x", "--", fakeserver.Executable()}
	r := ok(t, cli(t, append([]string{"-v"}, args...)...))
	for _, want := range []string{
		"the server used sampling (sampling/createMessage), deprecated in MCP 2026-07-28",
		"the server used roots (roots/list), deprecated in MCP 2026-07-28",
		"the server used logging (notifications/message), deprecated in MCP 2026-07-28",
	} {
		if n := strings.Count(r.stderr, want); n != 1 {
			t.Errorf("%q on stderr %d times, want once:\n%s", want, n, r.stderr)
		}
	}
	r = ok(t, cli(t, args...))
	if strings.Contains(r.stderr, "deprecated in MCP") {
		t.Errorf("deprecation lines without --verbose:\n%s", r.stderr)
	}
}

// The official Go SDK's server asks for sampling with a server request
// (legacy) or an input request (2026-07-28): both are named.
func TestVerboseNamesSamplingOfGoSDKServer(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			r := ok(t, cli(t, "-v", "--handler", samplingWasm, "tools", "call", "sample", "--arg", "prompt=hello", "-o", "text", "--", demo, "--era", era))
			if n := strings.Count(r.stderr, "the server used sampling (sampling/createMessage), deprecated in MCP 2026-07-28"); n != 1 {
				t.Errorf("sampling named %d times, want once:\n%s", n, r.stderr)
			}
		})
	}
}
