package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chzyer/readline"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/safetext"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/runner"
	"github.com/snodo/snodo/transport/stdio"
)

const shellLong = `shell starts the server once, loads the Wasm handler modules once, and
reads commands on that one connection until exit, quit or Ctrl-D:

  tools list                      tools call NAME [K=V…|{JSON}]
  call NAME [K=V…|{JSON}]         (the same as tools call)
  resources list|templates        resources read URI
  prompts list                    prompts get NAME [K=V…]
  complete prompt NAME ARG=VALUE [K=V…]
  complete resource URI ARG=VALUE [K=V…]
  tasks start NAME [K=V…|{JSON}]  call a tool as a task, print the task
  tasks list                      tasks get|result|cancel ID
  request METHOD [{JSON}]         any request (the one-shot call command)
  discover, info                  the server's identity and capabilities
  listen [--tools] [--prompts] [--resources] [--resource URI]… [--count N]
                                  subscribe in the background; events are
                                  printed as JSON lines above the prompt
  unlisten                        end the background subscription
  wait [DURATION]                 wait until the subscription ends (after
                                  --count events, or the server ends it)
  output json|pretty|text         change the output format
  help, exit, quit

A VALUE is typed by the tool's input schema, as --arg of tools call. Results
are printed as by the one-shot commands (--output); errors are printed as
the one JSON error object, and the session goes on. Only the end of the
server's connection ends the session.

On a terminal, the line editor keeps a history (--history FILE, default
snodo/shell_history in $XDG_STATE_HOME or else the user cache directory;
--no-history to keep none) and completes with Tab command names, tool,
prompt and resource names and argument names (from the tool's input schema
and the prompt's arguments); the names are fetched again when the server
says a list changed. Ctrl-C cancels the call in flight on the server, or
clears the line being typed; it never ends the session.

When stdin is not a terminal (a pipe, a file), the commands are read one a
line with no prompt, and the exit code is the one of the last command that
failed (0 when none did); after the commands, a last error object on stderr
sums the failures up. Ctrl-C or SIGTERM end a script as they end a one-shot
command. Empty lines and lines starting with # are skipped. A background
listen ends with the script: give it --count N, then wait, to see its
events.`

// shellCmd is "snodo-run shell".
func (a *app) shellCmd() *cobra.Command {
	var historyFile string
	var noHistory bool
	cmd := &cobra.Command{
		Use:   "shell",
		Short: "An interactive session on one connection: history, Tab completion, background listen",
		Long:  shellLong,
		Example: `  snodo-run shell -- ./demo
  snodo-run --handler elicit.wasm --output text shell -- ./demo --era legacy
  printf 'tools list\ntools call echo text=hi\n' | snodo-run shell -- ./demo`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if noHistory {
				historyFile = ""
			} else if historyFile == "" {
				historyFile = defaultHistoryFile()
			}
			return a.runShell(historyFile)
		},
	}
	cmd.Flags().StringVar(&historyFile, "history", "", "history `FILE` of the line editor (default snodo/shell_history in $XDG_STATE_HOME or the user cache dir)")
	cmd.Flags().BoolVar(&noHistory, "no-history", false, "keep no history file")
	return cmd
}

// defaultHistoryFile is snodo/shell_history in $XDG_STATE_HOME, or else in
// the user cache directory; "" when neither is known.
func defaultHistoryFile() string {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		var err error
		if dir, err = os.UserCacheDir(); err != nil {
			return ""
		}
	}
	return filepath.Join(dir, "snodo", "shell_history")
}

// shell is one session: the runner, the writers, the call in flight, the
// background subscription and the completion names.
type shell struct {
	a           *app
	rt          *runner.Runner
	base        context.Context // the session's; calls derive theirs from it
	interactive bool
	rl          *readline.Instance // nil in script mode
	out, errw   io.Writer          // serialised: events come from another goroutine

	mu     sync.Mutex
	cancel context.CancelFunc // of the call in flight, nil when none
	listen *background        // the listen subscription, nil when none
	last   *background        // the last listen subscription, for wait
	watch  *background        // the subscription that refreshes the names

	names *names

	ran, failed int
	lastErr     error
}

