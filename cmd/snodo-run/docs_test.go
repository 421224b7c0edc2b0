package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The documents whose snodo-run examples are run, relative to the
// repository's root.
var documented = []string{"README.md", filepath.Join("docs", "CLI.md")}

// A fenced block preceded by this comment (blank lines between allowed) is
// not run; the reason is listed by the test.
var notRunRe = regexp.MustCompile(`^<!--\s*not run:\s*(.+?)\s*-->$`)

// setupSteps are the commands of the examples that prepare what the others
// use. The test does each itself (TestMain builds snodo-run, the demo server
// and the Go example modules; the committed modules are used as they are),
// so they are recognised, not run.
var setupSteps = map[string]string{
	"go build -o bin/demo ./examples/servers/demo":            "the demo server, built by TestMain",
	"go build -o bin/skills-server ./examples/servers/skills": "the example skills server, built by TestMain",
	"go build -o bin/snodo-run ./cmd/snodo-run":               "snodo-run, built by TestMain",
	"make examples": "the example modules: Go ones built by TestMain, the others committed",
}

// docCommand is one command of a documentation example.
type docCommand struct {
	where    string   // file:line
	script   string   // the command as written (continuations kept)
	preamble []string // the document's variable assignments before it
	output   []string // the output a console block shows for it
}

// docBlock is one fenced shell block of a document.
type docBlock struct {
	where  string
	lang   string
	lines  []string
	notRun string // the reason given by a not-run annotation
}

// docExamples is what a document's shell examples hold.
type docExamples struct {
	run    []docCommand
	notRun []docBlock // annotated blocks
	setup  []string   // setup steps met, with where
}

// parseDoc reads the fenced sh, bash and console blocks of a Markdown
// document and sorts their commands: those that invoke snodo-run are to be
// run, variable assignments carry over to the commands after them, setup
// steps are recognised. Anything else in a block without a not-run
// annotation is an error, as is an annotation that precedes no shell
// block.
func parseDoc(name, text string) (docExamples, error) {
	var ex docExamples
	var preamble []string
	lines := strings.Split(text, "\n")
	annotation, annotationLine := "", 0
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := notRunRe.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			if annotation != "" {
				return ex, fmt.Errorf("%s:%d: a not-run annotation precedes no shell block", name, annotationLine)
			}
			annotation, annotationLine = m[1], i+1
			continue
		}
		if !strings.HasPrefix(line, "```") {
			if annotation != "" && strings.TrimSpace(line) != "" {
				return ex, fmt.Errorf("%s:%d: a not-run annotation precedes no shell block", name, annotationLine)
			}
			continue
		}
		b := docBlock{where: fmt.Sprintf("%s:%d", name, i+1), lang: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			b.lines = append(b.lines, lines[i])
		}
		if i == len(lines) {
			return ex, fmt.Errorf("%s: unclosed code block", b.where)
		}
		shell := b.lang == "sh" || b.lang == "bash" || b.lang == "shell" || b.lang == "console"
		if annotation != "" {
			if !shell {
				return ex, fmt.Errorf("%s:%d: a not-run annotation precedes a %q block, not a shell one", name, annotationLine, b.lang)
			}
			b.notRun, annotation = annotation, ""
			ex.notRun = append(ex.notRun, b)
			continue
		}
		if !shell {
			continue
		}
		cmds, err := blockCommands(b, i-len(b.lines))
		if err != nil {
			return ex, err
		}
		for _, c := range cmds {
			logical := stripComment(strings.ReplaceAll(c.script, "\\\n", " "))
			switch {
			case logical == "":
			case isAssignment(logical):
				preamble = append(preamble, c.script)
			case isSetup(logical):
				ex.setup = append(ex.setup, c.where+": "+logical)
			case invokesSnodoRun(logical):
				c.preamble = append([]string(nil), preamble...)
				ex.run = append(ex.run, c)
			default:
				return ex, fmt.Errorf("%s: %q neither runs snodo-run nor is a setup step the test knows: fix it or annotate the block with <!-- not run: REASON -->", c.where, logical)
			}
		}
	}
	if annotation != "" {
		return ex, fmt.Errorf("%s:%d: a not-run annotation precedes no shell block", name, annotationLine)
	}
	return ex, nil
}

