package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snodo/snodo/internal/fakeserver"
	"github.com/snodo/snodo/jsonrpc"
)

func init() { scenarios["proxy-slow"] = proxySlowServer }

// proxySlowServer speaks the initialize era. Its first argument is a file
// it appends what it sees to, one line each: "call ID" for a tools/call
// (which it never answers, after one progress notification with the
// call's token), "cancelled ID" for notifications/cancelled, "roots R"
// for the answer R to its roots/list, "initialize" for initialize, "eof"
// when its stdin ends. Its second argument: "roots" asks roots/list after
// notifications/initialized; "mute" never answers initialize; "exit"
// exits at initialize.
func proxySlowServer(s *fakeserver.Server) {
	record := func(format string, a ...any) {
		f, err := os.OpenFile(s.Args[0], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(f, format+"\n", a...)
		f.Close()
	}
	defer record("eof")
	for {
		m, err := s.Read()
		if err != nil {
			return
		}
		switch m := m.(type) {
		case *jsonrpc.Notification:
			switch m.Method {
			case "notifications/initialized":
				if len(s.Args) > 1 && s.Args[1] == "roots" {
					s.Send(&jsonrpc.Request{ID: jsonrpc.StringID("roots-1"), Method: "roots/list", Params: json.RawMessage(`{}`)})
				}
			case "notifications/cancelled":
				var c struct {
					RequestID jsonrpc.ID `json:"requestId"`
				}
				_ = json.Unmarshal(m.Params, &c)
				record("cancelled %s", c.RequestID)
			}
		case *jsonrpc.Response:
			record("roots %s", m.Result)
		case *jsonrpc.Request:
			switch m.Method {
			case "initialize":
				record("initialize")
				if len(s.Args) > 1 && s.Args[1] == "mute" {
					continue
				}
				if len(s.Args) > 1 && s.Args[1] == "exit" {
					return
				}
				s.Reply(m.ID, json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"slow","version":"1"}}`))
			case "ping":
				s.Reply(m.ID, struct{}{})
			case "tools/list":
				s.Reply(m.ID, json.RawMessage(`{"tools":[{"name":"slow","inputSchema":{"type":"object"}}]}`))
			case "tools/call":
				var p struct {
					Meta struct {
						Token json.RawMessage `json:"progressToken"`
					} `json:"_meta"`
				}
				_ = json.Unmarshal(m.Params, &p)
				record("call %s", m.ID)
				if len(p.Meta.Token) > 0 {
					s.Notify("notifications/progress", map[string]any{"progressToken": p.Meta.Token, "progress": 1})
				}
			default:
				s.Send(jsonrpc.NewErrorResponse(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no such method"}))
			}
		}
	}
}

// scriptedHost is a host scripted line by line on the stdin and stdout of
// `snodo-run … proxy -- proxySlowServer`.
type scriptedHost struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	stdout io.ReadCloser
	out    chan map[string]json.RawMessage // closed at the proxy's stdout EOF
	record string                          // proxySlowServer's record
	mark   string
	stderr *syncBuffer
	exited chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// hostWait bounds every wait of these tests; none paces them.
const hostWait = time.Minute

// startScriptedHost runs `snodo-run --env … ARGS… -- proxySlowServer
// RECORD SERVERARGS…`.
func startScriptedHost(t *testing.T, serverArgs []string, args ...string) *scriptedHost {
	t.Helper()
	record := filepath.Join(t.TempDir(), "record")
	// No call's --timeout (default 60s) may end a call the test waits to see
	// cancelled.
	argv := append([]string{"--env", fakeserver.ScenarioEnv + "=proxy-slow", "--timeout", "1h"}, args...)
	argv = append(append(argv, "--", fakeserver.Executable(), record), serverArgs...)
	h := startHost(t, argv...)
	h.record = record
	return h
}

// startHost runs `snodo-run ARGV…` for a host scripted on its stdin and
// stdout.
func startHost(t *testing.T, argv ...string) *scriptedHost {
	t.Helper()
	h := &scriptedHost{t: t, mark: newMark(),
		out: make(chan map[string]json.RawMessage, 100), stderr: &syncBuffer{}, exited: make(chan error, 1)}
	h.cmd = exec.Command(binary, argv...)
	h.cmd.Dir = t.TempDir()
	h.cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "SNODO_CACHE_DIR="+cacheDir, markEnv+"="+h.mark)
	h.cmd.Stderr = h.stderr
	var err error
	if h.in, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if h.stdout, err = h.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(h.out)
		sc := bufio.NewScanner(h.stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]json.RawMessage{"notJSON": json.RawMessage(fmt.Sprintf("%q", sc.Text()))}
			}
			h.out <- m
		}
		// Reads after the pipe's end fail: Wait closes it.
		h.exited <- h.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = h.cmd.Process.Kill()
		_ = h.in.Close()
		for range h.out {
		}
		assertNoneLeft(t, h.mark)
	})
	return h
}

