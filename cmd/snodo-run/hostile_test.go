package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/snodo/snodo/internal/fakeserver"
	"github.com/snodo/snodo/jsonrpc"
)

// hostileText holds what must never reach a terminal raw: a bidi override
// and isolate, a zero-width space, a byte order mark, ESC and the C1 CSI.
const hostileText = "denied\u202eevil\u2066x\u200by\ufeffz\x1b[2J\u009b31m"

// hostileRunes are the characters of hostileText that must be escaped.
var hostileRunes = []string{"\u202e", "\u2066", "\u200b", "\ufeff", "\x1b", "\u009b"}

// scenarios are the fake servers these tests run (the test binary run
// again, see fakeserver).
var scenarios = map[string]fakeserver.Scenario{
	"hostile": hostileServer,
}

// hostileServer speaks the initialize era. It writes hostileText to its
// stderr; tools/list holds echo, secret and names that differ from
// secret only by a control, invisible or white-space character; echo
// returns hostileText, every other call is a JSON-RPC error whose message
// is hostileText. Its lines carry these characters raw, as UTF-8.
func hostileServer(s *fakeserver.Server) {
	os.Stderr.WriteString("boot " + hostileText + "\n")
	str := func(v string) string {
		b, _ := json.Marshal(v)
		// encoding/json escapes only < 0x20, U+2028 and U+2029.
		return string(b)
	}
	for {
		m, err := s.Read()
		if err != nil {
			return
		}
		r, ok := m.(*jsonrpc.Request)
		if !ok {
			continue
		}
		id := string(r.ID.AppendJSON(nil))
		var p struct {
			Name            string `json:"name"`
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(r.Params, &p)
		switch r.Method {
		case "initialize":
			s.WriteLine([]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":` + str(p.ProtocolVersion) +
				`,"capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}}`))
		case "tools/list":
			var tools []string
			for _, n := range []string{"echo", "secret", "secret\x00", "secret\u200b", "secret\ufeff", "secret\u202e", "secret ", " secret", "secret\u00a0", "secret\u3164"} {
				tools = append(tools, `{"name":`+str(n)+`,"inputSchema":{"type":"object"}}`)
			}
			s.WriteLine([]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[` + strings.Join(tools, ",") + `]}}`))
		case "tools/call":
			if p.Name == "echo" {
				s.WriteLine([]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":` + str(hostileText) + `}]}}`))
				continue
			}
			s.WriteLine([]byte(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32000,"message":` + str(hostileText) + `}}`))
		default:
			s.WriteLine([]byte(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"no such method"}}`))
		}
	}
}

// hostile is the command line that runs hostileServer behind snodo-run.
func hostile(args ...string) []string {
	return append(append([]string{"--env", fakeserver.ScenarioEnv + "=hostile"}, args...), "--", fakeserver.Executable())
}

// noRaw fails if s holds any of hostileRunes as it is.
func noRaw(t *testing.T, what, s string) {
	t.Helper()
	for _, c := range hostileRunes {
		if strings.Contains(s, c) {
			t.Errorf("%s holds %q raw:\n%q", what, c, s)
		}
	}
}

// A server's error message, its tool results and its stderr
// (--server-stderr) reach the terminal with bidi controls, invisible
// characters and controls escaped; the error object and the JSON output
// still decode to the server's text.
func TestServerTextReachesTheTerminalEscaped(t *testing.T) {
	for _, output := range []string{"json", "pretty", "text"} {
		r := cli(t, hostile("--protocol", "legacy", "--server-stderr", "-o", output, "tools", "call", "fail")...)
		e := exits(t, r, exitServer, "server")
		noRaw(t, "stderr", r.stderr)
		if e.Message != hostileText {
			t.Errorf("error message %q, want the server's %q", e.Message, hostileText)
		}
		contains(t, "stderr", r.stderr, `denied\u202eevil\u2066x\u200by\ufeffz\u001b[2J\u009b31m`, `boot denied\u202eevil\u2066x\u200by\ufeffz\x1b[2J\x9b31m`)

		r = ok(t, cli(t, hostile("--protocol", "legacy", "-o", output, "tools", "call", "echo")...))
		noRaw(t, output+" stdout", r.stdout)
		if output == "text" {
			contains(t, "text stdout", r.stdout, `denied\u202eevil\u2066x\u200by\ufeffz\x1b[2J\x9b31m`)
			continue
		}
		var res struct {
			Content []struct{ Text string } `json:"content"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Content) != 1 || res.Content[0].Text != hostileText {
			t.Errorf("%s stdout %q does not decode to the server's text (%v)", output, r.stdout, err)
		}
	}
}

// --deny-tool secret holds against names that differ from secret only by
// a control, invisible or white-space character: they are not listed,
// and calling one is refused with the reason.
func TestGuardRefusesNamesWithInvisibleCharacters(t *testing.T) {
	for _, list := range [][]string{{"tools", "list"}, {"call", "tools/list"}} {
		r := ok(t, cli(t, hostile(append([]string{"--protocol", "legacy", "--deny-tool", "secret"}, list...)...)...))
		var res struct {
			Tools []struct{ Name string } `json:"tools"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatalf("%v: %v\n%s", list, err, r.stdout)
		}
		if len(res.Tools) != 1 || res.Tools[0].Name != "echo" {
			t.Errorf("%v lists %q, want echo alone", list, res.Tools)
		}
	}
	for _, name := range []string{"secret\u200b", "secret ", "secret\ufeff"} {
		e := exits(t, cli(t, hostile("--protocol", "legacy", "--deny-tool", "secret", "tools", "call", name)...), exitUsage, "guard")
		contains(t, "error", e.Message, "refused by the guard", "the guard compares no such name")
		e = exits(t, cli(t, hostile("--protocol", "legacy", "--deny-tool", "secret", "call", "tools/call", "--params", `{"name":`+mustJSONString(name)+`}`)...), exitUsage, "guard")
		contains(t, "error", e.Message, "refused by the guard")
	}
	// Without a guard, nothing is compared and nothing refused.
	r := ok(t, cli(t, hostile("--protocol", "legacy", "tools", "list")...))
	if n := strings.Count(r.stdout, `"name":`); n != 10 {
		t.Errorf("without a guard, %d tools listed, want 10:\n%s", n, r.stdout)
	}
}

func mustJSONString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