// background is a subscription that runs in its own goroutine.
type background struct {
	cancel context.CancelFunc
	done   chan struct{}
	ended  bool // by --count, the server or an error; set before done closes
}

// errCountReached ends a listen --count N after N events.
var errCountReached = errors.New("count reached")

func (b *background) stop() {
	b.cancel()
	<-b.done
}

// errExit ends the session.
var errExit = errors.New("exit")

func (a *app) runShell(historyFile string) (err error) {
	s := a.settings
	if s.runner.Server.Command == "" && !s.runner.Server.Remote() {
		return errNoServer()
	}
	sh := &shell{a: a, base: a.ctx, names: newNames()}
	sh.interactive = isTerminal(a.stdin) && isTerminal(a.stdout)

	cfg := s.runner
	prev := cfg.OnNotification
	cfg.OnNotification = func(method string, params json.RawMessage) {
		// A legacy server's list changes that no subscription claims.
		sh.names.changed(method)
		if prev != nil {
			prev(method, params)
		}
	}
	cfg, release, err := a.withOAuth(cfg)
	if err != nil {
		return err
	}
	defer release()
	rt, err := runner.Start(a.ctx, cfg)
	if err != nil {
		return a.startError(err)
	}
	sh.rt = rt
	defer func() {
		sh.stopBackground()
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), 4*s.runner.ShutdownGrace+5*time.Second)
		defer cancel()
		_ = rt.Close(closeCtx)
	}()

	if !sh.interactive {
		sh.out, sh.errw = &lockedWriter{w: a.stdout}, &lockedWriter{w: a.stderr}
		return sh.script()
	}
	return sh.terminal(historyFile)
}

// isTerminal reports whether v is a terminal file.
func isTerminal(v any) bool {
	if g, ok := v.(interface{ File() *os.File }); ok {
		v = g.File()
	}
	f, ok := v.(*os.File)
	return ok && f != nil && term.IsTerminal(int(f.Fd()))
}

// ---- script mode

func (sh *shell) script() error {
	sc := bufio.NewScanner(sh.a.stdin)
	sc.Buffer(make([]byte, 64*1024), jsonrpc.DefaultMaxLineBytes)
	for sc.Scan() {
		if sh.base.Err() != nil {
			break
		}
		if err := sh.run(sc.Text()); errors.Is(err, errExit) {
			break
		} else if err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return usageErr("reading commands: %v", err)
	}
	if err := sh.base.Err(); err != nil {
		return err // Ctrl-C or SIGTERM, as for a one-shot command
	}
	return sh.summary()
}

// summary is the error the session ends with: nil when no command failed,
// else one with the exit code of the last failure.
func (sh *shell) summary() error {
	if sh.failed == 0 {
		return nil
	}
	kind := "usage"
	var ce *cliError
	var je *jsonrpc.Error
	switch {
	case errors.As(sh.lastErr, &ce):
		kind = ce.kind
	case errors.As(sh.lastErr, &je):
		kind = string(je.Kind)
	}
	return &cliError{code: exitCode(sh.lastErr), kind: kind,
		err: fmt.Errorf("%d of %d commands failed; the last: %v", sh.failed, sh.ran, sh.lastErr)}
}

// ---- terminal mode

