package stdio_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/snodo/snodo/internal/fakeserver"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/stdio"
)

func TestMain(m *testing.M) {
	fakeserver.Main(scenarios)
	goleak.VerifyTestMain(m)
}

// scenarios are the fake servers of these tests. "script" is a
// well-behaved server driven by test/* requests; the others misbehave in
// one way each.
var scenarios = map[string]fakeserver.Scenario{
	"script": script,
	// silent reads everything and never answers.
	"silent": func(s *fakeserver.Server) {
		for {
			if _, err := s.Read(); err != nil {
				return
			}
		}
	},
	// garbage answers each request after a burst of lines that are not
	// JSON-RPC.
	"garbage": func(s *fakeserver.Server) {
		for {
			m, err := s.Read()
			if err != nil {
				return
			}
			if r, ok := m.(*jsonrpc.Request); ok {
				s.Write([]byte("not json at all\n{\"unterminated\": \n[1,2,3]\n{\"jsonrpc\":\"1.0\",\"id\":1}\n\"string\"\n\x00\xff\xfe\n   \n\r\n{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":999999,\"result\":{}}\n"))
				s.Reply(r.ID, map[string]string{"ok": "after garbage"})
			}
		}
	},
	// longline answers the first request with a line of Args[0] bytes
	// (a response with that ID, padded), streamed, and echoes the rest.
	"longline": func(s *fakeserver.Server) {
		var size int64
		fmt.Sscan(s.Args[0], &size)
		first := true
		for {
			m, err := s.Read()
			if err != nil {
				return
			}
			r, ok := m.(*jsonrpc.Request)
			if !ok {
				continue
			}
			if first {
				first = false
				s.WriteFrom(longResponse(r.ID, size))
				continue
			}
			s.Reply(r.ID, map[string]string{"ok": "after long line"})
		}
	},
	// exitmidrequest exits with status 3 on its first request.
	"exitmidrequest": func(s *fakeserver.Server) {
		if _, err := s.Read(); err == nil {
			os.Exit(3)
		}
	},
	// closestdout closes its stdout, says so on stderr... and keeps
	// reading stdin until EOF.
	"closestdout": func(s *fakeserver.Server) {
		os.Stdout.Close()
		for {
			if _, err := s.Read(); err != nil {
				return
			}
		}
	},
	// closestdin closes its stdin, announces it, and waits to be killed.
	"closestdin": func(s *fakeserver.Server) {
		os.Stdin.Close()
		s.Notify("test/ready", map[string]any{})
		waitToBeKilled()
	},
	// neverread never reads its stdin and waits to be killed.
	"neverread": func(s *fakeserver.Server) {
		s.Notify("test/ready", map[string]any{})
		waitToBeKilled()
	},
	// exitcode exits with status Args[0] once its stdin is at EOF.
	"exitcode": func(s *fakeserver.Server) {
		for {
			if _, err := s.Read(); err != nil {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
		var code int
		fmt.Sscan(s.Args[0], &code)
		os.Exit(code)
	},
}

// longResponse streams {"jsonrpc":"2.0","id":ID,"result":{"pad":"xxx…"}}
// and a newline, size bytes in all, without building it in memory.
func longResponse(id jsonrpc.ID, size int64) io.Reader {
	head := []byte(`{"jsonrpc":"2.0","id":` + string(id.AppendJSON(nil)) + `,"result":{"pad":"`)
	tail := []byte("\"}}\n")
	pad := size - int64(len(head)) - int64(len(tail))
	return io.MultiReader(bytes.NewReader(head), io.LimitReader(repeatReader('x'), pad), bytes.NewReader(tail))
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// script is a well-behaved server. Unknown requests are echoed: the result
// is the request's params ({} without). The test/* methods script it:
//
//	test/args, test/env {names}, test/cwd, test/stderr {bytes}, test/stderrstat
//	test/notify {method, params}: sends that notification, then replies
//	test/ask {method, count, before}: sends count requests to the client,
//	    replies at once, and relays each answer as test/answered {id,
//	    result, error}; with before, the requests and then a test/after
//	    notification go out before the reply
//	test/sleep {ms}: replies after ms milliseconds, unless cancelled
//	test/exit {code}: exits without replying
//	test/progress {count, intervalMs, forever}: sends progress for the
//	    request's progress token, then replies; without intervalMs, before
//	    reading anything else; stops when cancelled
//	subscriptions/listen: acknowledges (with "forever", never)
//	test/emit {subs, count}: count rounds of one event per subscription
//	test/end {sub, how}: ends a subscription by "error" or "cancelled"
//
// A "late" member in an answer from the client makes the server exit with
// status 4 at EOF. Each notifications/cancelled from the client is relayed
// as test/cancelled params.
// sleepers are the script's test/sleep requests, by ID, so that a
// notifications/cancelled can cut them short.
var sleepers = struct {
	sync.Mutex
	m map[jsonrpc.ID]chan struct{}
}{m: map[jsonrpc.ID]chan struct{}{}}

func script(s *fakeserver.Server) {
	var wg sync.WaitGroup
	defer wg.Wait()
	late := false
	for {
		m, err := s.Read()
		if err != nil {
			wg.Wait()
			if late {
				os.Exit(4)
			}
			return
		}
		switch m := m.(type) {
		case *jsonrpc.Notification:
			if m.Method == "notifications/cancelled" {
				var p struct {
					RequestID jsonrpc.ID `json:"requestId"`
				}
				json.Unmarshal(m.Params, &p)
				sleepers.Lock()
				if ch := sleepers.m[p.RequestID]; ch != nil {
					close(ch)
					delete(sleepers.m, p.RequestID)
				}
				sleepers.Unlock()
				s.Notify("test/cancelled", m.Params)
			}
		case *jsonrpc.Response:
			late = late || bytes.Contains(m.Result, []byte(`"late"`))
			s.Notify("test/answered", map[string]any{"id": m.ID, "result": m.Result, "error": m.Error})
		case *jsonrpc.Request:
			scriptRequest(s, m, &wg)
		}
	}
}

func scriptRequest(s *fakeserver.Server, r *jsonrpc.Request, wg *sync.WaitGroup) {
	var p struct {
		Names      []string        `json:"names"`
		Bytes      int             `json:"bytes"`
		Method     string          `json:"method"`
		Params     json.RawMessage `json:"params"`
		Count      int             `json:"count"`
		MS         int             `json:"ms"`
		Code       int             `json:"code"`
		IntervalMS int             `json:"intervalMs"`
		Forever    bool            `json:"forever"`
		Announce   bool            `json:"announce"`
		Before     bool            `json:"before"`
		Subs       []jsonrpc.ID    `json:"subs"`
		Sub        jsonrpc.ID      `json:"sub"`
		How        string          `json:"how"`
		Meta       struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
		Notifications json.RawMessage `json:"notifications"`
	}
	if len(r.Params) > 0 {
		json.Unmarshal(r.Params, &p)
	}
	switch r.Method {
	case "test/args":
		s.Reply(r.ID, s.Args)
	case "test/env":
		env := map[string]*string{}
		for _, n := range p.Names {
			if v, ok := os.LookupEnv(n); ok {
				env[n] = &v
			} else {
				env[n] = nil
			}
		}
		s.Reply(r.ID, env)
	case "test/cwd":
		wd, _ := os.Getwd()
		s.Reply(r.ID, wd)
	case "test/stderr":
		os.Stderr.Write(bytes.Repeat([]byte("e"), p.Bytes))
		s.Reply(r.ID, map[string]any{})
	case "test/stderrstat":
		var st syscall.Stat_t
		syscall.Fstat(2, &st)
		s.Reply(r.ID, []uint64{uint64(st.Dev), st.Ino})
	case "test/notify":
		s.Send(&jsonrpc.Notification{Method: p.Method, Params: p.Params})
		s.Reply(r.ID, map[string]any{})
	case "test/ask":
		if !p.Before {
			s.Reply(r.ID, map[string]any{})
		}
		for i := range p.Count {
			s.Send(&jsonrpc.Request{ID: jsonrpc.StringID(fmt.Sprintf("s%d", i)), Method: p.Method, Params: p.Params})
		}
		if p.Before {
			s.Notify("test/after", map[string]any{})
			s.Reply(r.ID, map[string]any{})
		}
	case "test/sleep":
		cancelled := make(chan struct{})
		sleepers.Lock()
		sleepers.m[r.ID] = cancelled
		sleepers.Unlock()
		if p.Announce {
			s.Notify("test/sleeping", map[string]any{"id": r.ID})
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-time.After(time.Duration(p.MS) * time.Millisecond):
				s.Reply(r.ID, map[string]any{"slept": p.MS})
			case <-cancelled:
			}
		}()
	case "test/exit":
		os.Exit(p.Code)
	case "test/progress":
		cancelled := make(chan struct{})
		sleepers.Lock()
		sleepers.m[r.ID] = cancelled
		sleepers.Unlock()
		send := func() {
			for i := 0; p.Forever || i < p.Count; i++ {
				select {
				case <-cancelled:
					return
				default:
				}
				s.Notify("notifications/progress", map[string]any{"progressToken": p.Meta.ProgressToken, "progress": i + 1})
				if p.IntervalMS > 0 {
					time.Sleep(time.Duration(p.IntervalMS) * time.Millisecond)
				}
			}
			s.Reply(r.ID, map[string]any{"sent": p.Count})
		}
		if p.IntervalMS == 0 && !p.Forever {
			send() // a flood: nothing else is read until it is sent
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			send()
		}()
	case "subscriptions/listen":
		if p.Forever { // never acknowledges
			return
		}
		s.Notify("notifications/subscriptions/acknowledged", map[string]any{
			"_meta":         map[string]any{"io.modelcontextprotocol/subscriptionId": r.ID},
			"notifications": p.Notifications,
		})
	case "test/emit":
		for i := range p.Count {
			for _, sub := range p.Subs {
				s.Notify("notifications/resources/updated", map[string]any{
					"_meta": map[string]any{"io.modelcontextprotocol/subscriptionId": sub},
					"uri":   fmt.Sprintf("file:///%v/%d", sub, i),
				})
			}
		}
		s.Reply(r.ID, map[string]any{})
	case "test/end":
		switch p.How {
		case "error":
			s.Send(jsonrpc.NewErrorResponse(p.Sub, jsonrpc.NewError("", jsonrpc.CodeInternalError, "stream broke")))
		case "cancelled":
			s.Notify("notifications/cancelled", map[string]any{"requestId": p.Sub, "reason": "server shutting down"})
		}
		s.Reply(r.ID, map[string]any{})
	default:
		result := r.Params
		if len(result) == 0 {
			result = json.RawMessage("{}")
		}
		s.Send(jsonrpc.NewResult(r.ID, result))
	}
}

// ---- helpers for the tests ----

// notes collects the notifications the client receives, for tests to
// wait on.
type notes struct {
	mu   sync.Mutex
	all  []*jsonrpc.Notification
	more chan struct{}
}

func newNotes() *notes { return &notes{more: make(chan struct{}, 1)} }

func (n *notes) hook(x *jsonrpc.Notification) {
	n.mu.Lock()
	n.all = append(n.all, x)
	n.mu.Unlock()
	select {
	case n.more <- struct{}{}:
	default:
	}
}

// wait returns the notifications with method once match reports true for
// them, failing the test after a generous time.
func (n *notes) wait(t *testing.T, method string, match func([]*jsonrpc.Notification) bool) []*jsonrpc.Notification {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		n.mu.Lock()
		var got []*jsonrpc.Notification
		for _, x := range n.all {
			if x.Method == method {
				got = append(got, x)
			}
		}
		n.mu.Unlock()
		if match(got) {
			return got
		}
		select {
		case <-n.more:
		case <-deadline:
			t.Fatalf("no %s notifications as expected; have %d", method, len(got))
		}
	}
}

func (n *notes) waitN(t *testing.T, method string, count int) []*jsonrpc.Notification {
	t.Helper()
	return n.wait(t, method, func(g []*jsonrpc.Notification) bool { return len(g) >= count })
}

// config returns a Config that runs scenario.
func config(scenario string, args ...string) stdio.Config {
	return stdio.Config{
		Command: fakeserver.Executable(),
		Args:    args,
		Env: []stdio.EnvVar{
			stdio.Set(fakeserver.ScenarioEnv, scenario),
			// A race-enabled binary sleeps a second at a clean exit.
			stdio.Set("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")),
		},
	}
}

