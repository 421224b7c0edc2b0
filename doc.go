// Package snodo is a Model Context Protocol client runtime.
//
// A Client talks to one MCP server over any transport.Transport (the stdio
// transport is in transport/stdio), speaks both protocol eras — the legacy
// initialize handshake (2024-11-05 … 2025-11-25) and the stateless
// 2026-07-28 revision — and answers what the server asks of the client
// (elicitation, sampling, roots) with Handlers, which may be native Go or
// sandboxed WebAssembly modules (handlers/wasm).
//
// Connect probes the server with server/discover and falls back to
// initialize for a legacy server; the chosen era and version are kept for
// the connection (Client.Server: Era, ProtocolVersion), and every request is
// built for them. The typed API covers what a client calls —
// tools, resources, prompts, completion, and the legacy-only ping and
// logging/setLevel — with iter.Seq2 iterators over paginated lists;
// Listen subscribes to notifications in both eras (resources/subscribe in
// a legacy one); Client.Request sends anything else.
//
// Handlers are registered per method in Options.Handlers, and the client
// advertises exactly the capabilities they answer. The same Handler
// answers a legacy server's elicitation/create request and an input
// request of a 2026-07-28 input_required result: the client runs the
// handlers, then retries the request with their answers and the server's
// requestState, for a bounded number of rounds.
//
// A tool call the server runs as a task — legacy experimental tasks, or the
// 2026-07-28 extension io.modelcontextprotocol/tasks — is followed to its
// end by CallTool: it polls at the server's interval, within bounds, answers
// the task's input requests with the same Handlers, and returns the
// result. WithTask returns the task instead (a *tasks.Task, package
// github.com/snodo/snodo/tasks), for GetTask, WaitTask, CancelTask and
// Tasks.
//
// Every failure is a *Error (jsonrpc.Error): kind, code, message, data,
// cause; errors.Is and errors.As work.
package snodo