func (sh *shell) terminal(historyFile string) error {
	if historyFile != "" {
		if err := prepareHistory(historyFile, historyLimit, sh.a.stderr); err != nil {
			fmt.Fprintf(sh.a.stderr, "snodo-run: no history: %v\n", err)
			historyFile = ""
		}
	}
	rl, err := readline.NewEx(&readline.Config{
		Prompt:            promptOf(sh.rt.Client().ServerInfo().Name),
		HistoryFile:       historyFile,
		HistoryLimit:      historyLimit,
		HistorySearchFold: true,
		AutoComplete:      sh.names,
		InterruptPrompt:   "^C",
		EOFPrompt:         "exit",
		Stdout:            sh.a.stdout,
		Stderr:            sh.a.stderr,
	})
	if err != nil {
		return usageErr("the line editor: %v", err)
	}
	sh.rl = rl
	defer rl.Close()
	stderrFile, _ := sh.a.stderr.(*os.File)
	if g, ok := sh.a.stderr.(interface{ File() *os.File }); ok {
		stderrFile = g.File()
	}
	sh.out = &lockedWriter{w: rl.Stdout(), crlf: true}
	sh.errw = &lockedWriter{w: rl.Stderr(), crlf: true, file: stderrFile}

	// Ctrl-C cancels the call in flight, not the session: SIGINT no
	// longer ends snodo-run while the shell runs. SIGTERM still does.
	signal.Reset(os.Interrupt)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	stopSigs := make(chan struct{})
	sigsDone := make(chan struct{})
	go func() {
		defer close(sigsDone)
		for {
			select {
			case <-sigs:
				sh.mu.Lock()
				if sh.cancel != nil {
					sh.cancel()
				}
				sh.mu.Unlock()
			case <-sh.base.Done():
				rl.Close() // SIGTERM: stop reading
				return
			case <-stopSigs:
				return
			}
		}
	}()
	defer func() {
		close(stopSigs)
		<-sigsDone
	}()

	c := sh.rt.Client()
	info := c.ServerInfo()
	fmt.Fprintf(sh.out, "%s %s (%s era, protocol %s). Type help for the commands, exit or Ctrl-D to leave.\n",
		sanitize(info.Name), sanitize(info.Version), c.Era(), c.ProtocolVersion())
	sh.names.start(sh)
	sh.startWatch()

	for {
		line, err := rl.Readline()
		if errors.Is(err, readline.ErrInterrupt) {
			continue // Ctrl-C at the prompt clears the line
		}
		if err != nil { // io.EOF: Ctrl-D, or stdin closed
			break
		}
		if err := sh.run(line); errors.Is(err, errExit) {
			break
		} else if err != nil {
			return err
		}
		if sh.base.Err() != nil {
			break
		}
	}
	if err := sh.base.Err(); err != nil {
		return err
	}
	return nil
}

// historyLimit is how many lines the history keeps.
const historyLimit = 1000

// prepareHistory readies the history file, which holds the tool arguments
// typed, for the line editor: its directory is made 0700 when it does not
// exist, the file is created 0600, and an existing file others can read
// is made private (its group and other bits cleared), with a notice on w. The file is cut to its last limit
// lines here, in place: the line editor would otherwise rewrite it
// through a new file that others can read.
func prepareHistory(path string, limit int, w io.Writer) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		if err := f.Chmod(perm &^ 0o077); err != nil {
			return fmt.Errorf("%s can be read by others (mode %04o) and could not be made private: %v", path, perm, err)
		}
		fmt.Fprintf(w, "snodo-run: the history file %s could be read by others (mode %04o); it is now %04o\n", path, perm, perm&^0o077)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	// The line editor counts the lines that end with a newline.
	excess := bytes.Count(b, []byte("\n")) - limit
	if excess <= 0 {
		return nil
	}
	start := 0
	for ; excess > 0; excess-- {
		start += bytes.IndexByte(b[start:], '\n') + 1
	}
	kept := b[start:]
	if _, err := f.WriteAt(kept, 0); err != nil {
		return err
	}
	return f.Truncate(int64(len(kept)))
}

// promptOf is the prompt: the server's name.
func promptOf(name string) string {
	name = sanitize(name)
	if name == "" {
		name = "snodo"
	}
	return name + "> "
}

// sanitize keeps what a server names itself printable on a terminal, on
// one line.
func sanitize(s string) string { return safetext.Escape(s, false) }