// blockCommands splits a block into commands, joining lines that end with
// a backslash to the next. In a console block, commands are the lines
// after "$ " and the lines up to the next command are its output; first is
// the index of the block's first line in the document.
func blockCommands(b docBlock, first int) ([]docCommand, error) {
	name := b.where[:strings.LastIndexByte(b.where, ':')]
	var cmds []docCommand
	console := b.lang == "console"
	for j := 0; j < len(b.lines); j++ {
		line := b.lines[j]
		where := fmt.Sprintf("%s:%d", name, first+j+1)
		if console {
			if !strings.HasPrefix(line, "$ ") {
				if len(cmds) == 0 {
					if strings.TrimSpace(line) == "" {
						continue
					}
					return nil, fmt.Errorf("%s: console block output before any $ command", where)
				}
				last := &cmds[len(cmds)-1]
				last.output = append(last.output, line)
				continue
			}
			line = strings.TrimPrefix(line, "$ ")
		}
		script := line
		for strings.HasSuffix(script, "\\") && j+1 < len(b.lines) {
			j++
			script += "\n" + b.lines[j]
		}
		cmds = append(cmds, docCommand{where: where, script: script})
	}
	return cmds, nil
}

var (
	assignmentRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=("[^"]*"|'[^']*'|[^\s"'|;&]*)$`)
	snodoRunRe   = regexp.MustCompile(`(^|[\s|;&(])(bin/)?snodo-run(\s|$)`)
	commentRe    = regexp.MustCompile(`(^|\s)#[^"']*$`)
)

// stripComment removes a trailing shell comment that holds no quote, and
// the surrounding space.
func stripComment(s string) string {
	return strings.TrimSpace(commentRe.ReplaceAllString(s, ""))
}

func isAssignment(s string) bool { return assignmentRe.MatchString(s) }

func invokesSnodoRun(s string) bool { return snodoRunRe.MatchString(s) }

func isSetup(s string) bool {
	for _, part := range strings.Split(s, "&&") {
		if _, ok := setupSteps[strings.Join(strings.Fields(part), " ")]; !ok {
			return false
		}
	}
	return true
}