func (h *scriptedHost) send(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		h.t.Fatalf("writing to the proxy: %v", err)
	}
}

// next returns the next message the proxy writes, failing the test when
// none comes.
func (h *scriptedHost) next(what string) map[string]json.RawMessage {
	h.t.Helper()
	select {
	case m, ok := <-h.out:
		if !ok {
			h.t.Fatalf("%s: the proxy's stdout ended; stderr:\n%s", what, h.stderr.String())
		}
		return m
	case <-time.After(hostWait):
		h.t.Fatalf("%s: nothing from the proxy within %v; stderr:\n%s", what, hostWait, h.stderr.String())
	}
	return nil
}

// exit waits for the proxy to exit, reading what it writes meanwhile.
func (h *scriptedHost) exit(what string) {
	h.t.Helper()
	bound := time.NewTimer(hostWait)
	defer bound.Stop()
	for {
		select {
		case _, ok := <-h.out:
			if ok {
				continue
			}
			select {
			case <-h.exited:
				return
			case <-bound.C:
			}
		case <-bound.C:
		}
		h.t.Fatalf("%s: the proxy did not exit within %v; stderr:\n%s", what, hostWait, h.stderr.String())
	}
}

// recorded waits for proxySlowServer to have recorded a line that starts
// with prefix, and returns the line.
func (h *scriptedHost) recorded(prefix string) string {
	h.t.Helper()
	deadline := time.Now().Add(hostWait)
	for {
		b, _ := os.ReadFile(h.record)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the server did not record %q within %v; it recorded:\n%s\nproxy stderr:\n%s", prefix, hostWait, b, h.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

const legacyInit = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"scripted-host","version":"1"}}}`

// startSlowCall opens a legacy session and starts a tools/call (ID 7) that
// the server never answers; it returns once the server has it, with the
// line the server cancelling it will record.
func (h *scriptedHost) startSlowCall() (cancelled string) {
	h.t.Helper()
	h.send(legacyInit)
	if m := h.next("initialize"); string(m["id"]) != `"init"` || m["result"] == nil {
		h.t.Fatalf("initialize answered %v", m)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"tok"}}}`)
	if m := h.next("progress of the slow call"); !strings.Contains(string(m["params"]), `"progressToken":"tok"`) {
		h.t.Fatalf("the proxy wrote %v, want the slow call's progress", m)
	}
	return "cancelled " + strings.TrimPrefix(h.recorded("call "), "call ")
}

