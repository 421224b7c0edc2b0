package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/runtime"
)

// withRunner starts the runner, runs fn, and stops it, whatever
// happens: the server is shut down in order (stdin closed, SIGTERM, SIGKILL
// to its process group) even when fn fails or Ctrl-C ends it.
func (a *app) withRunner(fn func(ctx context.Context, rt *runtime.Runner) error) error {
	s := a.settings
	if s.runner.Server.Command == "" && !s.runner.Server.Remote() {
		return errNoServer()
	}
	cfg, release, err := a.withOAuth(s.runner)
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
	err = fn(a.ctx, rt)
	if err != nil {
		err = a.blameHandler(rt, err)
		if srv := s.runner.Server; srv.Remote() {
			// A session that expired, a token revoked: as at connect.
			if hint := remoteHint(err, srv.URL); hint != nil {
				err = hint
			}
		}
	}
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), a.closeTimeout())
	defer cancel()
	_ = rt.Close(closeCtx)
	return err
}

// logIntercept logs an interceptor's decision (--verbose shows it).
func (a *app) logIntercept(e intercept.Event) {
	phase := "request"
	if e.Results {
		phase = "result"
	}
	args := []any{"module", e.Interceptor, "method", e.Method, "phase", phase, "decision", e.Action.String()}
	if e.Err != nil {
		args = append(args[:len(args)-1], "failed", "error", e.Err.Error())
	} else if e.Message != "" {
		args = append(args, "reason", e.Message)
	}
	a.logger.Info("interceptor", args...)
}

// startError classifies a failure of runtime.Start.
func (a *app) startError(err error) error {
	var le *runtime.LoadError
	switch {
	case errors.As(err, &le):
		return moduleErr(err)
	case errors.Is(err, context.Canceled):
		return err
	case isJSONRPC(err):
		return a.connectError(err)
	}
	return configErr("%v", err)
}

// blameHandler turns the failure of a call after a handler failed into a
// handler failure (exit 5): a legacy server answers a handler's -32603 with
// an error of its own, which would otherwise read as the server's fault.
func (a *app) blameHandler(rt *runtime.Runner, err error) error {
	if errors.Is(err, snodo.ErrNoHandler) {
		// A 2026-07-28 server asked for input nobody was configured to give.
		hint := "give one with --handler FILE.wasm"
		if strings.Contains(err.Error(), `"elicitation.url"`) {
			hint = "answer it in the terminal with --url-elicitation on"
		}
		return &cliError{code: exitUsage, kind: "config", err: fmt.Errorf("%v (%s)", err, hint)}
	}
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Kind != jsonrpc.KindServer {
		return err
	}
	hf := rt.HandlerFailure()
	if hf == nil {
		return err
	}
	return &cliError{code: exitHandler, kind: "handler", err: fmt.Errorf("%v (after a handler failed: %v)", err, hf)}
}

func isJSONRPC(err error) bool {
	var je *jsonrpc.Error
	return errors.As(err, &je)
}

// ---- discover

func (a *app) discoverCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "discover",
		Short: "Show the server's identity, protocol version, capabilities and instructions",
		Long: `discover connects and prints what the server says about itself: its name and
version, the protocol version and era in use, its capabilities and
instructions, and (2026-07-28) the versions it supports.`,
		Example: `  snodo-run discover -- ./demo --era modern
  snodo-run --protocol legacy discover --output text -- npx -y @modelcontextprotocol/server-everything`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withRunner(a.printDiscover)
		},
	}
}

type discoverOutput struct {
	ServerInfo        snodo.Implementation     `json:"serverInfo"`
	ProtocolVersion   string                   `json:"protocolVersion"`
	Era               string                   `json:"era"`
	SupportedVersions []string                 `json:"supportedVersions,omitempty"`
	Capabilities      snodo.ServerCapabilities `json:"capabilities"`
	Instructions      string                   `json:"instructions,omitempty"`
}

