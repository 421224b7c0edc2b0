// Package stdio is Snodo's stdio transport: it starts an MCP server as a
// child process, writes one JSON-RPC message per line to its stdin and reads
// newline-delimited messages from its stdout.
//
// Connect starts the server and returns a *Conn, which implements
// transport.Transport, transport.Notifier, transport.Listener and
// transport.Inbound. Any number of goroutines may have requests in flight
// at once; responses are correlated by ID.
//
// Inside a Conn:
//
//   - one reader goroutine reads stdout and never waits for a caller, a
//     handler or a subscriber: responses go to buffered channels, progress
//     and subscription events to per-request queues, server-to-client
//     requests to their own goroutines;
//   - one writer goroutine writes queued messages to stdin, each message with
//     one Write, so that a server that stops reading its stdin blocks only
//     that goroutine: timeouts, contexts and Close still work;
//   - one goroutine waits for the server process, so the child is always
//     reaped.
//
// The server's stderr is not captured: it goes to Config.Stderr (default:
// inherited).
//
// See the MCP specification, basic/transports/stdio.mdx.
package stdio