// The parser finds the commands, carries the assignments over, takes the
// output of console blocks, and refuses what it cannot run.
func TestDocParser(t *testing.T) {
	doc := strings.Join([]string{
		"# T",
		"```sh",
		"make examples   # the modules",
		"P=examples/x.wasm   # a module",
		"bin/snodo-run handlers check $P \\",
		"    --output text",
		"```",
		"```console",
		"$ SNODO_TIMEOUT=5s snodo-run discover -- bin/demo",
		"snodo-demo 1.0.0 …",
		"$ printf 'x\\n' | snodo-run shell -- bin/demo",
		"```",
		"<!-- not run: a synopsis -->",
		"",
		"```sh",
		"snodo-run [flags] COMMAND",
		"```",
		"```yaml",
		"x: npx",
		"```",
	}, "\n")
	ex, err := parseDoc("T.md", doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.run) != 3 || len(ex.notRun) != 1 || len(ex.setup) != 1 {
		t.Fatalf("%d to run, %d not run, %d setup steps; want 3, 1, 1: %+v", len(ex.run), len(ex.notRun), len(ex.setup), ex)
	}
	if c := ex.run[0]; c.where != "T.md:5" || c.script != "bin/snodo-run handlers check $P \\\n    --output text" || len(c.preamble) != 1 {
		t.Errorf("first command %+v", c)
	}
	if c := ex.run[1]; c.where != "T.md:9" || len(c.output) != 1 || c.output[0] != "snodo-demo 1.0.0 …" {
		t.Errorf("console command %+v", c)
	}
	if ex.notRun[0].notRun != "a synopsis" || ex.notRun[0].where != "T.md:15" {
		t.Errorf("annotated block %+v", ex.notRun[0])
	}
	for _, bad := range []string{
		"```sh\ncurl https://example.com\n```\n",            // not snodo-run, not a setup step
		"<!-- not run: x -->\nSome text.\n```sh\nls\n```\n", // annotation of nothing
		"<!-- not run: x -->\n```json\n{}\n```\n",           // annotation of a non-shell block
		"```console\noutput first\n$ snodo-run version\n```\n",
		"```sh\nsnodo-run version\n",
	} {
		if _, err := parseDoc("bad.md", bad); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}

// Every snodo-run example of README.md and docs/CLI.md runs as shown: in
// a directory laid out as the repository (bin/snodo-run and bin/demo
// built, the example modules in examples/), with snodo-run on PATH and
// `npx -y @modelcontextprotocol/server-everything` starting the installed
// server-everything. Each exits as the document says (0 unless the output
// shown carries an error's exitCode), shows the lines a console block
// shows (… stands for elided text), and leaves no process behind. listen
// without --count runs until the events come, then gets Ctrl-C, its normal
// end.
func TestDocExamplesRun(t *testing.T) {
	root := docRoot(t)
	everything(t)
	ran, annotated := 0, 0
	for _, doc := range documented {
		text, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		ex, err := parseDoc(filepath.ToSlash(doc), string(text))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range ex.notRun {
			t.Logf("not run: %s (%s block): %s", b.where, b.lang, b.notRun)
		}
		for _, s := range ex.setup {
			t.Logf("setup step done by the test: %s", s)
		}
		annotated += len(ex.notRun)
		for _, c := range ex.run {
			t.Run(c.where, func(t *testing.T) {
				runDocCommand(t, root, c)
			})
			ran++
		}
	}
	t.Logf("ran %d snodo-run examples of %s; %d blocks annotated as not run", ran, strings.Join(documented, " and "), annotated)
	if ran == 0 {
		t.Fatal("no snodo-run example was run")
	}
}

// docPaths is where the examples run.
type docPaths struct {
	dir      string // the working directory: bin/, examples/
	path     string // PATH: snodo-run and the npx shim first
	home     string // HOME and the XDG directories
	httpAddr string // where the demo serves Streamable HTTP for the --url examples
}

// docHTTPAddr is the address of the demo's Streamable HTTP server in the
// documents' --url examples (bin/demo --http 127.0.0.1:8931 --token
// s3cret); the test starts one on a free port and runs the examples
// against it.
const docHTTPAddr = "127.0.0.1:8931"

// startHTTPDemo runs the demo server over Streamable HTTP on a free port,
// with the documents' token, until the test ends, and returns its address.
func startHTTPDemo(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(demo, "--http", "127.0.0.1:0", "--token", "s3cret")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stderr).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "demo: listening on http://")
	if err != nil || !ok {
		t.Fatalf("the demo server over HTTP said %q (%v)", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	return strings.TrimSuffix(addr, "/mcp")
}

// docRoot lays out a working directory as the examples expect it, with
// links to the built binaries and modules and to the repository's
// examples, and a PATH directory with snodo-run and an npx that starts
// the installed server-everything (and nothing else, so that no example
// reaches the network).
func docRoot(t *testing.T) docPaths {
	t.Helper()
	base := t.TempDir()
	p := docPaths{dir: filepath.Join(base, "repo"), path: filepath.Join(base, "path"), home: filepath.Join(base, "home"), httpAddr: startHTTPDemo(t)}
	link := func(target, name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	link(binary, filepath.Join(p.dir, "bin", "snodo-run"))
	link(demo, filepath.Join(p.dir, "bin", "demo"))
	link(skillsEx, filepath.Join(p.dir, "bin", "skills-server"))
	link(binary, filepath.Join(p.path, "snodo-run"))
	if err := os.MkdirAll(p.home, 0o755); err != nil {
		t.Fatal(err)
	}
	goModules := map[string]string{"elicit-policy": elicitWasm, "sampling-echo": samplingWasm, "shell-guard": shellWasm, "add-meta": addMetaWasm}
	repoExamples := filepath.Join(examplesDir, "..")
	err := filepath.WalkDir(repoExamples, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "node_modules" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(repoExamples, path)
		if err != nil {
			return err
		}
		if filepath.Dir(filepath.Dir(rel)) == filepath.Join("handlers", "go") && filepath.Ext(rel) == ".wasm" {
			return nil // a module make examples built in the repository: the test's own build is used
		}
		link(path, filepath.Join(p.dir, "examples", rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, built := range goModules {
		link(built, filepath.Join(p.dir, "examples", "handlers", "go", name, name+".wasm"))
	}
	shim := "#!/bin/sh\n" +
		"# npx, for the documentation's examples: only server-everything, installed.\n" +
		"if [ \"$1\" = -y ] && [ \"$2\" = @modelcontextprotocol/server-everything ]; then\n" +
		"\tshift 2\n" +
		"\texec " + strconv.Quote(everythingBin) + " \"$@\"\n" +
		"fi\n" +
		"echo \"npx shim: only 'npx -y @modelcontextprotocol/server-everything' is provided, not: npx $*\" >&2\n" +
		"exit 127\n"
	if err := os.WriteFile(filepath.Join(p.path, "npx"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// lockedBuffer is a buffer written by a process and read while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

var (
	exitCodeRe = regexp.MustCompile(`"exitCode":\s*(\d+)`)
	listenRe   = regexp.MustCompile(`\slisten(\s|$)`)
	helpRe     = regexp.MustCompile(`(^|\s)(--help|-h|help)(\s|$)`)
)

// docCommandTimeout bounds each example.
const docCommandTimeout = 60 * time.Second

// runDocCommand runs one example with bash, checks its exit code and the
// output its document shows, and that it left no process running.
func runDocCommand(t *testing.T, p docPaths, c docCommand) {
	want := 0
	if m := exitCodeRe.FindStringSubmatch(strings.Join(c.output, "\n")); m != nil {
		want, _ = strconv.Atoi(m[1])
	}
	expected := expectedFragments(c.output)
	logical := stripComment(strings.ReplaceAll(c.script, "\\\n", " "))
	untilInterrupted := listenRe.MatchString(logical) &&
		!strings.Contains(logical, "--count") && !strings.Contains(logical, "--subscriber")

	script := "set -o pipefail\n" + strings.Join(c.preamble, "\n") + "\n" + c.script + "\n"
	script = strings.ReplaceAll(script, docHTTPAddr, p.httpAddr)
	mark := newMark()
	ctx, cancel := context.WithTimeout(context.Background(), docCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = p.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(),
		"PATH="+p.path+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+p.home, "XDG_CONFIG_HOME="+filepath.Join(p.home, "config"),
		"XDG_STATE_HOME="+filepath.Join(p.home, "state"), "XDG_CACHE_HOME="+filepath.Join(p.home, "cache"),
		"SNODO_CACHE_DIR="+cacheDir, markEnv+"="+mark)
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	if untilInterrupted {
		err = interruptWhenShown(cmd.Process.Pid, &stdout, expected, done)
	} else {
		err = <-done
	}
	elapsed := time.Since(start).Round(time.Millisecond)
	defer assertNoneLeft(t, mark)
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish in %s\n%s\nstdout:\n%s\nstderr:\n%s", c.where, docCommandTimeout, c.script, stdout.String(), stderr.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v", c.where, err)
	}
	out := stdout.String() + stderr.String()
	if code != want {
		t.Errorf("%s exited %d, the document implies %d\n%s\nstdout:\n%s\nstderr:\n%s", c.where, code, want, c.script, stdout.String(), stderr.String())
	}
	for _, f := range expected {
		if !strings.Contains(out, f) {
			t.Errorf("%s: the document shows %q, which is not in the output\n%s\nstdout:\n%s\nstderr:\n%s", c.where, f, c.script, stdout.String(), stderr.String())
		}
	}
	// A mistyped subcommand of a command group prints the group's usage
	// and exits 0: an example that does not ask for help must not print it.
	if strings.Contains(out, "Usage:\n  snodo-run") && !helpRe.MatchString(logical) {
		t.Errorf("%s printed snodo-run's usage instead of running (an unknown subcommand?)\n%s\nstdout:\n%s", c.where, c.script, stdout.String())
	}
	if untilInterrupted && strings.TrimSpace(stdout.String()) == "" {
		t.Errorf("%s printed no event before Ctrl-C\nstderr:\n%s", c.where, stderr.String())
	}
	t.Logf("%s: exit %d in %s", c.where, code, elapsed)
}

// expectedFragments are the parts of the output a console block shows
// that the output must contain: each line's text between the … that
// elide what varies. ^C, the sign of an interrupt, is no output.
func expectedFragments(output []string) []string {
	var frags []string
	for _, line := range output {
		if strings.TrimSpace(line) == "^C" {
			continue
		}
		for _, f := range strings.Split(line, "…") {
			if f = strings.TrimSpace(f); f != "" {
				frags = append(frags, f)
			}
		}
	}
	return frags
}

// interruptWhenShown waits until stdout has an event (and every expected
// fragment), or 20 s, then sends SIGINT to the command's process group,
// as Ctrl-C on a terminal does, and waits for it to end.
func interruptWhenShown(pgid int, stdout *lockedBuffer, expected []string, done <-chan error) error {
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-deadline:
		case <-tick.C:
			out := stdout.String()
			shown := strings.Contains(out, "\n")
			for _, f := range expected {
				shown = shown && strings.Contains(out, f)
			}
			if !shown {
				continue
			}
		}
		_ = syscall.Kill(-pgid, syscall.SIGINT)
		return <-done
	}
}
