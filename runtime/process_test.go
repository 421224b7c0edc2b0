package runtime

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv selects a scripted server when the test binary is re-executed,
// the os/exec package's own trick.
const helperEnv = "SNODO_RUNTIME_TEST_HELPER"

// runHelper runs the scripted process named by helperEnv, if any, and exits.
func runHelper() {
	switch os.Getenv(helperEnv) {
	case "":
		return
	case "polite": // exits at EOF, as an MCP stdio server should
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case "term": // ignores EOF, exits on SIGTERM
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		fmt.Println("ready")
		<-sig
		os.Exit(0)
	case "stubborn": // ignores EOF and SIGTERM, and starts a grandchild that does too
		signal.Ignore(syscall.SIGTERM)
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), helperEnv+"=grandchild")
		if err := child.Start(); err != nil {
			panic(err)
		}
		fmt.Println(child.Process.Pid)
		select {}
	case "polite-with-grandchild": // exits at EOF, leaving a grandchild that ignores SIGTERM
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), helperEnv+"=grandchild")
		if err := child.Start(); err != nil {
			panic(err)
		}
		fmt.Println(child.Process.Pid)
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case "stubborn-mcp": // answers initialize, then ignores EOF and SIGTERM, with a grandchild
		signal.Ignore(syscall.SIGTERM)
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), helperEnv+"=grandchild")
		if err := child.Start(); err != nil {
			panic(err)
		}
		fmt.Fprintln(os.Stderr, "grandchild", child.Process.Pid)
		answerInitialize()
		_, _ = io.Copy(io.Discard, helperStdin)
		select {}
	case "dies-on-call": // answers initialize, then exits 4 at the next request
		answerInitialize()
		for {
			line, err := helperStdin.ReadString('\n')
			if err != nil {
				os.Exit(0)
			}
			if strings.Contains(line, `"id"`) {
				fmt.Fprintln(os.Stderr, "panic: the database is gone")
				os.Exit(4)
			}
		}
	case "two-asks": // at tools/call, asks two elicitations at once and reports how each was answered
		answerInitialize()
		var callID json.RawMessage
		answers := map[string]string{}
		for {
			line, err := helperStdin.ReadString('\n')
			if err != nil {
				os.Exit(0)
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Error  *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			_ = json.Unmarshal([]byte(line), &m)
			switch {
			case m.Method == "tools/call":
				callID = m.ID
				for _, id := range []string{"a", "b"} {
					fmt.Printf(`{"jsonrpc":"2.0","id":%q,"method":"elicitation/create","params":{"mode":"form","message":"%s?","requestedSchema":{"type":"object","properties":{}}}}`+"\n", id, id)
				}
			case m.Method == "" && (string(m.ID) == `"a"` || string(m.ID) == `"b"`):
				answer := "ok"
				if m.Error != nil {
					answer = strconv.Itoa(m.Error.Code)
				}
				answers[strings.Trim(string(m.ID), `"`)] = answer
				if len(answers) == 1 {
					fmt.Printf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"first answered: %s"}}`+"\n", strings.Trim(string(m.ID), `"`))
				} else {
					fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"a=%s b=%s"}]}}`+"\n", callID, answers["a"], answers["b"])
				}
			}
		}
	case "mrtr-two": // 2026-07-28: tools/call asks for two elicitations in one input_required result
		for {
			line, err := helperStdin.ReadString('\n')
			if err != nil {
				os.Exit(0)
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					InputResponses map[string]json.RawMessage `json:"inputResponses"`
				} `json:"params"`
			}
			_ = json.Unmarshal([]byte(line), &m)
			switch {
			case m.Method == "server/discover":
				fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"helper","version":"1"}}}}`+"\n", m.ID)
			case m.Method == "tools/call" && m.Params.InputResponses == nil:
				ask := `{"method":"elicitation/create","params":{"mode":"form","message":"?","requestedSchema":{"type":"object","properties":{}}}}`
				fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"resultType":"input_required","inputRequests":{"a":%s,"b":%s}}}`+"\n", m.ID, ask, ask)
			case m.Method == "tools/call":
				fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","content":[{"type":"text","text":"answered %d"}]}}`+"\n", m.ID, len(m.Params.InputResponses))
			}
		}
	case "ask-at-init": // answers initialize, asks an elicitation, says what it was answered
		answerInitialize()
		fmt.Println(`{"jsonrpc":"2.0","id":"q","method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}`)
		fmt.Fprintln(os.Stderr, "asked")
		for {
			line, err := helperStdin.ReadString('\n')
			if err != nil {
				os.Exit(0)
			}
			if strings.Contains(line, `"id":"q"`) && !strings.Contains(line, `"method"`) {
				fmt.Fprint(os.Stderr, "answer: "+line)
			}
		}
	case "silent-init": // says it got the first request, and never answers
		if _, err := helperStdin.ReadString('\n'); err != nil {
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "got initialize")
		_, _ = io.Copy(io.Discard, helperStdin)
		os.Exit(0)
	case "task-relay": // a 2025-11-25 server that relays requests to the client (clienttasks_test.go)
		serveTaskRelay()
		os.Exit(0)
	case "limit-legacy", "limit-modern": // limitServer over stdio (onelimit_test.go)
		os.Exit(serveLimitStdio(os.Getenv(helperEnv) == "limit-legacy"))
	case "grandchild":
		signal.Ignore(syscall.SIGTERM)
		select {}
	case "setsid-mcp": // starts a grandchild that calls setsid, answers initialize, exits at EOF
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), helperEnv+"=grandchild")
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := child.Start(); err != nil {
			panic(err)
		}
		fmt.Fprintln(os.Stderr, "grandchild", child.Process.Pid)
		answerInitialize()
		_, _ = io.Copy(io.Discard, helperStdin)
		os.Exit(0)
	case "orphan-mcp": // leaves an orphaned great-grandchild in a session of its own, then serves
		mid := exec.Command(os.Args[0])
		mid.Env = append(os.Environ(), helperEnv+"=orphaner")
		out, err := mid.Output()
		if err != nil {
			panic(err)
		}
		fmt.Fprintln(os.Stderr, "grandchild", strings.TrimSpace(string(out)))
		answerInitialize()
		_, _ = io.Copy(io.Discard, helperStdin)
		os.Exit(0)
	case "orphaner": // starts a grandchild in a session of its own, prints its pid, exits
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), helperEnv+"=grandchild")
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := child.Start(); err != nil {
			panic(err)
		}
		fmt.Println(child.Process.Pid)
		os.Exit(0)
	}
	os.Exit(3)
}

