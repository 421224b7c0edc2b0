package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/snodo/snodo/internal/fakeserver"
)

// The binaries and modules every test runs, built once in TestMain from
// source.
var (
	binary   string // snodo-run
	demo     string // examples/servers/demo
	skillsEx string // examples/servers/skills
	cacheDir string // the Wasm compilation cache shared by the runs

	elicitWasm   string // examples/handlers/go/elicit-policy
	samplingWasm string // examples/handlers/go/sampling-echo
	testkitWasm  string // testdata/testkit: roots from config, progress consumer
	confineWasm  string // examples/handlers/go/confine-paths
	redactWasm   string // examples/handlers/go/redact-secrets
	shellWasm    string // examples/handlers/go/shell-guard
	addMetaWasm  string // examples/handlers/go/add-meta

	// goCache is the user's Go build cache, which the tests that build
	// Go modules keep using once HOME is a temporary directory.
	goCache string
)

// Modules committed beside their WAT source.
var (
	examplesDir     = filepath.Join("..", "..", "examples", "handlers")
	watDir          = filepath.Join(examplesDir, "wat")
	stopAfterWasm   = filepath.Join(watDir, "stop-after", "stop-after.wasm")
	trapWasm        = filepath.Join(watDir, "hostile", "trap.wasm")
	missingExpWasm  = filepath.Join(watDir, "hostile", "missing-exports.wasm")
	badManifestWasm = filepath.Join(watDir, "hostile", "bad-manifest.wasm")
)

// everythingBin is @modelcontextprotocol/server-everything, installed by
// .ci/deps.d/20-npm-interop.sh (npm ci in internal/interop/everything).
var everythingBin = filepath.Join("..", "..", "internal", "interop", "everything", "node_modules", ".bin", "mcp-server-everything")

