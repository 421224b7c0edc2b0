package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/clienthook"
	"github.com/snodo/snodo/internal/safetext"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/runtime"
)

// version is set at build time with -ldflags "-X main.version=…"; empty,
// it is the module's version (see version_info.go).
var version = ""

// app is one invocation: its streams, flags and, once a command runs, its
// resolved settings.
type app struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer

	root       *cobra.Command
	configFlag string
	serverArgv []string // after --
	settings   *settings
	logger     *slog.Logger
	progress   *progressView
	result     *resultFile // --output-file
	saveDir    string      // --save
}

// stdinReader is what jsonArg reads for "@-".
var stdinReader io.Reader = os.Stdin

func readAllStdin() ([]byte, error) { return io.ReadAll(stdinReader) }

// run runs snodo-run with args and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	stdinReader = stdin
	a := &app{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	// Everything after the first "--" is the server command.
	for i, arg := range args {
		if arg == "--" {
			a.serverArgv = args[i+1:]
			args = args[:i]
			break
		}
	}
	a.root = a.newRoot()
	a.root.SetArgs(args)
	a.root.SetIn(stdin)
	a.root.SetOut(stdout)
	a.root.SetErr(stderr)
	err := a.root.ExecuteContext(ctx)
	err = a.closeResultFile(err)
	if err == nil {
		return exitOK
	}
	var ce *cliError
	if ctx.Err() != nil && !errors.As(err, &ce) {
		// Ctrl-C: the context of the call was cancelled, and with it the
		// request on the server.
		code := exitInterrupt
		var sc signalCause
		if errors.As(context.Cause(ctx), &sc) {
			code = signalExitCode(sc.sig)
		}
		err = &cliError{code: code, kind: "interrupted", err: interruptedError(ctx)}
	}
	if !errors.As(err, &ce) && !isRuntimeError(err) {
		// cobra's own errors: unknown command or flag, wrong arguments.
		err = &cliError{code: exitUsage, kind: "usage", err: fmt.Errorf("%v (see %s --help)", err, commandPath(a.root, args))}
	}
	printURLElicitationsRequired(stderr, err)
	return reportError(stderr, err)
}

// commandPath is the command line's command, for "see … --help".
func commandPath(root *cobra.Command, args []string) string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return root.Name()
	}
	return cmd.CommandPath()
}

const rootLong = `snodo-run starts an MCP server, answers what it asks of the client
(elicitation, sampling, roots) with sandboxed WebAssembly handlers, and does
what you ask: list and call tools, read resources, get prompts, complete
arguments, listen for changes, or send any request. It speaks both protocol
eras: the initialize handshake (2024-11-05 … 2025-11-25) and 2026-07-28.

The server is the command after --, or a remote server's URL (--url, with
--header for credentials; Streamable HTTP), or --server NAME from the config
file's mcpServers map (a command, or a url), or server.command or server.url
in the config file.

Settings come from flags, then SNODO_* environment variables (SNODO_TIMEOUT,
SNODO_PROTOCOL, SNODO_SERVER_COMMAND, …), then the config file (--config or
SNODO_CONFIG, else snodo.yaml/.toml/.json in the user's config directory
under snodo/; one in the working directory is read only when named, as in
--config ./snodo.yaml), then defaults.

Results go to stdout as JSON (--output json or pretty) or as text for people
(--output text). Errors go to stderr as one JSON object:
  {"error":{"kind":"…","code":…,"message":"…","data":…},"exitCode":N}

` + exitCodesHelp