// lockedWriter serialises writes, so that an event never lands inside a
// result; on a terminal in raw mode, it ends lines with CR LF.
type lockedWriter struct {
	mu   sync.Mutex
	w    io.Writer
	crlf bool
	file *os.File // for the progress bar's terminal check
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.crlf {
		q := bytes.ReplaceAll(bytes.ReplaceAll(p, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
		if _, err := l.w.Write(q); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return l.w.Write(p)
}

// File is the terminal the progress bar draws on, or nil.
func (l *lockedWriter) File() *os.File { return l.file }

// ---- one command

// run runs one line and reports its error; it returns errExit to end the
// session, or an error that ends it (the server's connection is gone).
func (sh *shell) run(line string) error {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return nil
	}
	ctx, cancel := context.WithCancel(sh.base)
	sh.mu.Lock()
	sh.cancel = cancel
	sh.mu.Unlock()
	var buf bytes.Buffer
	err := sh.exec(ctx, line, &buf)
	sh.mu.Lock()
	sh.cancel = nil
	sh.mu.Unlock()
	interrupted := ctx.Err() != nil && sh.base.Err() == nil
	cancel()
	if buf.Len() > 0 {
		_, _ = sh.out.Write(buf.Bytes())
	}
	if errors.Is(err, errExit) {
		return err
	}
	sh.ran++
	if err == nil {
		return nil
	}
	var ce *cliError
	if interrupted && !errors.As(err, &ce) {
		err = &cliError{code: exitInterrupt, kind: "interrupted", err: fmt.Errorf("interrupted: the request in flight was cancelled on the server (%v)", err)}
	}
	if sh.base.Err() != nil {
		return err // the session ends: reported once by the caller
	}
	err = sh.a.blameHandler(sh.rt, err)
	sh.failed++
	sh.lastErr = err
	reportError(sh.errw, err)
	if connectionGone(err) {
		return &cliError{code: exitConnection, kind: "transport", err: fmt.Errorf("the server's connection is gone: %v", err)}
	}
	return nil
}

// connectionGone reports whether err says the server's connection ended.
func connectionGone(err error) bool {
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Kind != jsonrpc.KindTransport || je.Code != jsonrpc.CodeConnectionClosed {
		return false
	}
	// A full write queue, or a closed client, leave the server alive.
	return !errors.Is(err, stdio.ErrQueueFull) && !errors.Is(err, snodo.ErrClientClosed)
}

// view is the app that prints one command's output to w, in the session's
// output format.
func (sh *shell) view(w io.Writer) *app {
	v := *sh.a
	v.stdout = w
	v.stderr = sh.errw
	v.progress = nil
	return &v
}

// exec runs one command, printing its output to w.
func (sh *shell) exec(ctx context.Context, line string, w io.Writer) error {
	verb, rest := cutWord(line)
	v := sh.view(w)
	switch verb {
	case "help", "?":
		return sh.help(w, rest)
	case "exit", "quit":
		return errExit
	case "discover", "info":
		return sh.discover(ctx, v)
	case "tools":
		sub, rest := cutWord(rest)
		switch sub {
		case "list":
			return sh.toolsList(ctx, v, rest)
		case "call":
			return sh.toolsCall(ctx, v, rest)
		}
		return usageErr("tools wants list or call, not %q (type help)", sub)
	case "call":
		return sh.toolsCall(ctx, v, rest)
	case "resources":
		sub, rest := cutWord(rest)
		switch sub {
		case "list":
			return sh.resourcesList(ctx, v, rest)
		case "templates":
			return sh.templatesList(ctx, v, rest)
		case "read":
			return sh.resourcesRead(ctx, v, rest)
		}
		return usageErr("resources wants list, templates or read, not %q (type help)", sub)
	case "prompts":
		sub, rest := cutWord(rest)
		switch sub {
		case "list":
			return sh.promptsList(ctx, v, rest)
		case "get":
			return sh.promptsGet(ctx, v, rest)
		}
		return usageErr("prompts wants list or get, not %q (type help)", sub)
	case "complete":
		return sh.complete(ctx, v, rest)
	case "tasks":
		return sh.tasks(ctx, v, rest)
	case "request":
		return sh.request(ctx, v, rest)
	case "listen":
		return sh.startListen(rest)
	case "unlisten":
		return sh.unlisten(rest)
	case "wait":
		return sh.wait(ctx, rest)
	case "output":
		return sh.output(w, rest)
	}
	return usageErr("unknown command %q (type help)", verb)
}

// cutWord splits the first word off s.
func cutWord(s string) (word, rest string) {
	s = strings.TrimSpace(s)
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i+1:])
}