func TestMain(m *testing.M) {
	fakeserver.Main(scenarios)
	dir, err := os.MkdirTemp("", "snodo-run-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	if err := buildAll(dir); err != nil {
		fmt.Fprintf(os.Stderr, "building the test binaries: %v\n", err)
	} else if err := isolateUserDirs(filepath.Join(dir, "user")); err != nil {
		fmt.Fprintf(os.Stderr, "temporary user directories: %v\n", err)
	} else {
		code = m.Run()
		if code == 0 {
			if err := goleak.Find(); err != nil {
				fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
				code = 1
			}
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func buildAll(dir string) error {
	for _, p := range []*string{&examplesDir, &watDir, &stopAfterWasm, &trapWasm, &missingExpWasm, &badManifestWasm, &everythingBin} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	binary = filepath.Join(dir, "snodo-run")
	demo = filepath.Join(dir, "demo")
	skillsEx = filepath.Join(dir, "skills-server")
	cacheDir = filepath.Join(dir, "cache")
	elicitWasm = filepath.Join(dir, "elicit-policy.wasm")
	samplingWasm = filepath.Join(dir, "sampling-echo.wasm")
	testkitWasm = filepath.Join(dir, "testkit.wasm")
	confineWasm = filepath.Join(dir, "confine-paths.wasm")
	redactWasm = filepath.Join(dir, "redact-secrets.wasm")
	shellWasm = filepath.Join(dir, "shell-guard.wasm")
	addMetaWasm = filepath.Join(dir, "add-meta.wasm")
	builds := []struct {
		out, pkg string
		wasm     bool
	}{
		{binary, ".", false},
		{demo, "../../examples/servers/demo", false},
		{skillsEx, "../../examples/servers/skills", false},
		{elicitWasm, "../../examples/handlers/go/elicit-policy", true},
		{samplingWasm, "../../examples/handlers/go/sampling-echo", true},
		{testkitWasm, "./testdata/testkit", true},
		{confineWasm, "../../examples/handlers/go/confine-paths", true},
		{redactWasm, "../../examples/handlers/go/redact-secrets", true},
		{shellWasm, "../../examples/handlers/go/shell-guard", true},
		{addMetaWasm, "../../examples/handlers/go/add-meta", true},
	}
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
		goCache = strings.TrimSpace(string(out))
	}
	for _, b := range builds {
		args := []string{"build", "-o", b.out}
		cmd := exec.Command("go", args...)
		if b.wasm {
			cmd.Args = append(cmd.Args, "-buildmode=c-shared")
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		}
		cmd.Args = append(cmd.Args, b.pkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	return nil
}

// userDirs is the temporary stand-in for the user's home, set by TestMain.
var userDirs string

// isolateUserDirs points HOME and the XDG base directories of this process,
// and so of every snodo-run it starts, at new directories under root, so
// that no test reads or writes the user's files (the OAuth grants under
// ~/.cache/snodo/oauth, the config in ~/.config/snodo, the shell history).
// A test that needs directories of its own sets them again. It runs after
// the builds, which keep the user's Go build cache.
func isolateUserDirs(root string) error {
	for _, d := range []struct{ env, sub string }{
		{"HOME", "home"}, {"XDG_CACHE_HOME", "cache"}, {"XDG_CONFIG_HOME", "config"},
		{"XDG_STATE_HOME", "state"}, {"XDG_DATA_HOME", "data"},
	} {
		p := filepath.Join(root, d.sub)
		if err := os.MkdirAll(p, 0o700); err != nil {
			return err
		}
		if err := os.Setenv(d.env, p); err != nil {
			return err
		}
	}
	userDirs = root
	return nil
}

// result is what one run of snodo-run did.
type result struct {
	code           int
	stdout, stderr string
}

// errObj decodes the one JSON error object on the last line of stderr.
func (r result) errObj(t *testing.T) errorObject {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	last := lines[len(lines)-1]
	var e errorObject
	if err := json.Unmarshal([]byte(last), &e); err != nil {
		t.Fatalf("the last line of stderr is not one JSON error object: %q (%v)\nstderr:\n%s", last, err, r.stderr)
	}
	if e.ExitCode != r.code {
		t.Errorf("error object says exit code %d, the process exited %d", e.ExitCode, r.code)
	}
	return e
}

// json decodes stdout.
func (r result) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\nstdout: %s\nstderr: %s", err, r.stdout, r.stderr)
	}
	return v
}

// runOpts are the conditions of one run.
type runOpts struct {
	env   []string // added to the environment
	dir   string   // working directory; "" is a fresh empty one
	stdin string
	// holdStdin keeps stdin open until snodo-run exits (as a host keeps
	// a proxy's stdin), after stdin, if any.
	holdStdin bool
	// interrupt, when set, is called with the running process and its
	// stderr lines as they come; it may send the process a signal.
	interrupt func(p *os.Process, line string)
}

// cli runs snodo-run with args and checks that it left nothing running.
func cli(t *testing.T, args ...string) result {
	t.Helper()
	return cliWith(t, runOpts{}, args...)
}

func cliWith(t *testing.T, o runOpts, args ...string) result {
	t.Helper()
	mark := newMark()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = o.dir
	if cmd.Dir == "" {
		cmd.Dir = t.TempDir()
	}
	// A fresh user config directory, so that no snodo.yaml of the machine
	// is read; the mark finds every process the run started.
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "SNODO_CACHE_DIR="+cacheDir, markEnv+"="+mark)
	cmd.Env = append(cmd.Env, o.env...)
	cmd.Stdin = strings.NewReader(o.stdin)
	if o.holdStdin {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		defer r.Close()
		cmd.Stdin = r
		if _, err := io.WriteString(w, o.stdin); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	var pw *io.PipeWriter
	done := make(chan struct{})
	if o.interrupt == nil {
		cmd.Stderr = &stderr
		close(done)
	} else {
		var pr *io.PipeReader
		pr, pw = io.Pipe()
		cmd.Stderr = pw
		go func() {
			defer close(done)
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				stderr.WriteString(sc.Text() + "\n")
				if cmd.Process != nil {
					o.interrupt(cmd.Process, sc.Text())
				}
			}
			_, _ = io.Copy(io.Discard, pr)
		}()
	}
	err := cmd.Run()
	if pw != nil {
		pw.Close()
	}
	<-done
	if ctx.Err() != nil {
		t.Fatalf("snodo-run %v did not finish in time\nstderr:\n%s", args, stderr.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running snodo-run: %v", err)
	}
	assertNoneLeft(t, mark)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// markEnv is set in snodo-run's environment, which the server and its
// children inherit: after a run, no process may still carry it.
const markEnv = "SNODORUN_TEST_MARK"

func newMark() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// assertNoneLeft fails the test if a process started by the run is still
// running (zombies waiting for init do not count). A SIGKILLed process
// takes a moment to go, so it is given a few seconds.
func assertNoneLeft(t *testing.T, mark string) {
	t.Helper()
	var left []string
	for i := 0; i < 300; i++ {
		left = processesWith(markEnv + "=" + mark)
		if len(left) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("processes left running after snodo-run exited: %v", left)
}

func processesWith(envEntry string) []string {
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range entries {
		pid := e.Name()
		if pid[0] < '0' || pid[0] > '9' {
			continue
		}
		env, err := os.ReadFile("/proc/" + pid + "/environ")
		if err != nil || !bytes.Contains(env, []byte(envEntry+"\x00")) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + pid + "/stat")
		s := string(stat)
		if i := strings.LastIndexByte(s, ')'); i > 0 && len(s) > i+2 && s[i+2] == 'Z' {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		found = append(found, pid+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return found
}

// everything returns the server-everything command, failing the test with
// what to install when it is missing.
func everything(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs(everythingBin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("@modelcontextprotocol/server-everything is not installed at %s: run `bash .ci/deps.d/20-npm-interop.sh` (npm ci in internal/interop/everything; needs node 20 and npm)", abs)
	}
	return abs
}

// sigint sends SIGINT once, when a stderr line contains trigger.
func sigint(trigger string) func(p *os.Process, line string) {
	sent := false
	return func(p *os.Process, line string) {
		if !sent && strings.Contains(line, trigger) {
			sent = true
			_ = p.Signal(syscall.SIGINT)
		}
	}
}
