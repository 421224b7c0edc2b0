// Package transport is the contract between the Snodo client and the
// connection underneath it.
//
// A Transport moves one complete JSON-RPC request to a server and returns the
// complete JSON-RPC response. The client builds the request and decodes the
// response, so a transport never interprets result or error. Optional
// capabilities — sending notifications, deleting a session, opening a
// subscriptions/listen stream — are small separate interfaces, discovered
// with a type assertion the way io.WriterTo is.
//
// Failures of the connection itself are *jsonrpc.Error values of kind
// jsonrpc.KindTransport, made by ConnectionError (-32000), TimeoutError and
// MaxTotalTimeoutError (-32001): the codes the official TypeScript SDK uses
// for the same client-side conditions.
package transport

import (
	"context"
	"encoding/json"
	"time"

	"github.com/snodo/snodo/jsonrpc"
)

// Transport moves one request and returns its response.
type Transport interface {
	// Request sends req and waits for its response, which it returns as it
	// came, result or error: an error response from the server is a
	// *jsonrpc.Response with Error set, not a Go error. The Go error is for
	// failures of the transport itself (connection, timeout, ctx).
	//
	// If req.ID is the zero ID the transport assigns one that is unique on
	// the connection; the response carries it. A caller that sets IDs itself
	// must not reuse one that is still in flight.
	//
	// When ctx ends first, Request returns ctx's error (wrapped in a
	// transport error) and tells the server the request is cancelled.
	Request(ctx context.Context, req *jsonrpc.Request, opts RequestOptions) (*jsonrpc.Response, error)

	// Close closes the connection. Requests in flight and later requests
	// fail with a connection error (-32000).
	Close() error
}

// Notifier is implemented by a transport that can send notifications. The
// client needs it for notifications/initialized, so a transport without it
// cannot open an initialize-era connection.
type Notifier interface {
	// Notify sends a notification and returns once the transport has
	// delivered it (for stdio: once the line is written to the pipe).
	Notify(ctx context.Context, n *jsonrpc.Notification, opts NotifyOptions) error
}

// SessionDeleter is implemented by a transport with server-issued sessions
// (Streamable HTTP sends a DELETE). The client calls it before Close when
// the server issued a session ID. It is HTTP-only: stdio has no sessions
// and does not implement it.
type SessionDeleter interface {
	DeleteSession(ctx context.Context, opts SessionOptions) error
}

// Listener is implemented by a transport that can carry a
// subscriptions/listen stream.
type Listener interface {
	// Listen sends req (a subscriptions/listen request), waits up to
	// opts.Timeout for the server's notifications/subscriptions/acknowledged,
	// and returns the filter from the acknowledgement and the subscription
	// that receives the stream. A JSON-RPC error response before the
	// acknowledgement is returned as a *jsonrpc.Error of kind server.
	//
	// The subscription is owned by ctx: when ctx ends, the subscription is
	// closed and the server told so.
	Listen(ctx context.Context, req *jsonrpc.Request, opts ListenOptions) (accepted json.RawMessage, sub *Subscription, err error)
}

// Inbound is implemented by a transport whose connection outlives one
// request (stdio), so that the client can answer, for the whole connection,
// the requests the server sends and receive the notifications the transport
// does not route itself (progress and subscription events are routed to
// their requests). The client calls SetInbound before its first request; a
// later call replaces the functions for messages that arrive after it.
//
// The transport only moves bytes and IDs: it hands each server request to
// onRequest, which decides whether and where it runs (the client admits
// every server request, of either era, under one limit), and writes the
// one answer given to the ReplyFunc.
//
// Streamable HTTP implements it too: the server requests of any of its
// streams (the initialize era's GET stream and the response streams of
// requests) go to onRequest. It is the one way a server request reaches
// the client: a transport that carries server requests implements it.
type Inbound interface {
	SetInbound(onRequest DispatchFunc, onNotification NotificationFunc)
}

// DispatchFunc receives a request the server sends to the client. It runs
// in the transport's reader and must not block. Either it answers at once,
// calling reply, and returns nil; or it returns the work that answers the
// request, which must call reply exactly once. The transport runs the work
// in a goroutine of its own, or in the goroutine that read the request
// after handing reading on to another: stdio does so when the reader is a
// caller waiting for its response and no other call is in flight, which
// saves starting and waking a goroutine per server request.
//
// ctx ends when the server cancels the request (notifications/cancelled)
// or the connection stops; a reply after that is not sent (MCP: the
// receiver of a cancellation does not respond). Work run by a caller also
// sees that call's deadline and the end of its context in ctx (the caller
// cannot return before the work does); its reply is still sent.
type DispatchFunc func(ctx context.Context, req *jsonrpc.Request, reply ReplyFunc) (work func())

// ReplyFunc answers one server request: the result to send back, or an
// error. A *jsonrpc.Error is sent with its code, message and data; any
// other error as -32603 with its text; a nil result as {}. Calls after the
// first do nothing.
type ReplyFunc func(result json.RawMessage, err error)

// NotificationFunc receives a notification from the server, such as
// notifications/message. It must not block: it runs in the transport's
// reader.
type NotificationFunc func(n *jsonrpc.Notification)

// Header is one transport header, such as MCP-Protocol-Version. Transports
// without headers ignore them.
type Header struct {
	Name, Value string
}