// words splits s into words as a POSIX shell does: blanks separate words;
// single quotes keep everything; double quotes keep everything but \" and
// \\; a backslash outside quotes escapes the next character.
func words(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, usageErr("unterminated ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, usageErr("unterminated \" in %q", s)
			}
		case c == '\\' && i+1 < len(s):
			inWord = true
			i++
			cur.WriteByte(s[i])
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// pairs checks that every word is KEY=VALUE.
func pairs(ws []string) error {
	for _, kv := range ws {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return usageErr("argument %q is not KEY=VALUE", kv)
		}
	}
	return nil
}

func noArgs(cmd, rest string) error {
	if rest != "" {
		return usageErr("%s takes no arguments, not %q", cmd, rest)
	}
	return nil
}

// ---- the commands

func (sh *shell) discover(ctx context.Context, v *app) error {
	return v.printDiscover(ctx, sh.rt)
}

func (sh *shell) toolsList(ctx context.Context, v *app, rest string) error {
	if err := noArgs("tools list", rest); err != nil {
		return err
	}
	tools, err := v.allowedTools(ctx, sh.rt)
	if err != nil {
		return err
	}
	sh.names.setTools(tools)
	return v.print(toolList{Tools: tools})
}

func (sh *shell) toolsCall(ctx context.Context, v *app, rest string) error {
	name, rest := cutWord(rest)
	arguments, err := sh.toolCallArguments(ctx, v, name, rest)
	if err != nil {
		return err
	}
	return v.callTool(ctx, sh.rt, name, arguments)
}

// toolCallArguments checks a tool call's NAME and reads its arguments:
// K=V words typed by the tool's input schema, or a JSON object.
func (sh *shell) toolCallArguments(ctx context.Context, v *app, name, rest string) (map[string]any, error) {
	if name == "" {
		return nil, usageErr("tools call wants a tool NAME, then K=V arguments or a JSON object")
	}
	if err := v.guardCall(name); err != nil {
		return nil, err
	}
	arguments := map[string]any{}
	var kv []string
	if strings.HasPrefix(rest, "{") {
		var err error
		if arguments, err = objectArg(rest, "arguments"); err != nil {
			return nil, err
		}
	} else {
		var err error
		if kv, err = words(rest); err != nil {
			return nil, err
		}
		if err := pairs(kv); err != nil {
			return nil, err
		}
	}
	if err := v.toolArguments(ctx, sh.rt, name, arguments, kv, false); err != nil {
		return nil, err
	}
	return arguments, nil
}

func (sh *shell) resourcesList(ctx context.Context, v *app, rest string) error {
	if err := noArgs("resources list", rest); err != nil {
		return err
	}
	return v.printResources(ctx, sh.rt)
}

func (sh *shell) templatesList(ctx context.Context, v *app, rest string) error {
	if err := noArgs("resources templates", rest); err != nil {
		return err
	}
	return v.printTemplates(ctx, sh.rt)
}

func (sh *shell) resourcesRead(ctx context.Context, v *app, rest string) error {
	ws, err := words(rest)
	if err != nil {
		return err
	}
	if len(ws) != 1 {
		return usageErr("resources read wants one URI")
	}
	return v.readResource(ctx, sh.rt, ws[0])
}

func (sh *shell) promptsList(ctx context.Context, v *app, rest string) error {
	if err := noArgs("prompts list", rest); err != nil {
		return err
	}
	return v.printPrompts(ctx, sh.rt)
}

func (sh *shell) promptsGet(ctx context.Context, v *app, rest string) error {
	ws, err := words(rest)
	if err != nil {
		return err
	}
	if len(ws) == 0 {
		return usageErr("prompts get wants a prompt NAME, then K=V arguments")
	}
	if err := pairs(ws[1:]); err != nil {
		return err
	}
	arguments := map[string]string{}
	for _, kv := range ws[1:] {
		k, val, _ := strings.Cut(kv, "=")
		arguments[k] = val
	}
	return v.getPrompt(ctx, sh.rt, ws[0], arguments)
}

