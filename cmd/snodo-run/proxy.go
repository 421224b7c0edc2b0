package main

import (
	"context"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/internal/proxy"
	"github.com/snodo/snodo/runtime"
)

const proxyLong = `proxy speaks MCP on its own stdin and stdout to a host (a desktop app, an
agent framework) and forwards to the server after --, through Snodo's
client: tools, resources, prompts, completion, logging, ping, progress
(with the host's progress token) and cancellation pass through. The host
may open with initialize (2024-11-05 … 2025-11-25) or speak 2026-07-28
(server/discover, _meta on every request); the server side is whatever
--protocol negotiates.

What the server asks of the client (elicitation/create,
sampling/createMessage, roots/list) is answered by the --handler Wasm
modules; a method no module answers is forwarded to the host: as a request
on the host connection to a host that opened with initialize, as the input
requests of an input_required result to a 2026-07-28 host (the forwarded
call stays open on the server until the host retries, or until
--resume-timeout). A host that did not declare the capability gets -32601
naming the missing handler. A legacy server's
notifications/elicitation/complete reaches a 2025-11-25 host that was asked
the URL-mode elicitation.

A 2026-07-28 host's subscriptions/listen opens the subscription on the
server (in either era) and carries its events with the host's
subscription ID; list changes outside a subscription go to an initialize
host only.

The guard applies: a tools/call of a tool --allow-tool/--deny-tool refuse
is answered with a JSON-RPC error (-32602), and such tools are left out of
tools/list. --audit FILE appends one JSON line per request, including
the server requests a --handler module answers: time, direction, method,
tool, module, decision (allow or deny), durationMs, errorCode; and each
decision of an --interceptor module other than letting things through:
direction "interceptor", phase (request or result), module, method,
decision (deny, rewrite, replace, or fail when the module failed and the
call failed closed) and reason. Interceptors see the host's requests as the
proxy sends them on, with the host's name for itself as the caller.

Extensions the proxy does not know pass through both ways: the client
extensions the host declares in its first message (initialize's
capabilities.extensions, or a 2026-07-28 request's client capabilities;
MCP Apps' io.modelcontextprotocol/ui among them) reach the server — the
server is started and connected once that message has come, so that the
initialize sent to a legacy server carries them — and the server's
extensions reach the host; _meta on results passes unchanged. The tasks
extension, which the client handles itself, is not passed.

The host's initialize is answered as soon as the server is connected; a
roots/list of the server is asked of the host when the server asks it,
after that answer.

The proxy runs until its stdin ends or its stdout breaks (the host closed
them, exited or was killed): then every call in flight is cancelled on the
server at once (notifications/cancelled, or the end of the request's
stream for a 2026-07-28 server), and the server is shut down in order. On
SIGINT or SIGTERM every host request in flight is cancelled on the server
and answered with a JSON-RPC error -32000 saying the proxy is shutting
down, before the server is shut down; so is the host's initialize when the
signal comes while the server is being connected, or when the server
cannot be started or connected. Nothing but MCP messages is written to
stdout; logs (--verbose) go to stderr.`

