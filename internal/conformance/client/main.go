// Command client is Snodo's client under the official MCP conformance suite
// (@modelcontextprotocol/conformance, run by `make conformance`; see
// docs/CONFORMANCE.md).
//
// For each client scenario the suite starts a test server and runs this
// program with the server's URL as its last argument, the scenario's name
// in MCP_CONFORMANCE_SCENARIO, the protocol version to speak in
// MCP_CONFORMANCE_PROTOCOL_VERSION (2025-11-25: the initialize handshake;
// 2026-07-28: stateless, per-request _meta) and scenario data, when there
// is any, as JSON in MCP_CONFORMANCE_CONTEXT. The program does what the
// scenario asks of a client, with Snodo's client (snodo.Connect) over its
// Streamable HTTP transport (transport/http); the suite's server checks
// what went over the wire.
//
// Elicitation is answered by the elicit-policy Wasm module of
// examples/handlers/go (given with -elicit), as snodo-run answers it:
// schema defaults for the fields it has no value for. Sampling and roots
// are answered by small Go handlers, so that all three client capabilities
// are declared.
//
// The program exits 0 when the scenario's steps succeeded, 1 when one
// failed (the error on stderr), 2 for bad usage.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/handlers/wasm"
	shttp "github.com/snodo/snodo/transport/http"
	"github.com/snodo/snodo/transport/http/oauth"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stderr))
}

// scenario is one scenario's steps, given the connected client.
type scenario func(ctx context.Context, s *session) error

// session is one run: the client and what the scenario was given.
type session struct {
	c       *snodo.Client
	context json.RawMessage // MCP_CONFORMANCE_CONTEXT
	log     *slog.Logger

	// duringElicitation, when set, runs once, while the first elicitation
	// is being answered (sep-2322-client-request-state: an unrelated call
	// in the middle of a multi round-trip call).
	mu                sync.Mutex
	duringElicitation func(ctx context.Context) error
}

// scenarios by name; each has its elicit-policy configuration.
var scenarios = map[string]struct {
	run    scenario
	elicit string // the elicit-policy module's configuration
}{
	"initialize":                          {run: callFirstTool},
	"tools_call":                          {run: callFirstTool},
	"elicitation-sep1034-client-defaults": {run: callTool("test_client_elicitation_defaults", map[string]any{}), elicit: `{}`},
	"sse-retry":                           {run: callTool("test_reconnection", map[string]any{})},
	"json-schema-2020-12-preservation":    {run: echoSchema},
	"json-schema-ref-no-deref":            {run: listTools},
	"request-metadata":                    {run: listTools},
	"sep-2322-client-request-state":       {run: mrtr, elicit: `{"values":{"confirmed":true}}`},
	"http-standard-headers":               {run: everyRequest},
	"http-custom-headers":                 {run: contextToolCalls},
	"http-invalid-tool-headers":           {run: callEveryTool},
}

// authScenarios take the default steps of a client that authorizes: list
// the tools and call test-tool; the HTTP client (httpClient) authorizes
// when the server answers 401.
func authScenario(name string) bool { return strings.HasPrefix(name, "auth/") }

