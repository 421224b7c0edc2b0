package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/internal/gateway/front"
	"github.com/snodo/snodo/internal/gateway/hub"
	"github.com/snodo/snodo/internal/gateway/policy"
	"github.com/snodo/snodo/internal/gateway/telemetry"
)

const gatewayLong = `gateway serves many MCP servers to many hosts through one endpoint:
Streamable HTTP at /mcp in both eras (legacy sessions with Mcp-Session-Id,
and the stateless 2026-07-28 revision, any replica serving any request), or
one local host on stdin and stdout with --stdio.

The config file (JSON, or YAML by its extension) holds the servers in the
mcpServers shape desktop hosts use (a command, or a url), each with its own
Wasm handler modules and interceptors; the hosts' identities (bearer tokens
stored as SHA-256 digests: snodo-run gateway hash-token), their allowed and
denied servers and tools, rate limits and concurrency caps; telemetry
(OpenTelemetry over OTLP); and the stateKey every replica shares. See
docs/GATEWAY.md for the sections and docs/DEPLOY.md for replicas behind a
load balancer.

Tools and prompts are named "{server}__{name}", resource URIs and templates
"{server}+{uri}". A server that is down or slow fails only its own calls,
and is restarted with backoff.

Besides /mcp the gateway serves /healthz (the process serves), /readyz
(every server has been connected) and /metrics (Prometheus). It binds
127.0.0.1:8080 unless listen or --listen says otherwise, and refuses
requests from an Origin not in allowedOrigins.

On SIGINT or SIGTERM it stops taking requests, ends its streams, waits for
the calls in flight (up to --shutdown-grace, then cancels them), and shuts
the servers down in order.`

func (a *app) gatewayCmd() *cobra.Command {
	var (
		configPath, listen string
		stdio, anonymous   bool
		grace              time.Duration
	)
	cmd := &cobra.Command{
		Use:   "gateway --config FILE [--listen ADDR | --stdio]",
		Short: "Serve many MCP servers to many hosts over Streamable HTTP, with Wasm handlers, identities, policy, rate limits and telemetry",
		Long:  gatewayLong,
		Example: `  snodo-run gateway --config gateway.yaml
  snodo-run gateway --config gateway.yaml --listen 0.0.0.0:8080
  printf %s "$TOKEN" | snodo-run gateway hash-token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" {
				return usageErr("gateway needs --config FILE (docs/GATEWAY.md shows one)")
			}
			return a.runGateway(configPath, listen, stdio, anonymous, grace)
		},
	}
	// This --config shadows snodo-run's own: the gateway reads its file alone.
	cmd.Flags().StringVar(&configPath, "config", "", "the gateway's config `FILE` (JSON, or YAML by its extension)")
	cmd.Flags().StringVar(&listen, "listen", "", "`ADDR` to serve on (host:port), instead of the config's listen (default 127.0.0.1:8080)")
	cmd.Flags().BoolVar(&stdio, "stdio", false, "serve one local host on stdin and stdout instead of HTTP")
	cmd.Flags().BoolVar(&anonymous, "allow-anonymous", false, "serve hosts without identities on an address other than loopback")
	cmd.Flags().DurationVar(&grace, "shutdown-grace", 10*time.Second, "how long calls in flight may finish after SIGINT or SIGTERM")
	cmd.AddCommand(a.hashTokenCmd())
	return cmd
}

func (a *app) hashTokenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "hash-token [TOKEN]",
		Short: "Print the tokenSha256 of a bearer token for the gateway's identities (reads the token from stdin when not given)",
		Example: `  snodo-run gateway hash-token "$TOKEN"
  printf '%s\n' "$TOKEN" | snodo-run gateway hash-token`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tok := ""
			if len(args) == 1 {
				tok = args[0]
			} else {
				line, err := bufio.NewReader(a.stdin).ReadString('\n')
				if err != nil && line == "" {
					return usageErr("hash-token: give the token as an argument or on stdin")
				}
				tok = strings.TrimRight(line, "\r\n")
			}
			if tok == "" {
				return usageErr("hash-token: the token is empty")
			}
			_, err := fmt.Fprintln(a.stdout, policy.HashToken(tok))
			return err
		},
	}
}

// runGateway starts the gateway's parts from the config file and serves
// until a.ctx ends (a signal).
func (a *app) runGateway(configPath, listen string, stdio, anonymous bool, grace time.Duration) error {
	log := a.logger
	sections, err := gateway.ReadConfig(configPath)
	if err != nil {
		return configErr("%v", err)
	}
	if listen != "" {
		sections["listen"], _ = json.Marshal(listen)
	}
	ctx := a.ctx
	tel, err := telemetry.New(ctx, sections, telemetry.Options{})
	if err != nil {
		return configErr("%v", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tel.Shutdown(sctx)
	}()
	aud, closeAudit, err := gateway.OpenAudit(sections)
	if err != nil {
		return configErr("%v", err)
	}
	defer closeAudit()
	pol, err := policy.New(ctx, sections, policy.Options{Auditor: aud, Logger: log})
	if err != nil {
		return configErr("%v", err)
	}
	addr := "127.0.0.1:8080" // the front's default
	if err := sections.Decode("listen", &addr); err != nil {
		return configErr("%v", err)
	}
	if !stdio && pol.Open() && !anonymous && !loopback(addr) {
		return configErr("the gateway would serve every host anonymously, with every server and tool, on %s: add identities (tokenSha256) or a jwt section to the config, listen on 127.0.0.1, or pass --allow-anonymous", addr)
	}
	h, err := hub.New(ctx, sections, hub.Options{Policy: pol, Telemetry: tel, Auditor: aud, Logger: log,
		Dir: filepath.Dir(configPath)})
	if err != nil {
		return configErr("%v", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
		defer cancel()
		_ = h.Close(sctx)
	}()
	if stdio {
		return front.ServeStdio(ctx, a.stdin, a.stdout, h, pol, tel, log)
	}
	f, err := front.New(sections, h, pol, tel, log)
	if err != nil {
		return configErr("%v", err)
	}
	ln, err := net.Listen("tcp", f.Listen())
	if err != nil {
		return configErr("listen: %v", err)
	}
	srv := f.Server()
	log.Info("gateway serving", "url", "http://"+ln.Addr().String()+"/mcp")
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		_ = f.Close()
		return err
	case <-ctx.Done():
	}
	_ = f.Close()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Warn("gateway shutdown", "err", err)
	}
	_ = srv.Close()
	<-served
	return nil
}

// isGatewayCmd reports whether cmd is gateway or one of its subcommands.
func isGatewayCmd(cmd *cobra.Command) bool {
	for c := cmd; c != nil; c = c.Parent() {
		if c.Name() == "gateway" && c.Parent() != nil && c.Parent().Parent() == nil {
			return true
		}
	}
	return false
}

// loopback reports whether the listen address addr only takes
// connections from this machine.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