// helperStdin is the scripted server's buffered stdin.
var helperStdin = bufio.NewReader(os.Stdin)

// answerInitialize reads the initialize request and answers it as a
// 2025-11-25 server with no capabilities.
func answerInitialize() {
	line, err := helperStdin.ReadString('\n')
	if err != nil {
		os.Exit(1)
	}
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal([]byte(line), &req)
	fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"helper","version":"1"}}}`+"\n", req.ID)
}

// cmdProcess is a serverProcess over a plain exec.Cmd, standing in for the
// stdio connection.
type cmdProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	state *os.ProcessState
}

func startHelper(t *testing.T, scenario string) (*cmdProcess, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+scenario)
	cmd.SysProcAttr = newGroupAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &cmdProcess{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	r := bufio.NewReader(stdout)
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
	return p, r
}

func (p *cmdProcess) Close() error { return p.stdin.Close() }
func (p *cmdProcess) Pid() int     { return p.cmd.Process.Pid }
func (p *cmdProcess) Wait(ctx context.Context) (*os.ProcessState, error) {
	select {
	case <-p.done:
		return p.state, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *cmdProcess) reap() {
	_ = p.cmd.Wait()
	p.state = p.cmd.ProcessState
	close(p.done)
}

// processGone reports whether pid no longer runs: it does not exist, or it
// is a zombie waiting for init to reap it.
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

func readPid(t *testing.T, r *bufio.Reader) int {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("helper wrote %q, not a pid", line)
	}
	return pid
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// "shutdown closes stdin, waits a grace period, then SIGTERM, then SIGKILL,
// and starts the server in its own process group so that grandchildren
// (npx, uvx) go too — no process left behind."
func TestShutdownKillsServerThatIgnoresEOFAndSIGTERMWithItsGrandchild(t *testing.T) {
	p, r := startHelper(t, "stubborn")
	grandchild := readPid(t, r)
	go p.reap()

	state, how := stopServer(context.Background(), p, 50*time.Millisecond, 50*time.Millisecond, quiet)
	if state == nil {
		t.Fatal("stopServer returned without the server's exit state")
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("server ended with %v, want killed by SIGKILL", state)
	}
	if !strings.HasPrefix(how, "killed") {
		t.Errorf("escalation = %q, want killed", how)
	}
	waitGone(t, grandchild)
}

// "An MCP stdio server exits at EOF after finishing admitted requests": the
// polite server gets no signal.
func TestShutdownLetsServerExitAtEOF(t *testing.T) {
	p, _ := startHelper(t, "polite")
	go p.reap()
	state, how := stopServer(context.Background(), p, 10*time.Second, 10*time.Second, quiet)
	if state == nil || !state.Success() {
		t.Fatalf("server ended with %v, want exit 0", state)
	}
	if how != "exited after EOF" {
		t.Errorf("escalation = %q, want exited after EOF", how)
	}
}

// A server that ignores EOF but honours SIGTERM is not killed.
func TestShutdownSendsSIGTERMAfterGrace(t *testing.T) {
	p, r := startHelper(t, "term")
	if _, err := r.ReadString('\n'); err != nil { // signal handler installed
		t.Fatal(err)
	}
	go p.reap()
	state, how := stopServer(context.Background(), p, 50*time.Millisecond, 10*time.Second, quiet)
	if state == nil || !state.Success() {
		t.Fatalf("server ended with %v, want exit 0 after SIGTERM", state)
	}
	if how != "exited after SIGTERM" {
		t.Errorf("escalation = %q, want exited after SIGTERM", how)
	}
}

// A grandchild that outlives a polite server is stopped with the group.
func TestShutdownStopsGrandchildThatOutlivesServer(t *testing.T) {
	p, r := startHelper(t, "polite-with-grandchild")
	grandchild := readPid(t, r)
	go p.reap()
	state, how := stopServer(context.Background(), p, 10*time.Second, 50*time.Millisecond, quiet)
	if state == nil || !state.Success() {
		t.Fatalf("server ended with %v, want exit 0", state)
	}
	if !strings.HasSuffix(how, "its process group stopped") {
		t.Errorf("escalation = %q, want the process group stopped", how)
	}
	waitGone(t, grandchild)
}

// waitGone waits for a SIGKILLed process to disappear: the kernel delivers
// SIGKILL asynchronously, so "gone" is a state to reach, not an instant.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for i := 0; i < 500 && !processGone(pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !processGone(pid) {
		t.Fatalf("process %d is still running", pid)
	}
}