// A host that declares roots opens with initialize while the server asks
// roots/list as soon as it is initialized. The host's initialize is
// answered without the proxy holding it back for the roots (the runner's
// wait for a first roots/list is off); the server's roots/list reaches the
// host after that answer, and the host's answer reaches the server.
func TestProxyAnswersInitializeWithoutWaitingForRoots(t *testing.T) {
	h := startScriptedHost(t, []string{"roots"}, "--verbose", "proxy")
	h.send(legacyInit)
	// The host answers nothing before its initialize is answered.
	m := h.next("initialize")
	if string(m["id"]) != `"init"` || m["result"] == nil {
		t.Fatalf("the proxy's first message is %v, want the initialize result", m)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	m = h.next("roots/list")
	var method string
	_ = json.Unmarshal(m["method"], &method)
	if method != "roots/list" || !strings.HasPrefix(string(m["id"]), `"snodo-proxy-`) {
		t.Fatalf("the proxy wrote %v, want the server's roots/list", m)
	}
	h.send(`{"jsonrpc":"2.0","id":` + string(m["id"]) + `,"result":{"roots":[{"uri":"file:///host/root","name":"r"}]}}`)
	h.recorded(`roots {"roots":[{"uri":"file:///host/root","name":"r"}]}`)
	// The runner did not wait for the roots before the initialize answer.
	if s := h.stderr.String(); strings.Contains(s, "ask for the roots") {
		t.Errorf("the proxy waited for the server's roots/list before answering initialize:\n%s", s)
	}
	_ = h.in.Close()
	h.exit("after the host's EOF")
}

// A host killed in the middle of a call: its stdin ends and its stdout
// breaks. The proxy cancels the call on the server at once
// (notifications/cancelled), stops the server and exits, though the call
// would never end by itself. A write to the broken stdout fails (EPIPE)
// rather than kill the proxy with SIGPIPE before it could do so.
func TestProxyHostKilledMidCall(t *testing.T) {
	for _, how := range []string{"stdin closed", "stdin and stdout closed", "stdout closed, then written to"} {
		t.Run(how, func(t *testing.T) {
			h := startScriptedHost(t, nil, "proxy")
			cancelled := h.startSlowCall()
			switch how {
			case "stdin closed":
				_ = h.in.Close()
			case "stdin and stdout closed":
				_ = h.stdout.Close()
				_ = h.in.Close()
			case "stdout closed, then written to":
				// The answer to the ping meets the broken pipe.
				_ = h.stdout.Close()
				h.send(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
			}
			h.recorded(cancelled)
			h.recorded("eof") // the server was stopped
			h.exit("after the host's end")
		})
	}
}

// SIGINT or SIGTERM with a call in flight: the host reads a -32000 error
// answer for the call's ID, the server sees the cancellation and is
// stopped, and the proxy exits 0.
func TestProxySignalAnswersCallInFlight(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			h := startScriptedHost(t, nil, "proxy")
			cancelled := h.startSlowCall()
			if err := h.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			m := h.next("the answer to the call in flight")
			var e jsonrpc.Error
			if string(m["id"]) != "7" || json.Unmarshal(m["error"], &e) != nil {
				t.Fatalf("the proxy wrote %v, want an error answer to request 7", m)
			}
			if e.Code != jsonrpc.CodeConnectionClosed || !strings.Contains(e.Message, "shutting down") {
				t.Errorf("request 7 answered %d %q, want -32000 saying the proxy is shutting down", e.Code, e.Message)
			}
			h.recorded(cancelled)
			h.recorded("eof")
			h.exit("after " + sig.String())
			if code := h.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("exit code %d after %v, want 0; stderr:\n%s", code, sig, h.stderr.String())
			}
		})
	}
}

// tsHost is a host on the TypeScript SDK's Client (the one
// server-everything depends on): it runs `snodo-run ARGS…` over stdio,
// prints {"event":"connected"} once connected, then calls
// server-everything's trigger-long-running-operation for an hour, with no
// progress token (so that nothing is written to the host meanwhile), and
// prints {"event":"calling"} once a ping sent after the call is answered:
// the proxy has read the call and serves it.
const tsHost = `
const sdk = process.env.TS_SDK_DIR;
const { Client } = await import(sdk + "/dist/esm/client/index.js");
const { StdioClientTransport } = await import(sdk + "/dist/esm/client/stdio.js");
const [command, ...args] = process.argv.slice(2);
const client = new Client({ name: "ts-host", version: "1.0.0" }, { capabilities: {} });
await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" }));
console.log(JSON.stringify({ event: "connected" }));
const call = client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 3600, steps: 1 } }, undefined, { timeout: 7200000 });
await client.ping();
console.log(JSON.stringify({ event: "calling" }));
await call;
`

// The TypeScript SDK client as the host, server-everything behind the
// proxy: the host is SIGKILLed while its hour-long call runs. The proxy
// cancels the call, stops the server and exits; no process of the run is
// left.
func TestProxyTSHostKilledMidCall(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: the TypeScript SDK host needs node 20 (see .ci/deps.d/20-npm-interop.sh)")
	}
	sdk, err := filepath.Abs(filepath.Join(filepath.Dir(everythingBin), "..", "@modelcontextprotocol", "sdk"))
	if err != nil {
		t.Fatal(err)
	}
	server := everything(t)
	script := filepath.Join(t.TempDir(), "host.mjs")
	if err := os.WriteFile(script, []byte(tsHost), 0o600); err != nil {
		t.Fatal(err)
	}
	mark := newMark()
	cmd := exec.Command(node, script, binary, "--timeout", "1h", "proxy", "--", server)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "TS_SDK_DIR="+sdk, "XDG_CONFIG_HOME="+t.TempDir(), "SNODO_CACHE_DIR="+cacheDir, markEnv+"="+mark)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	events := make(chan string, 10)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			events <- sc.Text()
		}
	}()
	defer func() {
		_ = cmd.Process.Kill()
		for range events {
		}
		_ = cmd.Wait()
	}()
	for _, want := range []string{`{"event":"connected"}`, `{"event":"calling"}`} {
		select {
		case got, ok := <-events:
			if !ok || got != want {
				t.Fatalf("the host printed %q, want %s; stderr:\n%s", got, want, stderr.String())
			}
		case <-time.After(hostWait):
			t.Fatalf("the host did not print %s within %v; stderr:\n%s", want, hostWait, stderr.String())
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(hostWait)
	for {
		left := processesWith(markEnv + "=" + mark)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, l := range left { // the run's own processes
				if pid, err := strconv.Atoi(strings.Fields(l)[0]); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			t.Fatalf("%v after the host was killed, still running: %v", hostWait, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A signal while the server is being connected (here: it never answers
// initialize) answers the host's initialize, which the proxy has read,
// with -32000 saying the proxy is shutting down; a server that exits
// during the handshake gets it a -32000 saying the server could not be
// connected. Either way the host is not left waiting.
func TestProxyAnswersInitializeWhenTheServerIsNotConnected(t *testing.T) {
	for _, c := range []struct{ server, want string }{
		{"mute", "shutting down"},
		{"exit", "could not start or connect to the MCP server"},
	} {
		t.Run(c.server, func(t *testing.T) {
			h := startScriptedHost(t, []string{c.server}, "proxy")
			h.send(legacyInit)
			h.recorded("initialize")
			if c.server == "mute" {
				if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			}
			m := h.next("the answer to initialize")
			var e jsonrpc.Error
			if string(m["id"]) != `"init"` || json.Unmarshal(m["error"], &e) != nil {
				t.Fatalf("the proxy wrote %v, want an error answer to initialize", m)
			}
			if e.Code != jsonrpc.CodeConnectionClosed || !strings.Contains(e.Message, c.want) {
				t.Errorf("initialize answered %d %q, want -32000 saying %q", e.Code, e.Message, c.want)
			}
			h.exit("after the answer")
		})
	}
}

// The same with the demo server in either era behind the proxy: the end
// of the host's stdin in the middle of a long count cancels it on the
// server (notifications/cancelled, or the end of the request's stream in
// 2026-07-28), and the proxy and the server are gone.
func TestProxyHostGoneEndsDemoCallInBothEras(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			h := startHost(t, "--timeout", "1h", "proxy", "--", demo, "--era", era)
			h.send(legacyInit)
			if m := h.next("initialize"); string(m["id"]) != `"init"` || m["result"] == nil {
				t.Fatalf("initialize answered %v", m)
			}
			h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			h.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"count","arguments":{"steps":100000,"delay_ms":10},"_meta":{"progressToken":"tok"}}}`)
			if m := h.next("progress of the count"); !strings.Contains(string(m["params"]), `"progressToken":"tok"`) {
				t.Fatalf("the proxy wrote %v, want the count's progress", m)
			}
			_ = h.in.Close()
			h.exit("after the host's EOF")
		})
	}
}