func run(args []string, getenv func(string) string, stderr io.Writer) int {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	elicit := fs.String("elicit", "", "the elicit-policy Wasm `module` (examples/handlers/go/elicit-policy)")
	cacheDir := fs.String("cache", "", "the Wasm compilation cache `directory` (default: the user's cache directory)")
	timeout := fs.Duration("timeout", 20*time.Second, "bound on the whole scenario")
	compileOnly := fs.Bool("compile", false, "compile the -elicit module into the -cache directory, and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *compileOnly {
		if err := compile(*elicit, *cacheDir); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return 0
	}
	name := getenv("MCP_CONFORMANCE_SCENARIO")
	if fs.NArg() < 1 || name == "" {
		fmt.Fprintln(stderr, "usage: MCP_CONFORMANCE_SCENARIO=NAME client [-elicit FILE.wasm] SERVER_URL")
		return 2
	}
	url := fs.Arg(fs.NArg() - 1)
	sc, ok := scenarios[name]
	if !ok && authScenario(name) {
		sc.run = authFlow
		ok = true
	}
	if !ok {
		fmt.Fprintf(stderr, "unknown scenario %q: the conformance client has no steps for it\n", name)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := connectAndRun(ctx, log, url, getenv("MCP_CONFORMANCE_PROTOCOL_VERSION"), json.RawMessage(getenv("MCP_CONFORMANCE_CONTEXT")), sc.run, *elicit, sc.elicit, *cacheDir); err != nil {
		fmt.Fprintf(stderr, "scenario %s: %v\n", name, err)
		return 1
	}
	log.Info("scenario done", "scenario", name)
	return 0
}

func connectAndRun(ctx context.Context, log *slog.Logger, url, version string, scCtx json.RawMessage, sc scenario, elicitPath, elicitConfig, cacheDir string) (err error) {
	s := &session{context: scCtx, log: log}
	opts := &snodo.Options{
		ClientInfo:      snodo.Implementation{Name: "snodo-conformance", Version: snodo.Version},
		ProtocolVersion: version,
		Handlers: map[string]snodo.Handler{
			abi.MethodRootsList: snodo.HandlerFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`{"roots":[]}`), nil
			}),
			abi.MethodSamplingCreate: snodo.HandlerFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"ok"},"model":"snodo-conformance"}`), nil
			}),
		},
	}
	if elicitPath != "" {
		if elicitConfig == "" {
			elicitConfig = `{}`
		}
		host, err := wasm.NewHost(wasm.HostConfig{CacheDir: cacheDir, Logger: log})
		if err != nil {
			return err
		}
		defer host.Close(context.WithoutCancel(ctx))
		m, err := host.Load(ctx, wasm.ModuleConfig{Path: elicitPath, Config: json.RawMessage(elicitConfig)})
		if err != nil {
			return fmt.Errorf("loading %s: %w", elicitPath, err)
		}
		opts.Handlers[abi.MethodElicitationCreate] = snodo.HandlerFunc(func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			if f := s.takeDuringElicitation(); f != nil {
				if err := f(ctx); err != nil {
					return nil, err
				}
			}
			res, err := m.HandleRequest(ctx, method, params)
			log.Info("elicitation answered", "params", string(params), "result", string(res), "error", err)
			return res, err
		})
	}
	hc, err := httpClient(scCtx)
	if err != nil {
		return err
	}
	t, err := shttp.New(shttp.Config{URL: url, HTTPClient: hc})
	if err != nil {
		return err
	}
	c, err := snodo.Connect(ctx, t, opts)
	if err != nil {
		_ = t.Close()
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		if cerr := c.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close: %w", cerr)
		}
	}()
	log.Info("connected", "era", c.Server().Era, "version", c.Server().ProtocolVersion)
	s.c = c
	return sc(ctx, s)
}

// compile loads the module once, so that its compilation is cached for the
// scenarios, which run in parallel.
func compile(path, cacheDir string) error {
	ctx := context.Background()
	host, err := wasm.NewHost(wasm.HostConfig{CacheDir: cacheDir})
	if err != nil {
		return err
	}
	defer host.Close(ctx)
	_, err = host.Load(ctx, wasm.ModuleConfig{Path: path})
	return err
}

// credentials are the client credentials a scenario gives in
// MCP_CONFORMANCE_CONTEXT, if any.
type credentials struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	// Issuer is the authorization server the credentials are registered
	// with, when they are for the authorization code grant.
	Issuer string `json:"issuer"`
}

// httpClient is the HTTP client of the transport, for every scenario: one
// that authorizes with OAuth (package transport/http/oauth) when a server
// answers 401, and otherwise sends requests as Snodo's default does.
//
// The grant follows from what the context gives: a client ID and secret
// without an issuer are the credentials of a client acting on its own
// behalf (the client_credentials grant of the oauth-client-credentials
// extension); otherwise the authorization code grant, with pre-registered
// credentials (restricted to their issuer) when the context gives them,
// else a Client ID Metadata Document URL or Dynamic Client Registration,
// and consent given by the suite's authorization server, which redirects
// at once (HeadlessAuthorizer).
func httpClient(scCtx json.RawMessage) (*http.Client, error) {
	var cr credentials
	if len(scCtx) > 0 {
		if err := json.Unmarshal(scCtx, &cr); err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	if cr.ClientID != "" && cr.ClientSecret != "" && cr.Issuer == "" {
		return oauth.NewClient(nil, oauth.Config{
			GrantType:    oauth.GrantClientCredentials,
			ClientID:     cr.ClientID,
			ClientSecret: cr.ClientSecret,
		})
	}
	return oauth.NewClient(nil, oauth.Config{
		Authorizer:          oauth.HeadlessAuthorizer{},
		RedirectURL:         "http://localhost:3000/callback",
		ClientIDMetadataURL: "https://conformance-test.local/client-metadata.json",
		ClientID:            cr.ClientID,
		ClientSecret:        cr.ClientSecret,
		ClientIssuer:        cr.Issuer,
	})
}

func (s *session) takeDuringElicitation() func(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.duringElicitation
	s.duringElicitation = nil
	return f
}

// tools lists every tool, every page.
func (s *session) tools(ctx context.Context) ([]*snodo.Tool, error) {
	var all []*snodo.Tool
	for t, err := range s.c.Tools(ctx) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		all = append(all, t)
	}
	return all, nil
}

func (s *session) call(ctx context.Context, name string, args any) error {
	res, err := s.c.CallTool(ctx, name, args)
	if err != nil {
		return fmt.Errorf("tools/call %s: %w", name, err)
	}
	b, _ := json.Marshal(res)
	s.log.Info("tool called", "tool", name, "result", string(b))
	return nil
}

func listTools(ctx context.Context, s *session) error {
	_, err := s.tools(ctx)
	return err
}

// callFirstTool lists the tools and calls the first with {"a": 2, "b": 3}
// (initialize, tools_call: the server's add_numbers).
func callFirstTool(ctx context.Context, s *session) error {
	tools, err := s.tools(ctx)
	if err != nil || len(tools) == 0 {
		return err
	}
	return s.call(ctx, tools[0].Name, map[string]any{"a": 2, "b": 3})
}

func callTool(name string, args any) scenario {
	return func(ctx context.Context, s *session) error {
		if _, err := s.tools(ctx); err != nil {
			return err
		}
		return s.call(ctx, name, args)
	}
}

// authFlow is what a client of a server that requires authorization does:
// list the tools, call test-tool.
func authFlow(ctx context.Context, s *session) error {
	if _, err := s.tools(ctx); err != nil {
		return err
	}
	return s.call(ctx, "test-tool", map[string]any{})
}

// echoSchema passes the inputSchema of json_schema_2020_12_tool, as the
// client received it, back to the server (json-schema-2020-12-preservation).
func echoSchema(ctx context.Context, s *session) error {
	tools, err := s.tools(ctx)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if t.Name == "json_schema_2020_12_tool" {
			return s.call(ctx, "json_schema_echo", map[string]json.RawMessage{"schema": t.InputSchema})
		}
	}
	return errors.New("the server lists no json_schema_2020_12_tool")
}

// mrtr runs the multi round-trip calls of sep-2322-client-request-state:
// while the first elicitation is answered, an unrelated call goes out,
// which must carry nothing of the other call's rounds.
func mrtr(ctx context.Context, s *session) error {
	if _, err := s.tools(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	s.duringElicitation = func(ctx context.Context) error { return s.call(ctx, "test_mrtr_unrelated", map[string]any{}) }
	s.mu.Unlock()
	for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_no_result_type"} {
		if err := s.call(ctx, name, map[string]any{}); err != nil {
			return err
		}
	}
	return nil
}

// everyRequest sends each kind of request once or more: tools, resources
// and prompts, listed and used (http-standard-headers).
func everyRequest(ctx context.Context, s *session) error {
	tools, err := s.tools(ctx)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if err := s.call(ctx, t.Name, map[string]any{}); err != nil {
			return err
		}
	}
	for r, err := range s.c.Resources(ctx) {
		if err != nil {
			return fmt.Errorf("resources/list: %w", err)
		}
		if _, err := s.c.ReadResource(ctx, r.URI); err != nil {
			return fmt.Errorf("resources/read %s: %w", r.URI, err)
		}
	}
	for p, err := range s.c.Prompts(ctx) {
		if err != nil {
			return fmt.Errorf("prompts/list: %w", err)
		}
		if _, err := s.c.GetPrompt(ctx, p.Name, nil); err != nil {
			return fmt.Errorf("prompts/get %s: %w", p.Name, err)
		}
	}
	return nil
}

// contextToolCalls makes the tool calls the scenario's context lists
// (http-custom-headers), after listing the tools.
func contextToolCalls(ctx context.Context, s *session) error {
	var c struct {
		ToolCalls []struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"toolCalls"`
	}
	if err := json.Unmarshal(s.context, &c); err != nil {
		return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
	}
	if len(c.ToolCalls) == 0 {
		return errors.New("MCP_CONFORMANCE_CONTEXT lists no toolCalls")
	}
	if _, err := s.tools(ctx); err != nil {
		return err
	}
	for _, tc := range c.ToolCalls {
		if err := s.call(ctx, tc.Name, tc.Arguments); err != nil {
			return err
		}
	}
	return nil
}

// callEveryTool calls every tool the client lists, each required string
// argument given a value (http-invalid-tool-headers: a client keeps the
// valid tools and leaves out those with an invalid x-mcp-header).
func callEveryTool(ctx context.Context, s *session) error {
	tools, err := s.tools(ctx)
	if err != nil {
		return err
	}
	for _, t := range tools {
		var schema struct {
			Required []string `json:"required"`
		}
		_ = json.Unmarshal(t.InputSchema, &schema)
		args := map[string]any{}
		for _, r := range schema.Required {
			args[r] = "x"
		}
		if err := s.call(ctx, t.Name, args); err != nil {
			s.log.Info("tool call failed", "tool", t.Name, "error", err)
		}
	}
	return nil
}
