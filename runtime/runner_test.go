package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
)

// The demo server and the elicit-policy module, built once from source.
var (
	buildOnce  sync.Once
	buildErr   error
	buildDir   string
	demoBin    string
	elicitWasm string
)

func examples(t *testing.T) {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "snodo-runtime-test")
		if buildErr != nil {
			return
		}
		demoBin = filepath.Join(buildDir, "demo")
		elicitWasm = filepath.Join(buildDir, "elicit-policy.wasm")
		if out, err := exec.Command("go", "build", "-o", demoBin, "../examples/servers/demo").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build examples/servers/demo: %v\n%s", err, out)
			return
		}
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", elicitWasm, "../examples/handlers/go/elicit-policy")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build examples/handlers/go/elicit-policy: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

func textOf(res *snodo.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// "a handler written once answers the same elicitation from a legacy and
// from a modern server": one Config, one Wasm module (the Go-compiled
// and the Rust-compiled elicitation policy), the demo server in each era,
// through the whole runtime.
func TestOneWasmHandlerAnswersDemoElicitationInBothEras(t *testing.T) {
	examples(t)
	modules := []struct{ lang, path string }{
		{"go", elicitWasm},
		{"rust", "../examples/handlers/rust/elicit-policy/elicit-policy.wasm"},
	}
	for _, mod := range modules {
		for _, era := range []string{"legacy", "modern"} {
			t.Run(mod.lang+"/"+era, func(t *testing.T) { demoElicitation(t, mod.path, era) })
		}
	}
}

func demoElicitation(t *testing.T, path, era string) {
	ctx := context.Background()
	rt, err := Start(ctx, Config{
		Server: Server{Command: demoBin, Args: []string{"--era", era}},
		Handlers: []HandlerModule{{ModuleConfig: ModuleConfig{Path: path,
			Config: json.RawMessage(`{"values":{"name":"Grace","plan":"pro"}}`)}}},
		// The default compilation cache: compiling a Go-built module
		// in a race-instrumented process takes long, once.
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := rt.Client().Server().Era.String(); got != era {
		t.Errorf("connected in the %s era, want %s", got, era)
	}
	res, err := rt.Client().CallTool(ctx, "register", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(res); got != "registered Grace (age 36, plan pro, newsletter false)" {
		t.Errorf("register answered %q", got)
	}
	if err := rt.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	if st := rt.ExitState(); st == nil || !st.Success() {
		t.Errorf("demo server ended with %v, want exit 0 at EOF", st)
	}
}

// "shutdown closes stdin, waits a grace period, then SIGTERM, then
// SIGKILL, and starts the server in its own process group so that
// grandchildren (npx, uvx) go too — no process left behind": through Start
// and Close, with a real stdio connection.
func TestCloseLeavesNoProcessOfAServerThatIgnoresEOFAndSIGTERM(t *testing.T) {
	var stderr syncBuffer
	rt, err := Start(context.Background(), Config{
		Server:        Server{Command: os.Args[0], Env: []EnvVar{{Name: helperEnv, Value: "stubborn-mcp"}}},
		Protocol:      "legacy",
		ShutdownGrace: 100 * time.Millisecond,
		ServerStderr:  &stderr,
	})
	if err != nil {
		t.Fatal(err)
	}
	pgid := rt.Pid()
	if got, err := syscall.Getpgid(pgid); err != nil || got != pgid {
		t.Errorf("server's process group is %d (%v), want its own, %d", got, err, pgid)
	}
	line := ""
	for i := 0; i < 500 && !strings.HasSuffix(line, "\n"); i++ { // the copier is asynchronous
		time.Sleep(10 * time.Millisecond)
		line = stderr.String()
	}
	line = strings.TrimSpace(line)
	grandchild, err := strconv.Atoi(strings.TrimPrefix(line, "grandchild "))
	if err != nil {
		t.Fatalf("server's stderr %q does not name its grandchild", line)
	}
	if err := rt.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	if ws, ok := rt.ExitState().Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("server ended with %v, want SIGKILL", rt.ExitState())
	}
	waitGone(t, grandchild)
	if groupAlive(pgid) && !processGone(pgid) {
		t.Errorf("process group %d still has processes", pgid)
	}
}

// "server exits at once (its stderr tail shown in the error)"
func TestStartShowsStderrTailOfServerThatExitsAtOnce(t *testing.T) {
	_, err := Start(context.Background(), Config{
		Server: Server{Command: "sh", Args: []string{"-c", "echo 'starting'; echo 'fatal: no token' >&2; exit 3"}},
	})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Kind != jsonrpc.KindTransport || je.Code != jsonrpc.CodeConnectionClosed {
		t.Fatalf("Start: %v, want a -32000 transport error", err)
	}
	for _, want := range []string{"exit status 3", "fatal: no token"} {
		if !strings.Contains(je.Message, want) {
			t.Errorf("error %q does not contain %q", je.Message, want)
		}
	}
	var data struct {
		ExitCode int    `json:"exitCode"`
		Stderr   string `json:"stderr"`
	}
	if err := json.Unmarshal(je.Data, &data); err != nil || data.ExitCode != 3 || data.Stderr != "fatal: no token" {
		t.Errorf("error data %s", je.Data)
	}
}

// A server that dies in the middle of a call: the call's -32000 error
// carries the exit status and the stderr tail.
func TestCallErrorExplainsServerThatDied(t *testing.T) {
	rt, err := Start(context.Background(), Config{
		Server:   Server{Command: os.Args[0], Env: []EnvVar{{Name: helperEnv, Value: "dies-on-call"}}},
		Protocol: "legacy",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	err = rt.Call(context.Background(), nil, func(ctx context.Context, opts ...snodo.CallOption) error {
		_, err := rt.Client().CallTool(ctx, "anything", nil, opts...)
		return err
	})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeConnectionClosed {
		t.Fatalf("call: %v, want -32000", err)
	}
	for _, want := range []string{"exit status 4", "panic: the database is gone"} {
		if !strings.Contains(je.Message, want) {
			t.Errorf("error %q does not contain %q", je.Message, want)
		}
	}
}

// Start fails with a *LoadError naming the module, and starts no server.
func TestStartRefusesAModuleThatCannotLoad(t *testing.T) {
	_, err := Start(context.Background(), Config{
		Server:   Server{Command: "/nonexistent/server"},
		Handlers: []HandlerModule{{ModuleConfig: ModuleConfig{Path: "/nonexistent/policy.wasm"}}},
	})
	var le *LoadError
	if !errors.As(err, &le) || le.Module != "policy" {
		t.Fatalf("Start: %v, want a *LoadError for module policy", err)
	}
}

// A command that does not exist is a -32000 error naming it.
func TestStartReportsCommandNotFound(t *testing.T) {
	_, err := Start(context.Background(), Config{Server: Server{Command: "/nonexistent/server"}})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeConnectionClosed || !strings.Contains(je.Message, "/nonexistent/server") {
		t.Fatalf("Start: %v, want -32000 naming the command", err)
	}
}

func TestCheckProtocol(t *testing.T) {
	for _, p := range []string{"", "auto", "legacy", "modern", "2026-07-28", "2024-11-05"} {
		if err := CheckProtocol(p); err != nil {
			t.Errorf("CheckProtocol(%q): %v", p, err)
		}
	}
	if err := CheckProtocol("2023-01-01"); err == nil {
		t.Error("CheckProtocol accepted an unknown version")
	}
}

// syncBuffer is a bytes.Buffer safe for the stderr copier and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// "one concurrency limit (max-server-requests) shared by legacy server
// requests and MRTR input requests": with a limit of 1, a legacy server's
// second request, sent while the first one's handler runs, is answered
// -32603 at once without running the handler; with 2, both run.
func TestMaxServerRequestsBoundsHandlersOfALegacyServer(t *testing.T) {
	for _, tc := range []struct {
		limit int
		want  string
	}{{1, "a=ok b=-32603"}, {2, "a=ok b=ok"}} {
		t.Run(strconv.Itoa(tc.limit), func(t *testing.T) {
			var calls atomic.Int32
			release := make(chan struct{})
			var once sync.Once
			free := func() { once.Do(func() { close(release) }) }
			rt, err := Start(context.Background(), Config{
				Server:            Server{Command: os.Args[0], Env: []EnvVar{{Name: helperEnv, Value: "two-asks"}}},
				Protocol:          "legacy",
				MaxServerRequests: tc.limit,
				Native: map[string]snodo.Handler{abi.MethodElicitationCreate: snodo.HandlerFunc(func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
					if calls.Add(1) == 2 {
						free()
					}
					select {
					case <-release:
					case <-ctx.Done():
					}
					return json.RawMessage(`{"action":"decline"}`), nil
				})},
				// The server says when the first request has been answered.
				OnLog: func(m snodo.LogMessage) { free() },
			})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close(context.Background())
			res, err := rt.Client().CallTool(context.Background(), "ask", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := textOf(res); got != tc.want {
				t.Errorf("limit %d: %s, want %s", tc.limit, got, tc.want)
			}
			if got := int(calls.Load()); got != tc.limit {
				t.Errorf("limit %d: the handler ran %d times", tc.limit, got)
			}
		})
	}
}

// Config.ClientOptions: a field it sets takes precedence over what the
// Runner derives from the Config, and a handler in its Handlers over
// Native. With MaxServerRequests 1 in the Config and 2 in ClientOptions, a
// legacy server's two requests both run, answered by the ClientOptions
// handler; the Native one never runs.
func TestClientOptionsTakePrecedence(t *testing.T) {
	var calls, native atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	rt, err := Start(context.Background(), Config{
		Server:            Server{Command: os.Args[0], Env: []EnvVar{{Name: helperEnv, Value: "two-asks"}}},
		Protocol:          "legacy",
		MaxServerRequests: 1,
		Native: map[string]snodo.Handler{abi.MethodElicitationCreate: snodo.HandlerFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			native.Add(1)
			return json.RawMessage(`{"action":"decline"}`), nil
		})},
		ClientOptions: snodo.Options{
			MaxServerRequests: 2,
			Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: snodo.HandlerFunc(func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
				if calls.Add(1) == 2 {
					free()
				}
				select {
				case <-release:
				case <-ctx.Done():
				}
				return json.RawMessage(`{"action":"decline"}`), nil
			})},
		},
		// The server says when the first request has been answered.
		OnLog: func(m snodo.LogMessage) { free() },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	res, err := rt.Client().CallTool(context.Background(), "ask", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(res); got != "a=ok b=ok" {
		t.Errorf("%s, want a=ok b=ok (the limit of ClientOptions)", got)
	}
	if c, n := calls.Load(), native.Load(); c != 2 || n != 0 {
		t.Errorf("the ClientOptions handler ran %d times and the Native one %d, want 2 and 0", c, n)
	}
}

// The same limit bounds the input requests of a 2026-07-28 server: with a
// limit of 1, the two input requests of one input_required result run one
// after the other (they wait for a slot; they are not refused).
func TestMaxServerRequestsBoundsInputRequestsOfAModernServer(t *testing.T) {
	var running, most atomic.Int32
	arrived := make(chan struct{}, 2)
	rt, err := Start(context.Background(), Config{
		Server:            Server{Command: os.Args[0], Env: []EnvVar{{Name: helperEnv, Value: "mrtr-two"}}},
		Protocol:          "modern",
		MaxServerRequests: 1,
		Native: map[string]snodo.Handler{abi.MethodElicitationCreate: snodo.HandlerFunc(func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			arrived <- struct{}{}
			// Give a second handler the chance to start beside this one,
			// which the limit must prevent.
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
			}
			return json.RawMessage(`{"action":"decline"}`), nil
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	res, err := rt.Client().CallTool(context.Background(), "ask", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(res); got != "answered 2" {
		t.Errorf("result %q, want both input requests answered", got)
	}
	if got := most.Load(); got != 1 {
		t.Errorf("%d handlers ran at once under a limit of 1", got)
	}
}

// A progress module is attached to the client: a call made through
// Client (not Runner.Call) gives it every notification, with its
// progressToken, and its Stop cancels the call, in both eras.
func TestProgressModuleSeesProgressTokenOnEveryCallPath(t *testing.T) {
	examples(t)
	mod := filepath.Join(buildDir, "progresstoken.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", mod, "./testdata/progresstoken")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build testdata/progresstoken: %v\n%s", err, out)
	}
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rt, err := Start(ctx, Config{
				Server:   Server{Command: demoBin, Args: []string{"--step-delay", "20ms"}},
				Protocol: era,
				Progress: &ModuleConfig{Path: mod},
				CacheDir: filepath.Join(buildDir, "cache"),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close(context.Background())
			_, err = rt.Client().CallTool(ctx, "count", map[string]any{"steps": 50})
			var e *jsonrpc.Error
			if !errors.As(err, &e) || e.Kind != jsonrpc.KindHandler || !strings.Contains(e.Message, "cancelled the request") {
				t.Fatalf("CallTool: %v, want the module's cancellation (a module without the token fails instead)", err)
			}
		})
	}
}

// Runner.Listen ends with the connection in both eras: a server that exits
// while a subscription is open ends Listen with a -32000 error that says
// how the server ended (the client ends legacy subscriptions itself, the
// transport modern ones).
func TestListenEndsWhenTheServerExits(t *testing.T) {
	examples(t)
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rt, err := Start(ctx, Config{
				Server:   Server{Command: "timeout", Args: []string{"-s", "KILL", "3", demoBin, "--era", era}},
				Protocol: era,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close(context.Background())
			err = rt.Listen(ctx, snodo.SubscriptionFilter{ToolsListChanged: true}, nil, nil)
			var e *jsonrpc.Error
			if !errors.As(err, &e) || e.Code != jsonrpc.CodeConnectionClosed || ctx.Err() != nil {
				t.Fatalf("Listen: %v, want a -32000 error before the deadline", err)
			}
			if !strings.Contains(e.Message, "killed") && !strings.Contains(e.Message, "exit") {
				t.Errorf("the error does not say how the server ended: %v", e.Message)
			}
		})
	}
}

// A sampling module whose manifest says "samplingTools" makes the client
// declare sampling.tools and receives the server's tools, in both eras;
// without the declaration, a sampling request with tools is refused and
// the handler never runs.
func TestSamplingToolsFromTheModuleManifest(t *testing.T) {
	examples(t)
	mod := filepath.Join(buildDir, "samplingtools.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", mod, "./testdata/samplingtools")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build testdata/samplingtools: %v\n%s", err, out)
	}
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rt, err := Start(ctx, Config{
				Server:   Server{Command: demoBin, Args: []string{"--era", era}},
				Protocol: era,
				Handlers: []HandlerModule{{ModuleConfig: ModuleConfig{Path: mod}}},
				CacheDir: filepath.Join(buildDir, "cache"),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close(context.Background())
			res, err := rt.Client().CallTool(ctx, "sample", map[string]any{"prompt": "weather?", "tools": true})
			if err != nil || !strings.Contains(textOf(res), "tools: get_weather") {
				t.Fatalf("with samplingTools: %v %v", err, res)
			}

			var ran atomic.Int32
			plain, err := Start(ctx, Config{
				Server:   Server{Command: demoBin, Args: []string{"--era", era}},
				Protocol: era,
				Native: map[string]snodo.Handler{abi.MethodSamplingCreate: snodo.HandlerFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
					ran.Add(1)
					return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"x"},"model":"m"}`), nil
				})},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer plain.Close(context.Background())
			res, err = plain.Client().CallTool(ctx, "sample", map[string]any{"prompt": "weather?", "tools": true})
			if err == nil && !res.IsError {
				t.Errorf("a sampling request with tools to a client without sampling.tools: %v", textOf(res))
			}
			if ran.Load() != 0 {
				t.Error("the handler ran")
			}
			if res, err := plain.Client().CallTool(ctx, "sample", map[string]any{"prompt": "hi"}); err != nil || !strings.Contains(textOf(res), "answered: x") {
				t.Errorf("plain sampling: %v %v", err, res)
			}
		})
	}
}
