package jsonrpc

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Kind says which layer produced an Error.
type Kind string

const (
	// KindServer is an error response sent by the server.
	KindServer Kind = "server"
	// KindTransport is a failure of the connection itself: it closed, a
	// request timed out, a write failed.
	KindTransport Kind = "transport"
	// KindHandler is a failure of a handler answering the server: a Go
	// handler that returned an error or panicked, a Wasm module that trapped.
	KindHandler Kind = "handler"
	// KindProtocol is a message that breaks the protocol: invalid JSON, a
	// response of the wrong shape, an unsupported version.
	KindProtocol Kind = "protocol"
)

// Error codes. The first five are JSON-RPC 2.0's; the rest are MCP's or the
// client-side codes the official TypeScript SDK uses for the same conditions.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	// CodeConnectionClosed is a client-side code: the connection to the
	// server is gone (the server exited, or a write to it failed).
	CodeConnectionClosed = -32000
	// CodeRequestTimeout is a client-side code: no response came in time.
	CodeRequestTimeout = -32001
	// CodeUnsupportedProtocolVersion is MCP's error for a request whose
	// protocol version the server does not support (2026-07-28).
	CodeUnsupportedProtocolVersion = -32022
	// CodeHeaderMismatch is MCP's error (2026-07-28, Streamable HTTP) for
	// a request whose HTTP headers do not match its body, or lack a
	// required header.
	CodeHeaderMismatch = -32020
	// CodeMissingRequiredClientCapability is MCP's error (2026-07-28) for
	// a request that needs a client capability the client did not declare.
	CodeMissingRequiredClientCapability = -32021
	// CodeURLElicitationRequired is MCP 2025-11-25's error asking the client
	// to complete a URL elicitation first.
	CodeURLElicitationRequired = -32042
)

// Error is the one error type of Snodo: a JSON-RPC error object (code,
// message, data) with the kind of failure it is and, optionally, the Go
// error that caused it.
//
// errors.Is(err, target) with a target *Error matches when the target's Code
// (if non-zero) and Kind (if non-empty) equal err's, so sentinel values such
// as transport.ErrTimeout match every timeout. errors.As(err, &e) finds it in
// a chain. Unwrap returns the cause.
type Error struct {
	Kind    Kind            `json:"-"`
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`

	// Cause is the underlying Go error, if any. It is not sent on the wire.
	Cause error `json:"-"`
}

// NewError returns an Error of the given kind, code and message.
func NewError(kind Kind, code int64, message string) *Error {
	return &Error{Kind: kind, Code: code, Message: message}
}

// Error implements the error interface.
func (e *Error) Error() string {
	b := make([]byte, 0, 32+len(e.Message))
	if e.Kind != "" {
		b = append(b, e.Kind...)
		b = append(b, ' ')
	}
	b = append(b, "error "...)
	b = strconv.AppendInt(b, e.Code, 10)
	b = append(b, ": "...)
	b = append(b, e.Detail()...)
	return string(b)
}

// Detail is the message followed by the cause's text, saying once what the
// two share: a message that already ends with its cause's text ("POST
// failed: Post \"…\": EOF" caused by that EOF), or with the cause's first
// part ("request abandoned: context canceled" caused by "context canceled:
// the server went away"), is not followed by it again.
func (e *Error) Detail() string {
	if e.Cause == nil {
		return e.Message
	}
	return mergeCause(e.Message, e.Cause.Error())
}

// mergeCause joins msg and cause with ": ", leaving out what msg already
// ends with: the whole cause, or its first ": "-separated part. It looks at
// those two overlaps only, so it takes time linear in the lengths.
func mergeCause(msg, cause string) string {
	if cause == "" {
		return msg
	}
	ends := func(part string) bool {
		return msg == part || strings.HasSuffix(msg, ": "+part)
	}
	if ends(cause) {
		return msg
	}
	if i := strings.Index(cause, ": "); i > 0 && ends(cause[:i]) {
		return msg + cause[i:]
	}
	return msg + ": " + cause
}

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Cause }

// Is reports whether target is an *Error with the same Code (unless the
// target's Code is 0) and the same Kind (unless the target's Kind is empty).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t == nil {
		return false
	}
	return (t.Code == 0 || t.Code == e.Code) && (t.Kind == "" || t.Kind == e.Kind)
}

// WithData returns a copy of e with Data set to the raw JSON value data.
func (e *Error) WithData(data json.RawMessage) *Error {
	c := *e
	c.Data = data
	return &c
}

// AppendJSON appends the error object's wire form to dst.
func (e *Error) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, e.Code, 10)
	dst = append(dst, `,"message":`...)
	dst = appendString(dst, e.Message)
	if len(e.Data) > 0 {
		dst = append(dst, `,"data":`...)
		dst = append(dst, e.Data...)
	}
	return append(dst, '}')
}

// MarshalJSON implements json.Marshaler.
func (e *Error) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }
