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
//   - one goroutine at a time reads stdout, and never waits for a caller,
//     a handler or a subscriber: responses go to buffered channels,
//     progress and subscription events to per-request queues,
//     server-to-client requests to the dispatcher. A caller of Request
//     that starts waiting while nobody reads reads for itself until its
//     response comes (a sequential client wakes no other goroutine); while
//     calls are waiting for one another, and while none is in flight, the
//     connection's background reader does, taking over at most a
//     millisecond after the last response;
//   - each message goes to stdin with one Write under a mutex. A small
//     message (up to PIPE_BUF, written atomically) is written by its sender
//     when the pipe has room and nothing is queued; otherwise it is queued
//     for one writer goroutine, which joins queued messages into one Write
//     and is the only one ever to wait for room. A server that stops reading
//     its stdin therefore blocks only that goroutine: timeouts, contexts and
//     Close still work. The writer takes one Write's worth of messages at a
//     time; a message whose sender gives up (a timeout, a context, a closed
//     subscription, a withdrawn notification) before the writer has taken
//     it leaves the queue and frees its bytes at once, while the one the
//     writer is in the middle of is always written whole, so the server
//     never sees a cut line. Config.MaxQueuedBytes (default 64 MiB, four
//     times the default line limit) caps the bytes waiting: a message that
//     would pass it fails at once with a -32000 error wrapping
//     ErrQueueFull, and the connection stays up for a server that resumes
//     reading. A message larger than the cap is accepted when nothing else
//     waits;
//   - one goroutine waits for the server process, so the child is always
//     reaped.
//
// The server's stderr is not captured: it goes to Config.Stderr (default:
// inherited).
//
// See the MCP specification, basic/transports/stdio.mdx.
package stdio
