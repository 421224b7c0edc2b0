package snodo

import (
	"errors"
	"fmt"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// Error is Snodo's one error type: a JSON-RPC error object with the kind
// of failure it is (server, transport, handler, protocol) and an optional
// cause. errors.Is and errors.As work on it; see jsonrpc.Error.
type Error = jsonrpc.Error

// Sentinels for errors.Is, each the cause of the *Error the client returns;
// match them with errors.Is.
var (
	// ErrNotInEra is returned, wrapped in a *Error, for a method or feature
	// that the connection's protocol era does not have (logging/setLevel in
	// 2026-07-28, server/discover in a legacy era).
	ErrNotInEra = errors.New("not supported in this protocol era")

	// ErrTooManyRounds is the cause of the error for a multi round-trip
	// request whose server kept asking for input beyond the round limit.
	ErrTooManyRounds = errors.New("too many input rounds")

	// ErrNoHandler is the cause of the error for an input request that no
	// configured Handler can answer.
	ErrNoHandler = errors.New("no handler for the requested client capability")

	// ErrUnsupportedVersion is the cause of the error for a server whose
	// protocol versions and Snodo's have nothing in common.
	ErrUnsupportedVersion = errors.New("no mutually supported protocol version")

	// ErrClientClosed is the cause of the -32000 error of a call whose
	// input handlers were still running when Close was called.
	ErrClientClosed = errors.New("snodo: client closed")
)

// The transport's sentinels, here so that the common checks need only this
// package. Match them with errors.Is, never with ==: the errors returned
// are new values that match them.
var (
	// ErrConnection matches every connection error: the server went away
	// or the transport was closed (-32000, kind transport).
	ErrConnection = transport.ErrConnection

	// ErrTimeout matches every timeout: a call with no response within its
	// timeout, including one that reached WithMaxTotalTimeout (-32001, kind
	// transport).
	ErrTimeout = transport.ErrTimeout

	// ErrOverflow matches the error that ends a Subscription whose buffer
	// overflowed under the default overflow policy (see WithBuffer).
	ErrOverflow = transport.ErrOverflow
)

func protocolError(code int64, cause error, format string, args ...any) *Error {
	return &Error{Kind: jsonrpc.KindProtocol, Code: code, Message: fmt.Sprintf(format, args...), Cause: cause}
}

// notInEra is the error for method in an era that lacks it. Its message
// ends with ErrNotInEra's text, which Error so says once.
func notInEra(what string, era Era) *Error {
	return protocolError(jsonrpc.CodeMethodNotFound, ErrNotInEra, "%s (%s era): %v", what, era, ErrNotInEra)
}

// badResult is the error for a result that cannot be decoded.
func badResult(method string, err error) *Error {
	return protocolError(jsonrpc.CodeInternalError, err, "invalid %s result", method)
}
