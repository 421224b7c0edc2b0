// Package runtime assembles one running MCP client from one Config value:
// the server process, started as the leader of its own process group, and
// its stdio connection; the client, speaking the era Config.Protocol asks
// for (probing by default); the Wasm handler modules answering what the
// server asks (elicitation, sampling, roots) in both eras; the progress and
// subscription consumer modules; and one concurrency limit,
// Config.MaxServerRequests, shared by the requests a legacy server sends
// and the input requests of a 2026-07-28 server.
//
//	rt, err := runtime.Start(ctx, runtime.Config{
//		Server:   runtime.Server{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"}},
//		Handlers: []runtime.HandlerModule{{ModuleConfig: runtime.ModuleConfig{Path: "elicit-policy.wasm"}}},
//	})
//	if err != nil {
//		return err
//	}
//	defer rt.Close(context.Background())
//	res, err := rt.Client().CallTool(ctx, "trigger-elicitation-request", nil)
//
// Close shuts the server down the way MCP's stdio transport asks: its stdin
// is closed and it is given a grace period to exit; then its process group
// gets SIGTERM, and after another grace period SIGKILL, so that whatever the
// server started (npx, uvx, a shell wrapper) goes with it. Errors about a
// server that exited carry its exit status and the tail of its stderr.
//
// A remote server is reached over Streamable HTTP instead (Server.URL, with
// Server.Header for credentials): the same client, handlers and limit, and
// no process; Close ends the server's session. A server that refuses the
// Streamable HTTP initialize with 400, 404 or 405 is reached over the
// HTTP+SSE transport of 2024-11-05 at the same URL (Server.Transport).
//
// The snodo-run command is a thin layer over this package.
//
// Its name is the standard library's too: a file that needs both imports
// the standard library's under another name, as Kubernetes does beside
// k8s.io/apimachinery/pkg/runtime:
//
//	import (
//		goruntime "runtime"
//
//		"github.com/snodo/snodo/runtime"
//	)
package runtime
