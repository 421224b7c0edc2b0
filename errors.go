package snodo

import (
	"errors"
	"fmt"

	"github.com/snodo/snodo/jsonrpc"
)

// Error is Snodo's one error type: a JSON-RPC error object with the kind
// of failure it is (server, transport, handler, protocol) and an optional
// cause. errors.Is and errors.As work on it; see jsonrpc.Error.
type Error = jsonrpc.Error

// Sentinels for errors.Is, each the cause of the *Error the client returns.
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

func protocolError(code int64, cause error, format string, args ...any) *Error {
	return &Error{Kind: jsonrpc.KindProtocol, Code: code, Message: fmt.Sprintf(format, args...), Cause: cause}
}

// notInEra is the error for method in an era that lacks it.
func notInEra(what string, era Era) *Error {
	return protocolError(jsonrpc.CodeMethodNotFound, ErrNotInEra, "%s is not supported in the %s era", what, era)
}

// badResult is the error for a result that cannot be decoded.
func badResult(method string, err error) *Error {
	return protocolError(jsonrpc.CodeInternalError, err, "invalid %s result", method)
}
