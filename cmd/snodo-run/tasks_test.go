package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// everythingEntry is server-everything's entry point, run with node as
// `npx -y @modelcontextprotocol/server-everything` runs it.
func everythingEntry(t *testing.T) []string {
	t.Helper()
	everything(t) // installed, or the test fails saying how to install it
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: server-everything needs node 20 (see .ci/deps.d/20-npm-interop.sh)")
	}
	entry, err := filepath.Abs(filepath.Join("..", "..", "internal", "interop", "everything", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	return []string{node, entry}
}

// The tool simulate-research-query needs task augmentation (taskSupport
// "required"): tools call runs it as a task, waits for it showing its
// status (log lines with --verbose), and prints the result; with an
// ambiguous topic the task asks for input, answered by a Wasm handler.
// --no-wait prints the task instead; --task-timeout bounds the wait;
// tasks get of an unknown ID is the server's error.
func TestToolsCallWaitsForATask(t *testing.T) {
	srv := everythingEntry(t)
	with := func(args ...string) []string { return append(args, append([]string{"--"}, srv...)...) }

	// The command as a user types it.
	r := ok(t, cli(t, with("tools", "call", "simulate-research-query", "--arg", "topic=x")...))
	var res struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Content) != 1 || res.IsError {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	contains(t, "result", res.Content[0].Text, "# Research Report: x", "Stage 4: Generating report")

	r = ok(t, cli(t, with("-v", "tools", "call", "simulate-research-query", "--arg", "topic=y", "-o", "text")...))
	contains(t, "text result", r.stdout, "# Research Report: y")
	contains(t, "status lines", r.stderr, `msg=task`, `status=working message="Gathering sources..."`, `status=completed`)

	r = ok(t, cli(t, with("--handler", elicitWasm, "--handler-config", `elicit-policy={"values":{"interpretation":"snake"}}`,
		"tools", "call", "simulate-research-query", "--arg", "topic=python", "--arg", "ambiguous=true", "-o", "text")...))
	contains(t, "clarified", r.stdout, "Clarification**: snake")

	r = ok(t, cli(t, with("tools", "call", "simulate-research-query", "--arg", "topic=z", "--no-wait")...))
	v := r.json(t)
	if id, _ := v["taskId"].(string); id == "" || v["status"] != "working" || v["pollIntervalMs"] != float64(1000) {
		t.Errorf("--no-wait printed %s", r.stdout)
	}

	// --task-timeout bounds the wait (exit 4); SNODO_TASK_TIMEOUT sets it too.
	e := exits(t, cli(t, with("--task-timeout", "1500ms", "tools", "call", "simulate-research-query", "--arg", "topic=slow")...), exitTimeout, "transport")
	contains(t, "task timeout", e.Message, "maximum total timeout of 1.5s")
	e = exits(t, cliWith(t, runOpts{env: []string{"SNODO_TASK_TIMEOUT=1s"}}, with("tools", "call", "simulate-research-query", "--arg", "topic=slow")...), exitTimeout, "transport")
	contains(t, "task timeout from the environment", e.Message, "maximum total timeout of 1s")
	exits(t, cli(t, with("--task-timeout", "soon", "tools", "call", "simulate-research-query", "--arg", "topic=slow")...), exitUsage, "")

	r = ok(t, cli(t, with("tasks", "list")...))
	if strings.TrimSpace(r.stdout) != `{"tasks":[]}` {
		t.Errorf("tasks list of a new server: %s", r.stdout)
	}
	e = exits(t, cli(t, with("tasks", "get", "no-such-task")...), exitServer, "server")
	if e.Code != -32602 {
		t.Errorf("tasks get of an unknown ID: %+v", e)
	}
	exits(t, cli(t, with("tasks", "get")...), exitUsage, "")
}

// In the shell, one connection keeps the tasks: tasks start gives the
// handle, tasks result waits for it, tasks get and list show it, and
// cancelling an ended task is the server's error, after which the session
// goes on.
func TestShellTasks(t *testing.T) {
	srv := everythingEntry(t)
	mark := newMark()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"shell", "--"}, srv...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir(), "SNODO_CACHE_DIR="+cacheDir, markEnv+"="+mark)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(outPipe)
	ask := func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(in, line+"\n"); err != nil {
			t.Fatal(err)
		}
		got, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("%s: %v\nstderr: %s", line, err, stderr.String())
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(got), &v); err != nil {
			t.Fatalf("%s: %q is not a JSON object", line, got)
		}
		return v
	}
	started := ask("tasks start simulate-research-query topic=shell")
	id, _ := started["taskId"].(string)
	if id == "" || started["status"] != "working" {
		t.Fatalf("tasks start: %v", started)
	}
	done := ask("tasks result " + id)
	if b, _ := json.Marshal(done); !strings.Contains(string(b), "Research Report: shell") {
		t.Errorf("tasks result: %s", b)
	}
	if got := ask("tasks get " + id); got["status"] != "completed" {
		t.Errorf("tasks get: %v", got)
	}
	if got := ask("tasks list"); !strings.Contains(func() string { b, _ := json.Marshal(got); return string(b) }(), id) {
		t.Errorf("tasks list: %v", got)
	}
	if _, err := io.WriteString(in, "tasks cancel "+id+"\n"); err != nil {
		t.Fatal(err)
	}
	in.Close()
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitServer {
		t.Errorf("the shell exited %v, want %d (cancelling an ended task)\nstderr: %s", err, exitServer, stderr.String())
	}
	contains(t, "cancel error", stderr.String(), "-32602")
	assertNoneLeft(t, mark)
}

// On a terminal, the shell's tools call shows the task's status message in
// the progress bar; Ctrl-C cancels the call and the task on the server
// (tasks/cancel), which tasks get then shows; the session goes on.
func TestShellTaskOnATerminalCtrlCCancelsTheTask(t *testing.T) {
	srv := everythingEntry(t)
	tm := startTerminal(t, nil, append([]string{"shell", "--no-history", "--"}, srv...)...)
	tm.expect("mcp-servers/everything> ")
	tm.send("tasks start simulate-research-query topic=kept\r")
	tm.expect(`"status":"working"`)
	tm.expect("mcp-servers/everything> ")
	tm.send("tools call simulate-research-query topic=dropped\r")
	tm.expect("working: Analyzing content...") // the second stage, in the bar
	tm.send("\x03")
	tm.expect(`{"error":{"kind":"interrupted"`)
	tm.send("output text\r")
	tm.send("tasks list\r")
	// Both tasks are listed: the first one still runs or is done, the
	// interrupted one is cancelled.
	tm.expect("\tcancelled")
	tm.send("exit\r")
	if code := tm.end(); code != 0 {
		t.Errorf("exit code %d, want 0; output:\n%s", code, tm.screen())
	}
}

// tasks list has no modern-era method: the error names the method and the
// era, and says "not supported" once.
func TestTasksListModernSaysItOnce(t *testing.T) {
	e := exits(t, cli(t, "--protocol", "modern", "tasks", "list", "--", demo), exitConnection, "protocol")
	contains(t, "error", e.Message, "tasks/list (modern era): not supported in this protocol era")
	if n := strings.Count(e.Message, "not supported"); n != 1 {
		t.Errorf("error says not supported %d times: %s", n, e.Message)
	}
}