// ---- tools

func (a *app) toolsCmd() *cobra.Command {
	tools := &cobra.Command{
		Use:   "tools",
		Short: "List and call the server's tools",
		Example: `  snodo-run tools list --output text -- ./demo
  snodo-run --handler elicit.wasm tools call register -- ./demo`,
	}
	list := &cobra.Command{
		Use:     "list",
		Short:   "List the server's tools (every page)",
		Example: `  snodo-run tools list --output text -- npx -y @modelcontextprotocol/server-everything`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withRunner(func(ctx context.Context, rt *runtime.Runner) error {
				tools, err := a.allowedTools(ctx, rt)
				if err != nil {
					return err
				}
				return a.print(toolList{Tools: tools})
			})
		},
	}
	var argPairs []string
	var argsJSON string
	var noValidate, noWait bool
	call := &cobra.Command{
		Use:   "call NAME",
		Short: "Call a tool; the server's questions go to the handlers, its progress to the display",
		Long: `call calls the tool NAME with arguments from --args (a JSON object, inline or
@FILE, @- for stdin) and --arg KEY=VALUE pairs (which win). A VALUE is typed
by the tool's input schema: a string property takes it as it is; a number
or integer property takes a number (n=3 sends 3), a boolean property true
or false, an object or array property JSON (tags='["a","b"]'). A KEY the
schema does not name, a VALUE that does not fit, and arguments that do not
fit the schema (a required one missing) are errors (exit 2) before the
call; --no-validate sends the arguments unchecked.

A result with isError set is printed, and the exit code is 1.

A tool the server runs as a task is waited for, its status shown with the
progress; --no-wait asks for a task and prints it instead (see tasks).`,
		Example: `  snodo-run tools call echo --arg text=hello -- ./demo
  snodo-run tools call count --arg steps=5 --output text -- ./demo --era legacy
  snodo-run tools call add --args '{"a": 1, "b": 2}' -- npx -y @modelcontextprotocol/server-everything`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := a.guardCall(name); err != nil {
				return err
			}
			arguments, err := objectArg(argsJSON, "--args")
			if err != nil {
				return err
			}
			return a.withRunner(func(ctx context.Context, rt *runtime.Runner) error {
				if err := a.toolArguments(ctx, rt, name, arguments, argPairs, noValidate); err != nil {
					return err
				}
				if noWait {
					return a.startTask(ctx, rt, name, arguments)
				}
				return a.callTool(ctx, rt, name, arguments)
			})
		},
	}
	call.Flags().StringArrayVar(&argPairs, "arg", nil, "`KEY=VALUE` argument; repeatable")
	call.Flags().StringVar(&argsJSON, "args", "", "arguments as a JSON object, or @FILE (@- for stdin)")
	call.Flags().BoolVar(&noValidate, "no-validate", false, "send the arguments without checking them against the tool's input schema")
	call.Flags().BoolVar(&noWait, "no-wait", false, "call the tool as a task and print the task instead of waiting for it")
	a.saveFlag(call)
	tools.AddCommand(list, call)
	return tools
}

func (a *app) listTools(ctx context.Context, rt *runtime.Runner) ([]*snodo.Tool, error) {
	tools := []*snodo.Tool{}
	err := rt.Call(ctx, nil, func(ctx context.Context, opts ...snodo.CallOption) error {
		for t, err := range rt.Client().Tools(ctx, opts...) {
			if err != nil {
				return err
			}
			tools = append(tools, t)
		}
		return nil
	})
	return tools, err
}

type toolList struct {
	Tools []*snodo.Tool `json:"tools"`
}

// ---- resources