// Policy is what a dialect or an extension asks of a transport for one
// request: today, headers to add. Transports without headers ignore it.
type Policy struct {
	Headers []Header
}

// PolicySource is what a transport asks for a request's Policy: the
// protocol dialect that built the request (HTTP derives headers such as
// MCP-Protocol-Version and Mcp-Method from it), or an optional protocol
// extension of the request's method (HTTP asks it for extension routing
// headers). Transports without headers (stdio) ignore it.
type PolicySource interface {
	TransportPolicy(req *jsonrpc.Request) Policy
}

// ServerRequestFunc answers a request that the server sends to the client
// (such as elicitation/create on an initialize-era connection), for a
// transport used without the Snodo client (see stdio.Config and
// http.Config). It receives the request as sent and returns the result to
// send back, or an error: a *jsonrpc.Error is sent with its code, message
// and data; any other error is sent as -32603 with its text.
//
// ctx is cancelled when the server cancels the request or the connection
// stops; an answer returned after that is not sent.
type ServerRequestFunc func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error)

// ProgressFunc receives the params of each notifications/progress whose
// progressToken is the request's params._meta.progressToken. It runs in the
// goroutine that called Request, never in the transport's reader. An error
// (or a panic) cancels the request on the server, and Request returns that
// failure.
type ProgressFunc func(params json.RawMessage) error

// RequestOptions are the per-request options of the transport contract.
//
// Dialect, Extension, Headers and OnResponseHeaders are HTTP-only: stdio
// ignores them, and a Streamable HTTP transport implements them. Server
// requests, whatever carries them, reach the client through Inbound.
type RequestOptions struct {
	// Timeout is how long to wait for the response; 0 means no limit other
	// than ctx. When it passes, Request returns TimeoutError and the server
	// is sent notifications/cancelled for the request.
	Timeout time.Duration

	// Dialect is the protocol dialect that built the request. HTTP-only:
	// HTTP derives headers from it; stdio ignores it.
	Dialect PolicySource

	// Extension is an optional extension for the request's method.
	// HTTP-only: HTTP asks it for routing headers; stdio ignores it.
	Extension PolicySource

	// Headers are request headers the caller adds, after (and over) those
	// of Dialect and Extension: the client gives the Mcp-Session-Id of an
	// initialize-era session and the Mcp-Param-{Name} headers of a
	// 2026-07-28 tools/call, and only to a transport that carries headers
	// (HeaderCarrier). HTTP-only: stdio ignores them.
	Headers []Header

	// OnResponseHeaders, when set, is called in the caller's goroutine with
	// the response headers (lowercase names) before Request returns.
	// HTTP-only: transports without headers (stdio) never call it.
	OnResponseHeaders func([]Header)

	// OnProgress, when set, receives the request's progress notifications.
	OnProgress ProgressFunc

	// ProgressToken is the token the caller put in the request's
	// params._meta.progressToken, given here so that the transport routes
	// progress without reading params again. With OnProgress set and no
	// ProgressToken, a transport reads the token from params.
	ProgressToken jsonrpc.ID

	// ResetTimeoutOnProgress restarts Timeout at each delivered progress
	// notification, up to MaxTotalTimeout after the request started; past
	// that, Request fails with MaxTotalTimeoutError.
	ResetTimeoutOnProgress bool

	// MaxTotalTimeout bounds the request's whole life when
	// ResetTimeoutOnProgress is set; 0 means no bound.
	MaxTotalTimeout time.Duration
}

// NotifyOptions are the options of Notifier.Notify.
type NotifyOptions struct {
	Timeout time.Duration
	// Dialect and Headers are HTTP-only, as in RequestOptions: stdio
	// ignores them; a Streamable HTTP transport sends the headers.
	Dialect PolicySource
	Headers []Header
}

// SessionOptions are the options of SessionDeleter.DeleteSession, which
// only a Streamable HTTP transport implements.
type SessionOptions struct {
	Timeout time.Duration
	// Headers are HTTP-only, as in RequestOptions.
	Headers []Header
}

// ListenOptions are the options of Listener.Listen.
type ListenOptions struct {
	// Timeout is how long to wait for the acknowledgement; 0 means no limit
	// other than ctx.
	Timeout time.Duration
	// Dialect and Headers are HTTP-only, as in RequestOptions: stdio
	// ignores them; a Streamable HTTP transport sends the headers.
	Dialect PolicySource
	Headers []Header

	// MaxBuffer is the most events held for the consumer; 0 means
	// DefaultMaxBuffer.
	MaxBuffer int
	// Overflow says what happens when an event arrives to a full buffer.
	Overflow OverflowPolicy
}

// StreamWatcher is implemented by a transport on which the server's own
// messages, those of no request, arrive on a stream that can end while the
// connection stays up: Streamable HTTP's standalone GET stream of the
// initialize era. The client ends its emulated subscriptions then, since
// their events came on that stream.
type StreamWatcher interface {
	// OnStreamLost installs fn, called in a goroutine of the transport
	// each time that stream ends for good — the server forgot the session
	// (its error wraps ErrSessionExpired), refused the stream, or
	// reopening it failed too often — but not when the server offers no
	// such stream, nor at Close. err is a -32000 connection error. fn must
	// not block.
	OnStreamLost(fn func(err error))
}