func (sh *shell) complete(ctx context.Context, v *app, rest string) error {
	ws, err := words(rest)
	if err != nil {
		return err
	}
	const use = "complete wants prompt NAME or resource URI, then ARG=VALUE (the argument and what is typed so far), then K=V arguments already resolved"
	if len(ws) < 3 {
		return usageErr(use)
	}
	var p snodo.CompleteParams
	switch ws[0] {
	case "prompt":
		p.Ref = snodo.CompletionRef{Type: "ref/prompt", Name: ws[1]}
	case "resource":
		p.Ref = snodo.CompletionRef{Type: "ref/resource", URI: ws[1]}
	default:
		return usageErr(use)
	}
	if err := pairs(ws[2:]); err != nil {
		return err
	}
	p.Argument.Name, p.Argument.Value, _ = strings.Cut(ws[2], "=")
	if len(ws) > 3 {
		p.Context = &struct {
			Arguments map[string]string `json:"arguments,omitempty"`
		}{Arguments: map[string]string{}}
		for _, kv := range ws[3:] {
			k, val, _ := strings.Cut(kv, "=")
			p.Context.Arguments[k] = val
		}
	}
	return v.complete(ctx, sh.rt, p)
}

func (sh *shell) request(ctx context.Context, v *app, rest string) error {
	method, rest := cutWord(rest)
	if method == "" {
		return usageErr("request wants a METHOD, then its params as a JSON object")
	}
	p, err := objectArg(rest, "params")
	if err != nil {
		return err
	}
	if err := v.guardRawCall(method, p); err != nil {
		return err
	}
	return v.rawRequest(ctx, sh.rt, method, p)
}

func (sh *shell) output(w io.Writer, rest string) error {
	switch rest {
	case "":
		fmt.Fprintln(w, sh.a.settings.output)
		return nil
	case "json", "pretty", "text":
		sh.a.settings.output = rest
		return nil
	}
	return usageErr("output wants json, pretty or text, not %q", rest)
}

// ---- listen

