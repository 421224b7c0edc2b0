package stdio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/stdio"
)

// "A process owns a Port running command": the command is run directly,
// never through a shell, so arguments arrive exactly as given.
func TestCommandRunsDirectlyWithoutAShell(t *testing.T) {
	args := []string{"$HOME", "a b", "; echo injected", "`id`", "*", ""}
	c := connect(t, config("script", args...))
	var got []string
	json.Unmarshal(call(t, c, "test/args", nil, transport.RequestOptions{}).Result, &got)
	if len(got) != len(args) {
		t.Fatalf("args %q, want %q", got, args)
	}
	for i := range args {
		if got[i] != args[i] {
			t.Fatalf("args %q, want %q", got, args)
		}
	}
}

// ":env - extra environment variables, as {name, value} string pairs. A nil
// value unsets the variable."
func TestEnvSetsAndUnsetsVariables(t *testing.T) {
	t.Setenv("SNODO_TEST_INHERITED", "kept")
	t.Setenv("SNODO_TEST_UNSET", "should vanish")
	t.Setenv("SNODO_TEST_REPLACED", "old")
	cfg := config("script")
	cfg.Env = append(cfg.Env,
		stdio.Set("SNODO_TEST_NEW", "new value"),
		stdio.Unset("SNODO_TEST_UNSET"),
		stdio.Set("SNODO_TEST_REPLACED", "first"),
		stdio.Set("SNODO_TEST_REPLACED", "second"), // applied in order
		stdio.Set("SNODO_TEST_EMPTY", ""),
	)
	c := connect(t, cfg)
	var env map[string]*string
	json.Unmarshal(call(t, c, "test/env", map[string]any{"names": []string{
		"SNODO_TEST_INHERITED", "SNODO_TEST_UNSET", "SNODO_TEST_REPLACED", "SNODO_TEST_NEW", "SNODO_TEST_EMPTY",
	}}, transport.RequestOptions{}).Result, &env)
	want := map[string]*string{
		"SNODO_TEST_INHERITED": ptr("kept"),
		"SNODO_TEST_UNSET":     nil,
		"SNODO_TEST_REPLACED":  ptr("second"),
		"SNODO_TEST_NEW":       ptr("new value"),
		"SNODO_TEST_EMPTY":     ptr(""),
	}
	for name, w := range want {
		g := env[name]
		if (g == nil) != (w == nil) || (g != nil && *g != *w) {
			t.Errorf("%s = %v, want %v", name, show(g), show(w))
		}
	}
}

func ptr(s string) *string { return &s }

func show(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return "\"" + *s + "\""
}

// ":cd - the working directory for the command."
func TestDirSetsWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	cfg := config("script")
	cfg.Dir = dir
	c := connect(t, cfg)
	var wd string
	json.Unmarshal(call(t, c, "test/cwd", nil, transport.RequestOptions{}).Result, &wd)
	want, _ := filepath.EvalSymlinks(dir)
	if got, _ := filepath.EvalSymlinks(wd); got != want {
		t.Fatalf("working directory %q, want %q", wd, dir)
	}
}

// "The server's stderr is not captured": by default the server inherits
// ours.
func TestStderrInheritedByDefault(t *testing.T) {
	c := connect(t, config("script"))
	var got []uint64
	json.Unmarshal(call(t, c, "test/stderrstat", nil, transport.RequestOptions{}).Result, &got)
	var st syscall.Stat_t
	if err := syscall.Fstat(int(os.Stderr.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != uint64(st.Dev) || got[1] != st.Ino {
		t.Fatalf("server's stderr is %v, ours is [%d %d]", got, st.Dev, st.Ino)
	}
}

// "The server's stderr is not captured": it goes where the caller says,
// and is never an unread pipe that would block a server writing 64 KiB and
// more.
func TestStderrGoesToConfiguredWriterAndNeverBlocksServer(t *testing.T) {
	var buf syncBuffer
	cfg := config("script")
	cfg.Stderr = &buf
	c := connect(t, cfg)
	const size = 1 << 20 // far over a pipe's 64 KiB buffer
	// An unread stderr pipe would block the server here: the timeout turns
	// that into a failure.
	call(t, c, "test/stderr", map[string]int{"bytes": size}, transport.RequestOptions{Timeout: 30 * time.Second})
	call(t, c, "echo", nil, transport.RequestOptions{})
	c.Close()
	c.Wait(context.Background()) // the copy to buf is complete once the server is reaped
	if n := buf.Len(); n != size {
		t.Fatalf("stderr writer got %d bytes, want %d", n, size)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// A command that cannot be started is an error from Connect, with nothing
// left running.
func TestConnectFailsForMissingCommand(t *testing.T) {
	_, err := stdio.Connect(context.Background(), stdio.Config{Command: filepath.Join(t.TempDir(), "no-such-server")})
	if err == nil {
		t.Fatal("Connect succeeded")
	}
}

// Lines that are not JSON, not JSON-RPC, or answer nobody are skipped; the
// response after them still arrives.
func TestGarbageAndInvalidLinesAreSkipped(t *testing.T) {
	c := connect(t, config("garbage"))
	for range 3 {
		resp := call(t, c, "x", nil, transport.RequestOptions{})
		if string(resp.Result) != `{"ok":"after garbage"}` {
			t.Fatalf("result %s", resp.Result)
		}
	}
	_ = jsonrpc.Int64ID
}
