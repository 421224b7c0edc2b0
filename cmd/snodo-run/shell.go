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
	"sync"
	"time"

	"github.com/chzyer/readline"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/snodo/snodo/internal/safetext"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/runtime"
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
  skills list                     skills get NAME|PATH|URI
  skills read NAME|PATH|URI [FILE]
                                  a file of a skill, verified against its entry
  skills dir NAME|PATH|URI [DIR]  a directory of a skill (directoryRead)
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

// shell is one session: the runner, the writers, the call in flight, the
// background subscription and the completion names.
type shell struct {
	a           *app
	rt          *runtime.Runner
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
	if cfg.OnIntercept == nil && len(cfg.Interceptors) > 0 {
		cfg.OnIntercept = a.logIntercept
	}
	rt, err := runtime.Start(a.ctx, cfg)
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

// fallbackWidth is the width the line editor assumes on a terminal that
// reports none.
const fallbackWidth = 80

// screenWidth is the terminal's width for the line editor, or
// fallbackWidth when it reports no columns (a serial console, some CI
// terminals): with 0 the editor would not complete on Tab and would
// redraw the prompt at every key.
func screenWidth() int {
	if w := readline.GetScreenWidth(); w > 0 {
		return w
	}
	return fallbackWidth
}

func (sh *shell) terminal(historyFile string) error {
	if historyFile != "" {
		if err := prepareHistory(historyFile, historyLimit, sh.a.stderr); err != nil {
			fmt.Fprintf(sh.a.stderr, "snodo-run: no history: %v\n", err)
			historyFile = ""
		}
	}
	rl, err := readline.NewEx(&readline.Config{
		Prompt:            promptOf(sh.rt.Client().Server().Implementation.Name),
		HistoryFile:       historyFile,
		HistoryLimit:      historyLimit,
		HistorySearchFold: true,
		AutoComplete:      sh.names,
		FuncGetWidth:      screenWidth,
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
	srv := c.Server()
	fmt.Fprintf(sh.out, "%s %s (%s era, protocol %s). Type help for the commands, exit or Ctrl-D to leave.\n",
		sanitize(srv.Implementation.Name), sanitize(srv.Implementation.Version), srv.Era, srv.ProtocolVersion)
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