func (a *app) resourcesCmd() *cobra.Command {
	res := &cobra.Command{
		Use:   "resources",
		Short: "List the server's resources and templates, and read them",
		Example: `  snodo-run resources list -- ./demo
  snodo-run resources read demo://readme --output text -- ./demo`,
	}
	list := &cobra.Command{
		Use:     "list",
		Short:   "List the server's resources (every page)",
		Example: `  snodo-run resources list --output text -- ./demo --era legacy`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withRunner(a.printResources)
		},
	}
	templates := &cobra.Command{
		Use:     "templates",
		Short:   "List the server's resource templates (every page)",
		Example: `  snodo-run resources templates -- ./demo`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withRunner(a.printTemplates)
		},
	}
	read := &cobra.Command{
		Use:     "read URI",
		Short:   "Read a resource",
		Example: `  snodo-run resources read demo://greeting/Ada -- ./demo`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withRunner(func(ctx context.Context, rt *runtime.Runner) error {
				return a.readResource(ctx, rt, args[0])
			})
		},
	}
	a.saveFlag(read)
	res.AddCommand(list, templates, read)
	return res
}

type resourceList struct {
	Resources []*snodo.Resource `json:"resources"`
}

type templateList struct {
	ResourceTemplates []*snodo.ResourceTemplate `json:"resourceTemplates"`
}

// ---- prompts

func (a *app) promptsCmd() *cobra.Command {
	prompts := &cobra.Command{
		Use:   "prompts",
		Short: "List and get the server's prompts",
		Example: `  snodo-run prompts list -- ./demo
  snodo-run prompts get greet --arg name=Ada -- ./demo`,
	}
	list := &cobra.Command{
		Use:     "list",
		Short:   "List the server's prompts (every page)",
		Example: `  snodo-run prompts list --output text -- ./demo`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withRunner(a.printPrompts)
		},
	}
	var argPairs []string
	get := &cobra.Command{
		Use:     "get NAME",
		Short:   "Get a prompt with arguments",
		Example: `  snodo-run prompts get greet --arg name=Ada --arg style=formal --output text -- ./demo`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			arguments := map[string]string{}
			for _, kv := range argPairs {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usageErr("--arg wants KEY=VALUE, not %q", kv)
				}
				arguments[k] = v
			}
			return a.withRunner(func(ctx context.Context, rt *runtime.Runner) error {
				return a.getPrompt(ctx, rt, args[0], arguments)
			})
		},
	}
	get.Flags().StringArrayVar(&argPairs, "arg", nil, "`KEY=VALUE` argument; repeatable")
	a.saveFlag(get)
	prompts.AddCommand(list, get)
	return prompts
}

type promptList struct {
	Prompts []*snodo.Prompt `json:"prompts"`
}

// ---- complete

func (a *app) completeCmd() *cobra.Command {
	var prompt, resource, arg string
	var contextPairs []string
	cmd := &cobra.Command{
		Use:   "complete (--prompt NAME | --resource URI) --arg NAME=VALUE",
		Short: "Ask the server to complete a prompt's or a resource template's argument",
		Example: `  snodo-run complete --prompt greet --arg name=A -- ./demo
  snodo-run complete --resource 'demo://greeting/{name}' --arg name=G -- ./demo`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var p snodo.CompleteParams
			switch {
			case prompt != "" && resource == "":
				p.Ref = snodo.CompletionRef{Type: "ref/prompt", Name: prompt}
			case resource != "" && prompt == "":
				p.Ref = snodo.CompletionRef{Type: "ref/resource", URI: resource}
			default:
				return usageErr("complete wants exactly one of --prompt NAME or --resource URI")
			}
			name, value, ok := strings.Cut(arg, "=")
			if !ok || name == "" {
				return usageErr("complete wants --arg NAME=VALUE (the argument to complete and what is typed so far)")
			}
			p.Argument, p.Value = name, value
			if len(contextPairs) > 0 {
				p.Context = map[string]string{}
				for _, kv := range contextPairs {
					k, v, ok := strings.Cut(kv, "=")
					if !ok || k == "" {
						return usageErr("--context wants KEY=VALUE, not %q", kv)
					}
					p.Context[k] = v
				}
			}
			return a.withRunner(func(ctx context.Context, rt *runtime.Runner) error {
				return a.complete(ctx, rt, p)
			})
		},
	}
	cmd.Flags().StringVar(&prompt, "prompt", "", "the prompt whose argument to complete")
	cmd.Flags().StringVar(&resource, "resource", "", "the resource template (URI template) whose argument to complete")
	cmd.Flags().StringVar(&arg, "arg", "", "`NAME=VALUE`: the argument to complete and its partial value")
	cmd.Flags().StringArrayVar(&contextPairs, "context", nil, "`KEY=VALUE` an argument already resolved; repeatable")
	return cmd
}

