package jsonrpc

import "encoding/json"

// Message is one JSON-RPC message: a *Request, a *Notification or a
// *Response.
type Message interface {
	isMessage()
}

// Request is a JSON-RPC request: a method call that expects a response with
// the same ID.
type Request struct {
	ID     ID
	Method string
	// Params is the raw JSON of the params member; nil when absent.
	Params json.RawMessage
}

// Notification is a JSON-RPC notification: a method call without an ID,
// which gets no response.
type Notification struct {
	Method string
	Params json.RawMessage
}

// Response is a JSON-RPC response: exactly one of Result and Error is set.
type Response struct {
	ID     ID
	Result json.RawMessage
	Error  *Error
}

func (*Request) isMessage()      {}
func (*Notification) isMessage() {}
func (*Response) isMessage()     {}

// NewResult returns a success response for id.
func NewResult(id ID, result json.RawMessage) *Response {
	return &Response{ID: id, Result: result}
}

// NewErrorResponse returns an error response for id.
func NewErrorResponse(id ID, err *Error) *Response {
	return &Response{ID: id, Error: err}
}
