// Package http is the Streamable HTTP transport of Snodo: an MCP client's
// side of a server at an HTTP endpoint, in both protocol eras.
//
// Every request is a POST to the endpoint, answered with one JSON body or a
// Server-Sent Events stream that carries the request's progress and log
// notifications (and, before 2026-07-28, the server's own requests) before
// its response. The package name clashes with net/http: import it under
// another name, such as mcphttp.
//
//	t, err := mcphttp.New(mcphttp.Config{URL: "https://example.com/mcp"})
//	…
//	c, err := snodo.Connect(ctx, t, nil)
//	defer c.Close() // DELETEs an initialize-era session, then closes t
//
// In the initialize era (2025-03-26 … 2025-11-25) the transport also opens
// the standalone GET stream once notifications/initialized has been sent,
// answers server requests with a POST of the response, resumes a broken
// stream with GET and Last-Event-ID (waiting as the server's retry field
// says), and cancels a request with a POST of notifications/cancelled. The
// client carries the Mcp-Session-Id the server issued in every request and
// deletes the session at Close; when the server answers 404 for it, the
// client starts a new session and sends a refused request once more. The
// end for good of the GET stream goes to OnStreamLost.
//
// In the 2026-07-28 era every request is self-contained: the transport
// sends the Mcp-Method and Mcp-Name headers (from the client's dialect) and
// the Mcp-Param-{Name} headers of annotated tool arguments (from the
// client), cancels a request by closing its response stream, and carries
// subscriptions/listen on the response stream of its POST. A stream that
// breaks before its response fails the request with a -32000 connection
// error; nothing is sent again behind the caller's back.
//
// A request, listen or notification whose context holds an OpenTelemetry
// span context also carries its W3C traceparent and tracestate headers
// (unless the caller's RequestOptions.Headers give a traceparent), for an
// HTTP proxy or server that traces by headers; the span's context is in
// the message's _meta too. A context without one adds nothing.
//
// Failures are the errors of package transport: -32000 (ConnectionError)
// for the connection, wrapping a *transport.StatusError for an HTTP failure
// status such as 401 (with its WWW-Authenticate header), and -32001 for
// timeouts. A 4xx answer whose body is a JSON-RPC error response is
// returned as that response, as any other error response.
//
// Every byte from the server is bounded by Config.MaxMessageBytes: a JSON
// body, and each SSE event. Text from the server that reaches an error
// message is capped and escaped.
//
// The package also holds the HTTP+SSE transport of protocol 2024-11-05
// (SSE, opened with DialSSE on the same Config), for servers that speak
// only that: it shares this transport's HTTP client and redirect policy,
// its SSE reader and bounds, and the call core of every transport. The
// server's endpoint event must name a URL of Config.URL's origin.
package http
