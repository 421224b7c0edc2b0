package transport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/snodo/snodo/jsonrpc"
)

// Sentinels for errors.Is. ErrConnection matches every connection error,
// ErrTimeout every timeout (the max-total-timeout one included), and
// ErrMaxTotalTimeout only the max-total-timeout one.
var (
	ErrConnection      = &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeConnectionClosed}
	ErrTimeout         = &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeRequestTimeout}
	ErrMaxTotalTimeout = errors.New("maximum total timeout exceeded")
)

// ErrSessionExpired is the cause of the error of a message that carried a
// session ID the server no longer knows (Streamable HTTP: 404 for its
// Mcp-Session-Id). A new session starts with initialize.
var ErrSessionExpired = errors.New("the server ended the session (404 for its session ID)")

// ErrNotDelivered marks the error of a request the server refused before
// handling it (a 404 to its POST for an expired session): sending it again
// cannot run it twice. An error without it may belong to a request the
// server has seen.
var ErrNotDelivered = errors.New("the request was not delivered")

// ConnectionError returns the error for a connection that is gone: -32000,
// kind transport, with cause as its cause (may be nil).
func ConnectionError(message string, cause error) *jsonrpc.Error {
	return &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeConnectionClosed, Message: message, Cause: cause}
}

// TimeoutError returns the error for a request that got no response within
// timeout: -32001, kind transport. Its data is {"timeout": milliseconds}.
func TimeoutError(timeout time.Duration) *jsonrpc.Error {
	return &jsonrpc.Error{
		Kind:    jsonrpc.KindTransport,
		Code:    jsonrpc.CodeRequestTimeout,
		Message: fmt.Sprintf("request timed out after %v", timeout),
		Data:    fmt.Appendf(nil, `{"timeout":%d}`, timeout.Milliseconds()),
	}
}

// MaxTotalTimeoutError returns the error for a request whose timeout was
// reset by progress until it reached its maximum total time: -32001, kind
// transport, wrapping ErrMaxTotalTimeout. Its data is
// {"maxTotalTimeout": milliseconds}.
func MaxTotalTimeoutError(maxTotal time.Duration) *jsonrpc.Error {
	return &jsonrpc.Error{
		Kind:    jsonrpc.KindTransport,
		Code:    jsonrpc.CodeRequestTimeout,
		Message: fmt.Sprintf("request exceeded its maximum total timeout of %v", maxTotal),
		Data:    fmt.Appendf(nil, `{"maxTotalTimeout":%d}`, maxTotal.Milliseconds()),
		Cause:   ErrMaxTotalTimeout,
	}
}

// ContextError returns the error of a request given up because ctx ended:
// -32001 for a deadline, -32603 for a cancellation, kind transport,
// wrapping ctx's error and its cause.
func ContextError(ctx context.Context) *jsonrpc.Error {
	cause := ctx.Err()
	if c := context.Cause(ctx); c != nil && c != cause {
		cause = fmt.Errorf("%w: %w", cause, c)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeRequestTimeout, Message: "request abandoned: context deadline exceeded", Cause: cause}
	}
	return &jsonrpc.Error{Kind: jsonrpc.KindTransport, Code: jsonrpc.CodeInternalError, Message: "request abandoned: context canceled", Cause: cause}
}