func (a *app) proxyCmd() *cobra.Command {
	var auditPath string
	var maxInFlight int
	var resume time.Duration
	cmd := &cobra.Command{
		Use:   "proxy [--audit FILE] -- SERVER [SERVER ARGS…]",
		Short: "Serve MCP on stdio to a host, forwarding to the server with Wasm handlers, the guard and an audit log",
		Long:  proxyLong,
		Example: `  # In a host's mcpServers config: command snodo-run, args as below
  snodo-run --handler elicit.wasm --deny-tool 'delete_*' proxy --audit audit.jsonl -- ./demo

  # Forward every server request to the host, guard only
  snodo-run --allow-tool 'read_*' proxy -- npx -y @modelcontextprotocol/server-everything`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s := a.settings
			if s.runner.Server.Command == "" && !s.runner.Server.Remote() {
				return errNoServer()
			}
			cfg := proxy.Config{Logger: a.logger, MaxLineBytes: s.runner.MaxLineBytes, MaxInFlight: maxInFlight, ResumeTimeout: resume}
			if len(s.allow) > 0 || len(s.deny) > 0 {
				cfg.AllowTool = a.toolAllowed
			}
			if auditPath != "" {
				f, err := os.OpenFile(auditPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
				if err != nil {
					return configErr("--audit: %v", err)
				}
				defer f.Close()
				cfg.Audit = f
			}
			// A host that is gone breaks the proxy's stdout: a write to it
			// must fail (EPIPE) for the proxy to cancel what is in flight
			// and stop the server in order, not kill the proxy with SIGPIPE
			// and leave the server to find out by itself.
			sigpipe := make(chan os.Signal, 1)
			signal.Notify(sigpipe, syscall.SIGPIPE)
			defer signal.Stop(sigpipe)
			p := proxy.New(cfg, a.stdin, a.stdout)
			covered, err := a.wasmMethods()
			if err != nil {
				return err
			}
			native := map[string]snodo.Handler{}
			for m, h := range s.runner.Native {
				native[m] = h
			}
			for _, m := range []string{abi.MethodElicitationCreate, abi.MethodSamplingCreate, abi.MethodRootsList} {
				if !covered[m] && native[m] == nil {
					native[m] = p
				}
			}
			s.runner.Native = native
			// The host's initialize is answered as soon as the server is
			// connected: the runner does not hold it back waiting for the
			// server's first roots/list. A roots/list the proxy forwards
			// could not be answered before then anyway (the host is asked
			// once its initialize is answered), and a host connected to
			// the server directly would not wait either.
			s.runner.RootsWait = -1
			if native[abi.MethodElicitationCreate] == p {
				// The host decides which modes it takes.
				s.runner.ClientOptions.ElicitationModes = []string{"form", "url"}
				s.runner.ClientOptions.OnElicitationComplete = p.OnElicitationComplete
			}
			s.runner.OnLog, s.runner.OnNotification = p.OnLog, p.OnNotification
			s.runner.WrapModule = p.AuditModule
			// The host's extensions go in the client's own declaration:
			// the server is connected once the host has said them.
			a.logger.Debug("proxy waiting for the host's first message")
			ext, err := p.HostExtensions(a.ctx)
			if err != nil {
				return nil // a signal is how a host stops a stdio server
			}
			names := make([]string, 0, len(ext))
			for name, settings := range ext {
				names = append(names, name)
				addExtension(&s.runner.ClientOptions, name, settings)
			}
			if len(names) > 0 {
				slices.Sort(names)
				a.logger.Debug("host extensions passed to the server", "extensions", names)
			}
			s.runner.OnIntercept = p.AuditIntercept
			served := false
			err = a.withRunner(func(ctx context.Context, rt *runtime.Runner) error {
				served = true
				srv := rt.Client().Server()
				a.logger.Debug("proxy serving", "era", srv.Era, "version", srv.ProtocolVersion, "forwarded", forwardedMethods(native, p))
				return p.Serve(ctx, rt.Client())
			})
			if !served {
				// The server could not be started or connected, or a
				// signal came first: the host's initialize gets an answer.
				p.RefuseFirst(a.ctx, err)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&auditPath, "audit", "", "append one JSON line per request to `FILE`")
	cmd.Flags().IntVar(&maxInFlight, "max-host-requests", proxy.DefaultMaxInFlight, "most host requests served at once; more are answered -32603")
	cmd.Flags().DurationVar(&resume, "resume-timeout", proxy.DefaultResumeTimeout, "how long a call waits for a 2026-07-28 host's retry after input_required")
	return cmd
}

// wasmMethods are the methods the --handler modules answer: those given
// with METHOD=, or else those each module declares.
func (a *app) wasmMethods() (map[string]bool, error) {
	covered := map[string]bool{}
	for _, h := range a.settings.runner.Handlers {
		methods := h.Methods
		if len(methods) == 0 {
			rep, err := runtime.CheckModule(a.ctx, h.ModuleConfig, a.settings.runner.CacheDir)
			if err != nil {
				return nil, moduleErr(err)
			}
			methods = rep.Manifest.Methods
		}
		for _, m := range methods {
			covered[m] = true
		}
	}
	return covered, nil
}

func forwardedMethods(native map[string]snodo.Handler, p *proxy.Proxy) []string {
	var out []string
	for m, h := range native {
		if h == p {
			out = append(out, m)
		}
	}
	return out
}