func (a *app) newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "snodo-run [flags] COMMAND [args] (-- SERVER [SERVER ARGS…] | --url URL)",
		Short: "Run an MCP server with sandboxed Wasm handlers and talk to it",
		Long:  rootLong,
		Example: `  # Call a tool; a Wasm module answers the server's elicitation
  snodo-run --handler elicit.wasm tools call register -- ./demo --era modern

  # List the tools of a remote server
  snodo-run --url https://mcp.example.com/mcp --header 'Authorization: Bearer TOKEN' tools list

  # List the tools of a server from a desktop host's mcpServers config
  snodo-run --config claude_desktop_config.json --server everything tools list --output text`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		Version:           version,
		PersistentPreRunE: a.prepare,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
	}
	root.SetVersionTemplate("snodo-run {{.Version}}\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &cliError{code: exitUsage, kind: "usage", err: flagError(cmd, err)}
	})
	f := root.PersistentFlags()
	f.StringVar(&a.configFlag, "config", "", "config file (YAML, TOML or JSON); default snodo.{yaml,toml,json} in the user config dir (one in . is read only when named: --config ./snodo.yaml)")
	f.String("server", "", "start the server NAME of the config file's mcpServers map")
	f.String("url", "", "talk to the remote server at `URL` (its MCP endpoint, http or https) over Streamable HTTP instead of starting one")
	f.String("transport", "auto", "transport to the --url server: auto (Streamable HTTP, falling back to the older HTTP+SSE transport of 2024-11-05 when the server refuses initialize with 400, 404 or 405), http (Streamable HTTP only) or sse (HTTP+SSE only: URL is its SSE endpoint)")
	f.StringArray("header", nil, "`'Name: value'` HTTP header sent to the --url server with every request (such as Authorization); repeatable")
	f.StringArray("handler", nil, "`[METHOD=]FILE.wasm` answers METHOD (comma-separated list; default: what the module declares); repeatable")
	f.StringArray("handler-config", nil, "`[MODULE=]JSON|@FILE` configuration of the handler modules (MODULE: a module's file name without .wasm); repeatable")
	f.StringArray("interceptor", nil, "`FILE.wasm` checks, rewrites or denies each request sent to the server and checks, replaces or denies its answer (Wasm ABI version 2); requests pass them in the order given, answers in reverse; configured like --handler (--handler-config, modules.NAME); repeatable")
	f.String("progress", "", "`FILE.wasm` consumes progress notifications (takes precedence over the progress display)")
	f.String("subscriber", "", "`FILE.wasm` consumes the events of listen")
	f.Int("max-server-requests", runtime.DefaultMaxServerRequests, "most handler calls at once (legacy server requests and input requests together)")
	f.Int("max-line-bytes", jsonrpc.DefaultMaxLineBytes, "longest line accepted from the server")
	f.Duration("timeout", 60*time.Second, "request timeout, a Go duration (30s, 2m)")
	f.Duration("task-timeout", defaultTaskTimeout, "bound on waiting for a task (tools call, tasks result), a Go duration; 0: none")
	f.Duration("connect-timeout", runtime.DefaultConnectTimeout, "bound on connecting (server/discover probe, initialize handshake) and on shutting the server down")
	f.Duration("keepalive", 0, "ping the server every `D` (a Go duration, at least 100ms) and end the connection when a ping gets no answer within D; 0: no pings")
	f.Duration("auth-timeout", defaultAuthTimeout, "bound on an OAuth authorization of a --url server, the login in the browser included (it happens before connecting, outside --connect-timeout)")
	f.String("protocol", "auto", "protocol: auto, legacy, modern, or a version such as 2025-06-18")
	f.StringArray("env", nil, "`K=V` set in the server's environment; repeatable")
	f.String("cd", "", "working directory of the server")
	f.StringP("output", "o", "json", "output format: json, pretty or text")
	f.String("output-file", "", "write the result to `FILE` (replaced whole, once the command has printed) instead of stdout")
	f.BoolP("verbose", "v", false, "structured logs (log/slog) and progress lines on stderr")
	f.Bool("server-stderr", false, "show the server's stderr, control and invisible characters escaped (hidden by default; its tail is shown when it fails)")
	f.Duration("shutdown-grace", runtime.DefaultShutdownGrace, "how long the server has to exit after stdin closes, and again after SIGTERM")
	f.String("cache-dir", "", "compilation cache of Wasm modules; default the user cache dir")
	f.StringArray("allow-tool", nil, "guard: only tools whose name matches this `PATTERN` (shell glob) may be listed or called; repeatable")
	f.StringArray("deny-tool", nil, "guard: tools whose name matches this `PATTERN` may not be listed or called; repeatable")
	f.Bool("trace", false, "start a trace: every request carries a new W3C traceparent in _meta; the trace ID is printed on stderr")
	f.String("url-elicitation", urlElicitAuto, "URL-mode elicitation: on shows the server's URL and asks on stdin whether you opened it; auto: on when stdin is a terminal; off")
	f.Bool("mcp-apps", false, "declare the MCP Apps extension (io.modelcontextprotocol/ui, HTML apps): servers may then list tools with a ui:// app, which tools list shows and resources read --save writes to a file")
	f.Bool("allow-trusted", false, "let modules marked trusted in the config file run without interruption (a trusted module that loops hangs snodo-run)")
	addPIDNamespaceFlag(f)
	_ = root.RegisterFlagCompletionFunc("transport", cobra.FixedCompletions([]string{"auto", "http", "sse"}, cobra.ShellCompDirectiveNoFileComp))
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json", "pretty", "text"}, cobra.ShellCompDirectiveNoFileComp))
	_ = root.RegisterFlagCompletionFunc("url-elicitation", cobra.FixedCompletions([]string{urlElicitAuto, urlElicitOn, urlElicitOff}, cobra.ShellCompDirectiveNoFileComp))
	_ = root.RegisterFlagCompletionFunc("protocol", cobra.FixedCompletions([]string{"auto", "legacy", "modern", "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}, cobra.ShellCompDirectiveNoFileComp))
	for _, name := range []string{"handler", "progress", "subscriber", "interceptor"} {
		_ = root.MarkPersistentFlagFilename(name, "wasm")
	}
	_ = root.MarkPersistentFlagFilename("config", "yaml", "yml", "toml", "json")

	root.AddCommand(
		a.discoverCmd(), a.toolsCmd(), a.resourcesCmd(), a.promptsCmd(), a.completeCmd(),
		a.listenCmd(), a.callCmd(), a.handlersCmd(), a.versionCmd(),
	)
	root.AddCommand(a.tasksCmd())
	root.AddCommand(a.skillsCmd())
	root.AddCommand(a.proxyCmd())
	root.AddCommand(a.gatewayCmd())
	root.AddCommand(a.shellCmd())
	strictCommands(root)
	return root
}

// prepare resolves the settings before any command runs.
func (a *app) prepare(cmd *cobra.Command, args []string) error {
	if err := a.openOutputs(cmd); err != nil {
		return err
	}
	if isGatewayCmd(cmd) {
		// The gateway reads its own config file (gateway --config), not
		// snodo-run's settings.
		level := slog.LevelInfo
		if v, _ := cmd.Flags().GetBool("verbose"); v {
			level = slog.LevelDebug
		}
		a.logger = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
		return nil
	}
	if cmd.Name() == "version" || cmd.Name() == "help" || strings.HasPrefix(cmd.Name(), "__complete") ||
		(cmd.Parent() != nil && cmd.Parent().Name() == "completion") || isGroup(cmd) {
		return nil
	}
	v, err := newViper(cmd.Flags())
	if err != nil {
		return err
	}
	file, fc, err := readConfigFile(v, a.configFlag)
	if err != nil {
		return err
	}
	if a.configFlag == "" && os.Getenv("SNODO_CONFIG") == "" {
		if name := workdirConfig(file); name != "" {
			read := "no config file is read"
			if file != "" {
				read = "the config file read is " + safetext.Escape(file, false)
			}
			fmt.Fprintf(a.stderr, "snodo-run: ./%s was not read: a config file in the working directory is read only when named, with --config ./%s or SNODO_CONFIG=./%s (it may have come with what is in the directory); %s\n", name, name, name, read)
		}
	}
	tree, err := checkConfig(file, os.Environ())
	if err != nil {
		return err
	}
	// Only the command line can allow trusted modules: not the config file
	// that asks for them, nor the environment.
	allowTrusted, _ := cmd.Flags().GetBool("allow-trusted")
	s, err := resolve(v, fc, file, a.serverArgv, allowTrusted)
	if err != nil {
		return err
	}
	if err := tree.checkModules(&s.runner, moduleArgs(cmd, args)...); err != nil {
		return err
	}
	if err := checkFlags(cmd); err != nil {
		return err
	}
	if err := checkServerDir(cmd, v, s, a.serverArgv); err != nil {
		return err
	}
	a.settings = s
	stopBound.Store(int64(a.closeTimeout() + stopMargin))
	level := slog.LevelWarn
	if s.verbose {
		level = slog.LevelDebug
	}
	a.logger = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
	s.runner.Logger = a.logger
	s.runner.ClientInfo = clientInfo()
	if v.GetBool(keyServerStderr) {
		s.runner.ServerStderr = &streamSafeWriter{w: a.stderr}
	}
	if file != "" {
		a.logger.Debug("config file", "path", file)
	}
	if s.verbose {
		clienthook.SetDeprecatedUse(&s.runner.ClientOptions, deprecationNotes(a.logger))
	}
	if s.trace && (cmd.Parent() == nil || cmd.Parent().Name() != "handlers") {
		// handlers check and test start no server: nothing to trace.
		if a.ctx, err = startTrace(a.ctx, a.stderr); err != nil {
			return err
		}
	}
	if s.mcpApps {
		addExtension(&s.runner.ClientOptions, snodo.UIExtensionID, json.RawMessage(`{"mimeTypes":["`+snodo.UIMIMEType+`"]}`))
	}
	// The shell reads its commands from stdin, and the proxy forwards URL
	// elicitations to its host: neither asks here.
	if name := cmd.Name(); name != "shell" && name != "proxy" &&
		(s.urlElicit == urlElicitOn || (s.urlElicit == urlElicitAuto && isTerminal(a.stdin))) {
		p := newURLPrompter(a.stdin, a.stderr)
		s.runner.ClientOptions.URLElicitation = p
		s.runner.ClientOptions.OnElicitationComplete = p.completed
	}
	return nil
}

// isRuntimeError reports whether err came from the runtime or the client
// rather than from cobra's parsing.
func isRuntimeError(err error) bool {
	var le *runtime.LoadError
	return errors.As(err, &le) || errors.Is(err, context.Canceled) || isJSONRPC(err)
}

// deprecationNotes returns the hook that names, under --verbose, each
// feature the 2026-07-28 revision deprecates (roots, sampling, logging)
// the first time the connection uses it: one line per feature per run.
// They remain fully supported.
func deprecationNotes(l *slog.Logger) func(feature, method string) {
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	return func(feature, method string) {
		mu.Lock()
		first := !seen[feature]
		seen[feature] = true
		mu.Unlock()
		if first {
			who := "the server" // sampling/createMessage, roots/list, notifications/message
			if method == "logging/setLevel" {
				who = "the connection" // sent by the client
			}
			l.Info(fmt.Sprintf("%s used %s (%s), deprecated in MCP 2026-07-28; still fully supported", who, feature, method))
		}
	}
}

// addExtension declares the client extension name with settings.
func addExtension(o *snodo.Options, name string, settings json.RawMessage) {
	if o.Extensions == nil {
		o.Extensions = map[string]json.RawMessage{}
	}
	o.Extensions[name] = settings
}