// startListen opens the background subscription; its events are printed
// as JSON lines, as by the one-shot listen.
func (sh *shell) startListen(rest string) error {
	ws, err := words(rest)
	if err != nil {
		return err
	}
	fs := pflag.NewFlagSet("listen", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	tools := fs.Bool("tools", false, "")
	prompts := fs.Bool("prompts", false, "")
	resources := fs.Bool("resources", false, "")
	uris := fs.StringArray("resource", nil, "")
	count := fs.Int("count", 0, "")
	if err := fs.Parse(ws); err != nil {
		return usageErr("listen: %v", err)
	}
	if fs.NArg() > 0 {
		return usageErr("listen takes flags only (--tools, --prompts, --resources, --resource URI, --count N), not %q", fs.Arg(0))
	}
	filter := snodo.SubscriptionFilter{ToolsListChanged: *tools, PromptsListChanged: *prompts,
		ResourcesListChanged: *resources, ResourceSubscriptions: *uris}
	if !*tools && !*prompts && !*resources && len(*uris) == 0 {
		filter.ToolsListChanged, filter.PromptsListChanged, filter.ResourcesListChanged = true, true, true
	}
	ctx, cancel := context.WithCancel(sh.base)
	b := &background{cancel: cancel, done: make(chan struct{})}
	sh.mu.Lock()
	busy := sh.listen != nil
	if !busy {
		sh.listen, sh.last = b, b
	}
	sh.mu.Unlock()
	if busy {
		cancel()
		return usageErr("already listening: unlisten first")
	}
	accepted := make(chan snodo.SubscriptionFilter, 1)
	var listenErr error
	seen := 0
	go func() {
		defer close(b.done)
		wasAccepted := false
		listenErr = sh.rt.Listen(ctx, filter, func(got snodo.SubscriptionFilter) { wasAccepted = true; accepted <- got },
			func(ev snodo.Event) error {
				sh.names.changed(ev.Method)
				line, err := marshal(listenEvent{Method: ev.Method, Params: ev.Params})
				if err != nil {
					return err
				}
				if _, err = sh.out.Write(append(line, '\n')); err != nil {
					return err
				}
				if seen++; *count > 0 && seen >= *count {
					return errCountReached
				}
				return nil
			})
		if errors.Is(listenErr, errCountReached) {
			listenErr = nil
		}
		b.ended = ctx.Err() == nil
		sh.mu.Lock()
		if sh.listen == b {
			sh.listen = nil
		}
		sh.mu.Unlock()
		if !b.ended || !wasAccepted {
			return // unlisten, the session's end, or a failure to subscribe (the command's error)
		}
		if listenErr != nil {
			reportError(sh.errw, listenErr)
		} else if sh.interactive {
			fmt.Fprintln(sh.errw, "listen: the subscription ended")
		}
	}()
	select {
	case got := <-accepted:
		if sh.interactive {
			fmt.Fprintf(sh.errw, "listening for %s; unlisten to stop\n", describeFilter(got))
		}
		return nil
	case <-b.done:
		if listenErr != nil {
			return listenErr
		}
		return errors.New("the subscription ended at once")
	}
}

func describeFilter(f snodo.SubscriptionFilter) string {
	var what []string
	if f.ToolsListChanged {
		what = append(what, "tool list changes")
	}
	if f.PromptsListChanged {
		what = append(what, "prompt list changes")
	}
	if f.ResourcesListChanged {
		what = append(what, "resource list changes")
	}
	for _, u := range f.ResourceSubscriptions {
		what = append(what, "updates of "+sanitize(u))
	}
	if len(what) == 0 {
		return "nothing the server offers"
	}
	return strings.Join(what, ", ")
}

func (sh *shell) unlisten(rest string) error {
	if err := noArgs("unlisten", rest); err != nil {
		return err
	}
	sh.mu.Lock()
	b := sh.listen
	sh.listen = nil
	sh.mu.Unlock()
	if b == nil {
		return usageErr("not listening")
	}
	b.stop()
	return nil
}

// wait waits until the last listen subscription ends (listen --count N,
// or the server ends it), at most DURATION (default: the request timeout).
func (sh *shell) wait(ctx context.Context, rest string) error {
	d := sh.a.settings.runner.Timeout
	if rest != "" {
		var err error
		if d, err = time.ParseDuration(rest); err != nil || d <= 0 {
			return usageErr("wait wants a positive Go duration (5s, 1m), not %q", rest)
		}
	}
	sh.mu.Lock()
	b := sh.last
	sh.mu.Unlock()
	if b == nil {
		return usageErr("nothing to wait for: listen first")
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return &cliError{code: exitTimeout, kind: "timeout", err: fmt.Errorf("the subscription did not end within %v", d)}
	}
}

// startWatch opens the subscription that keeps the completion names up to
// date, when the server offers list changes and no subscriber module
// would see its events.
func (sh *shell) startWatch() {
	if sh.rt.HasSubscriber() {
		return
	}
	caps := sh.rt.Client().Capabilities()
	filter := snodo.SubscriptionFilter{
		ToolsListChanged:     caps.Tools != nil,
		PromptsListChanged:   caps.Prompts != nil,
		ResourcesListChanged: caps.Resources != nil,
	}
	if !filter.ToolsListChanged && !filter.PromptsListChanged && !filter.ResourcesListChanged {
		return
	}
	ctx, cancel := context.WithCancel(sh.base)
	b := &background{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		err := sh.rt.Listen(ctx, filter, nil, func(ev snodo.Event) error {
			sh.names.changed(ev.Method)
			return nil
		})
		if err != nil && ctx.Err() == nil {
			sh.a.logger.Debug("no list changes for completion", "error", err)
		}
	}()
	sh.watch = b
}

// stopBackground ends the subscriptions and the name refresher.
func (sh *shell) stopBackground() {
	sh.mu.Lock()
	l := sh.listen
	sh.listen = nil
	sh.mu.Unlock()
	if l != nil {
		l.stop()
	}
	if sh.watch != nil {
		sh.watch.stop()
	}
	sh.names.stop()
}

// ---- help

var shellCommands = []string{"help", "exit", "quit", "discover", "info", "tools", "call", "resources",
	"prompts", "complete", "tasks", "request", "listen", "unlisten", "wait", "output"}

func (sh *shell) help(w io.Writer, rest string) error {
	_, body, _ := strings.Cut(shellLong, "\n\n")
	body, _, _ = strings.Cut(body, "\n\nA VALUE")
	fmt.Fprintln(w, "Commands:")
	fmt.Fprintln(w, body)
	fmt.Fprintln(w, "\nA VALUE is typed by the tool's input schema; quote words with ' or \". Tab completes.")
	return nil
}