// connect starts cfg and, at the end of the test, closes the connection
// and waits for the server to exit (killing it after a while: the servers
// that never read their stdin need it).
// notedConfig is config with a hook that records the notifications the
// client gets from the server.
func notedConfig(scenario string, args ...string) (stdio.Config, *notes) {
	n := newNotes()
	cfg := config(scenario, args...)
	cfg.OnNotification = n.hook
	return cfg, n
}

func connect(t testing.TB, cfg stdio.Config) *stdio.Conn {
	t.Helper()
	c, err := stdio.Connect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t, c, 10*time.Second) })
	return c
}

// connectHanging is connect for a server that does not exit at EOF: the
// test kills it at the end.
func connectHanging(t testing.TB, cfg stdio.Config) *stdio.Conn {
	t.Helper()
	c, err := stdio.Connect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t, c, 0) })
	return c
}

func shutdown(t testing.TB, c *stdio.Conn, patience time.Duration) {
	c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if _, err := c.Wait(ctx); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		return
	}
	if p, err := os.FindProcess(c.Pid()); err == nil {
		p.Kill()
	}
	c.Wait(context.Background())
}

func call(t testing.TB, c *stdio.Conn, method string, params any, opts transport.RequestOptions) *jsonrpc.Response {
	t.Helper()
	resp, err := c.Request(context.Background(), &jsonrpc.Request{Method: method, Params: mustJSON(params)}, opts)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if resp.Error != nil {
		t.Fatalf("%s: error response %v", method, resp.Error)
	}
	return resp
}

func mustJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	if raw, ok := v.(json.RawMessage); ok {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

var _ = bufio.NewReader
var _ = strings.Contains

// waitToBeKilled blocks until the process is killed. A bare select {}
// would not do: with no other goroutine, the Go runtime ends the process
// as deadlocked (exit 2) unless the race detector keeps one running.
func waitToBeKilled() {
	for {
		time.Sleep(time.Hour)
	}
}