// ---- listen

func (a *app) listenCmd() *cobra.Command {
	var tools, prompts, resources bool
	var uris []string
	var count int
	cmd := &cobra.Command{
		Use:   "listen [--tools] [--prompts] [--resources] [--resource URI]…",
		Short: "Print the server's change notifications as JSON lines until interrupted",
		Long: `listen opens a subscription (subscriptions/listen in 2026-07-28; the
list_changed notifications and resources/subscribe of a legacy server) and
prints each event as one JSON line {"method": …, "params": …} until Ctrl-C,
the server ends it, or --count events have arrived. With --subscriber the
events go to that Wasm module instead, which can end the subscription.
Without a selection, all three list changes are asked for.`,
		Example: `  snodo-run listen --tools --resource demo://counter -- ./demo --churn 1s
  snodo-run --subscriber events.wasm listen --tools -- ./demo --churn 1s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			filter := snodo.SubscriptionFilter{ToolsListChanged: tools, PromptsListChanged: prompts,
				ResourcesListChanged: resources, ResourceSubscriptions: uris}
			if !tools && !prompts && !resources && len(uris) == 0 {
				filter.ToolsListChanged, filter.PromptsListChanged, filter.ResourcesListChanged = true, true, true
			}
			return a.withRunner(func(ctx context.Context, rt *runtime.Runner) error {
				ctx, cancel := context.WithCancel(ctx)
				defer cancel()
				seen := 0
				var each func(snodo.Event) error
				if !rt.HasSubscriber() {
					each = func(ev snodo.Event) error {
						if err := a.printLine(listenEvent{Method: ev.Method, Params: ev.Params}); err != nil {
							return err
						}
						seen++
						if count > 0 && seen >= count {
							cancel()
						}
						return nil
					}
				}
				err := rt.Listen(ctx, filter, func(got snodo.SubscriptionFilter) {
					a.logger.Debug("subscription accepted", "filter", got)
				}, each)
				if errors.Is(err, context.Canceled) {
					return nil // Ctrl-C is how listen ends
				}
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&tools, "tools", false, "tool list changes")
	cmd.Flags().BoolVar(&prompts, "prompts", false, "prompt list changes")
	cmd.Flags().BoolVar(&resources, "resources", false, "resource list changes")
	cmd.Flags().StringArrayVar(&uris, "resource", nil, "updates of the resource `URI`; repeatable")
	cmd.Flags().IntVar(&count, "count", 0, "stop after N events (0: until interrupted)")
	return cmd
}

type listenEvent struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// ---- call

func (a *app) callCmd() *cobra.Command {
	var params string
	cmd := &cobra.Command{
		Use:   "call METHOD [--params JSON|@FILE]",
		Short: "Send any request and print its result (the dialect's _meta is added)",
		Long: `call sends METHOD with params (a JSON object, inline or @FILE, @- for stdin)
and prints the complete result. In the 2026-07-28 era, input_required results
are answered by the handlers and the request retried, as for typed commands.`,
		Example: `  snodo-run call tools/list -- ./demo
  snodo-run call tools/call --params '{"name":"echo","arguments":{"text":"hi"}}' -- ./demo`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := objectArg(params, "--params")
			if err != nil {
				return err
			}
			method := args[0]
			if err := a.guardRawCall(method, p); err != nil {
				return err
			}
			return a.withRunner(func(ctx context.Context, rt *runtime.Runner) error {
				return a.rawRequest(ctx, rt, method, p)
			})
		},
	}
	cmd.Flags().StringVar(&params, "params", "", "params as a JSON object, or @FILE (@- for stdin)")
	return cmd
}

// ---- handlers

func (a *app) handlersCmd() *cobra.Command {
	h := &cobra.Command{
		Use:   "handlers",
		Short: "Write, check and try Wasm handler modules without a server",
		Example: `  snodo-run handlers new my-policy --lang rust
  snodo-run handlers check elicit.wasm
  snodo-run handlers test elicit.wasm --method elicitation/create --params @request.json`,
	}
	check := &cobra.Command{
		Use:   "check FILE.wasm",
		Short: "Validate a module against the ABI; print what it declares and imports",
		Long: `check loads the module as snodo-run would (valid Wasm, the ABI's exports, a
valid manifest, the sha256 pin of the config file's modules entry) and prints
its manifest, its imports and its exports. A module that fails says exactly
what is missing or wrong, with exit code 5.`,
		Example: `  snodo-run handlers check examples/handlers/go/elicit/elicit.wasm --output text`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mc, err := a.moduleFor(args[0])
			if err != nil {
				return err
			}
			rep, err := runtime.CheckModule(a.ctx, mc, a.settings.runner.CacheDir)
			if err != nil {
				if a.ctx.Err() != nil {
					return interruptedCall(a.ctx, err)
				}
				return moduleErr(err)
			}
			return a.print(rep)
		},
	}
	var method, params, intercepts string
	test := &cobra.Command{
		Use:   "test FILE.wasm (--method METHOD | --intercept request|result) --params JSON|@FILE",
		Short: "Run one input through a module, without a server: the handler author's inner loop",
		Long: `test loads the module and gives it one input: a request (--method
elicitation/create, sampling/createMessage or roots/list, with the request's
params), a progress notification (--method progress, with its params), or a
subscription event (--method notifications/…). It prints the module's result
({"stop": …} for a consumer); a module error or crash, and a progress
consumer's request to cancel, are reported as errors with exit code 5.
--handler-config gives the module its configuration.

With --intercept request or --intercept result (instead of --method), it runs
the module's request or result interceptor (ABI version 2) on one envelope,
given with --params: {"method":…,"params":{…},"server":…,"caller":…,
"era":"modern","protocolVersion":…}, and for a result also "result" (the
server's result object) or "error" (its JSON-RPC error object). It prints the
decision as the client would act on it: {"decision":"continue"},
{"decision":"deny","error":{…}} (the module's reason, if it gave one),
{"decision":"rewrite","params":{…}} or {"decision":"replace","result":{…}}
(or "error"), with exit code 0 whatever the decision. A module that fails
(traps, overruns its deadline, answers an invalid decision or a rewrite the
client would refuse), or that does not intercept the method, is an error
with exit code 5; an envelope that is not one is a usage error (exit 2).`,
		Example: `  snodo-run handlers test elicit.wasm --method elicitation/create \
    --params '{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string","default":"Ada"}}}}'
  snodo-run handlers test tool-guard.wasm --intercept request \
    --params '{"method":"tools/call","params":{"name":"delete_everything"}}'
  snodo-run handlers test redact-secrets.wasm --intercept result --params @-  < envelope.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if intercepts != "" {
				return a.testInterceptor(args[0], method, intercepts, params)
			}
			if method == "" {
				return usageErr("handlers test wants --method (a handler's input) or --intercept request|result (an interceptor's)")
			}
			raw := json.RawMessage(`{}`)
			if params != "" {
				var err error
				if raw, err = jsonArg(params); err != nil {
					return usageErr("--params: %v", err)
				}
			}
			mc, err := a.moduleFor(args[0])
			if err != nil {
				return err
			}
			res, err := runtime.TestModule(a.ctx, mc, a.settings.runner.CacheDir, method, raw)
			if err != nil {
				if a.ctx.Err() != nil {
					return interruptedCall(a.ctx, err)
				}
				var le *runtime.LoadError
				if !errors.As(err, &le) && !isJSONRPC(err) {
					return usageErr("%v", err)
				}
				return moduleErr(err)
			}
			return a.print(res)
		},
	}
	test.Flags().StringVar(&method, "method", "", "elicitation/create, sampling/createMessage, roots/list, progress, or notifications/…")
	test.Flags().StringVar(&params, "params", "", "the input's params (with --intercept, the interceptor's envelope): JSON, or @FILE (@- for stdin)")
	test.Flags().StringVar(&intercepts, "intercept", "", "run the module's interceptor instead of a handler: request or result")
	h.AddCommand(check, test, a.handlersNewCmd())
	return h
}

// moduleFor is the module config of a file given on the command line,
// with its settings from the config file and --handler-config.
// testInterceptor is `handlers test --intercept request|result`.
func (a *app) testInterceptor(path, method, which, envelope string) error {
	var results bool
	switch which {
	case "request":
	case "result":
		results = true
	default:
		return usageErr("--intercept must be request or result, not %q", which)
	}
	if method != "" {
		return usageErr("--intercept takes the method from the envelope's \"method\", not --method")
	}
	if envelope == "" {
		return usageErr(`--intercept %s wants the envelope in --params (JSON, @FILE or @- for stdin), e.g. --params '{"method":"tools/call","params":{"name":"x"}}'`, which)
	}
	raw, err := jsonArg(envelope)
	if err != nil {
		return usageErr("--params: %v", err)
	}
	mc, err := a.moduleFor(path)
	if err != nil {
		return err
	}
	dec, err := runtime.TestInterceptor(a.ctx, mc, a.settings.runner.CacheDir, results, raw)
	if err != nil {
		if a.ctx.Err() != nil {
			return interruptedCall(a.ctx, err)
		}
		var ee *runtime.EnvelopeError
		if errors.As(err, &ee) {
			return usageErr("--params: %v", err)
		}
		return moduleErr(err)
	}
	return a.print(dec)
}

func (a *app) moduleFor(path string) (runtime.ModuleConfig, error) {
	for _, h := range a.settings.runner.Handlers {
		if h.Path == path {
			return h.ModuleConfig, nil
		}
	}
	v, err := newViper(a.root.PersistentFlags())
	if err != nil {
		return runtime.ModuleConfig{}, err
	}
	_, fc, err := readConfigFile(v, a.configFlag)
	if err != nil {
		return runtime.ModuleConfig{}, err
	}
	rc := runtime.Config{}
	v.Set(keyHandler, []string{path})
	v.Set(keyProgress, "")
	v.Set(keySubscriber, "")
	allowTrusted, _ := a.root.PersistentFlags().GetBool("allow-trusted")
	if err := resolveModules(v, fc, &rc, allowTrusted); err != nil {
		return runtime.ModuleConfig{}, err
	}
	return rc.Handlers[0].ModuleConfig, nil
}

// ---- version

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print snodo-run's version, protocol versions and handler ABI version",
		Example: `  snodo-run version`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := struct {
				Version   string   `json:"version"`
				Go        string   `json:"go"`
				Protocols []string `json:"protocolVersions"`
				ABI       int      `json:"handlerABI"`
			}{version, goruntime.Version(), snodo.SupportedVersions(), abi.Version}
			if a.settings == nil {
				a.settings = &settings{output: "json"}
				if f := cmd.Flags().Lookup("output"); f != nil {
					a.settings.output = f.Value.String()
				}
			}
			return a.print(out)
		},
	}
}
