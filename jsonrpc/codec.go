package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bytedance/sonic"

	"github.com/snodo/snodo/internal/jsoncodec"
)

// wire is the union of every JSON-RPC message's members, as decoded.
//
// Raw members are sonic.NoCopyRawMessage: they refer to the decoded line
// instead of copying it, so an 8 MiB result is not copied again here.
type wire struct {
	JSONRPC string                 `json:"jsonrpc"`
	ID      sonic.NoCopyRawMessage `json:"id"`
	Method  *string                `json:"method"`
	Params  sonic.NoCopyRawMessage `json:"params"`
	Result  sonic.NoCopyRawMessage `json:"result"`
	Error   *wireError             `json:"error"`
}

type wireError struct {
	Code    *int64                 `json:"code"`
	Message string                 `json:"message"`
	Data    sonic.NoCopyRawMessage `json:"data"`
}

// Decode parses one JSON-RPC message. The returned message may refer to
// data's memory, so data must not be modified afterwards.
//
// A message that is not JSON is a *Error with CodeParseError; JSON that is
// not a valid JSON-RPC 2.0 message is a *Error with CodeInvalidRequest. Both
// are of KindProtocol. Error objects inside responses are of KindServer.
func Decode(data []byte) (Message, error) {
	var w wire // on the stack: only the scan sees it
	if scanEnvelope(data, &w) {
		return message(&w)
	}
	return decodeSlow(data)
}

// decodeSlow decodes data with the decoder.
func decodeSlow(data []byte) (Message, error) {
	var w wire
	// jsoncodec.Unmarshal decodes a string that shares data's memory:
	// sonic's Unmarshal would copy the whole line into a string first. data
	// is not modified (see the doc comment), so the string stays immutable.
	if err := jsoncodec.Unmarshal(data, &w); err != nil {
		return nil, &Error{Kind: KindProtocol, Code: CodeParseError, Message: "invalid JSON", Cause: err}
	}
	return message(&w)
}

// message checks the decoded members and builds the message.
func message(w *wire) (Message, error) {
	if w.JSONRPC != "2.0" {
		return nil, invalid(`"jsonrpc" must be "2.0"`)
	}
	id, err := parseID(w.ID)
	if err != nil {
		return nil, invalid(err.Error())
	}
	if w.Method != nil {
		if w.Result != nil || w.Error != nil {
			return nil, invalid("a message with a method cannot have a result or an error")
		}
		if !validParams(w.Params) {
			return nil, invalid(`"params" must be an object or an array`)
		}
		if w.ID == nil {
			return &Notification{Method: *w.Method, Params: json.RawMessage(w.Params)}, nil
		}
		if !id.IsValid() {
			return nil, invalid("a request id cannot be null")
		}
		return &Request{ID: id, Method: *w.Method, Params: json.RawMessage(w.Params)}, nil
	}
	if w.ID == nil {
		return nil, invalid(`a message needs a "method" or an "id"`)
	}
	switch {
	case w.Error != nil && w.Result != nil:
		return nil, invalid("a response cannot have both a result and an error")
	case w.Error != nil:
		if w.Error.Code == nil {
			return nil, invalid(`an error object needs a "code"`)
		}
		e := &Error{Kind: KindServer, Code: *w.Error.Code, Message: w.Error.Message, Data: json.RawMessage(w.Error.Data)}
		return &Response{ID: id, Error: e}, nil
	case w.Result != nil:
		if !id.IsValid() {
			return nil, invalid("a result response cannot have a null id")
		}
		return &Response{ID: id, Result: json.RawMessage(w.Result)}, nil
	default:
		return nil, invalid(`a response needs a "result" or an "error"`)
	}
}

func validParams(p []byte) bool {
	p = trimSpace(p)
	return len(p) == 0 || p[0] == '{' || p[0] == '['
}

func invalid(msg string) *Error {
	return &Error{Kind: KindProtocol, Code: CodeInvalidRequest, Message: "invalid JSON-RPC message: " + msg}
}

// ErrInvalidJSON is the cause of an encoding error for a Params or Result that
// is not valid JSON.
var ErrInvalidJSON = errors.New("jsonrpc: raw value is not valid JSON")

// Append appends the wire form of m to dst, without a trailing newline.
//
// Raw values (Params, Result, Data) are written as they are, except that a
// value containing a line break is compacted first, so that a message is
// always one line; a value that is then found not to be valid JSON is an
// error wrapping ErrInvalidJSON.
func Append(dst []byte, m Message) ([]byte, error) {
	var err error
	switch m := m.(type) {
	case *Request:
		if !m.ID.IsValid() {
			return dst, errors.New("jsonrpc: a request needs an id")
		}
		dst = append(dst, `{"jsonrpc":"2.0","id":`...)
		dst = m.ID.AppendJSON(dst)
		dst = append(dst, `,"method":`...)
		dst = appendString(dst, m.Method)
		if dst, err = appendRaw(dst, `,"params":`, m.Params); err != nil {
			return dst, err
		}
	case *Notification:
		dst = append(dst, `{"jsonrpc":"2.0","method":`...)
		dst = appendString(dst, m.Method)
		if dst, err = appendRaw(dst, `,"params":`, m.Params); err != nil {
			return dst, err
		}
	case *Response:
		dst = append(dst, `{"jsonrpc":"2.0","id":`...)
		dst = m.ID.AppendJSON(dst)
		if m.Error != nil {
			dst = append(dst, `,"error":`...)
			e := m.Error
			if bytes.ContainsAny(e.Data, "\r\n") {
				c := *e
				if c.Data, err = compact(e.Data); err != nil {
					return dst, err
				}
				e = &c
			}
			dst = e.AppendJSON(dst)
		} else {
			result := m.Result
			if len(result) == 0 {
				result = json.RawMessage("null")
			}
			if dst, err = appendRaw(dst, `,"result":`, result); err != nil {
				return dst, err
			}
		}
	default:
		return dst, fmt.Errorf("jsonrpc: cannot encode %T", m)
	}
	return append(dst, '}'), nil
}

// Encode returns the wire form of m, without a trailing newline.
func Encode(m Message) ([]byte, error) { return Append(nil, m) }

func appendRaw(dst []byte, member string, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return dst, nil
	}
	if bytes.ContainsAny(raw, "\r\n") {
		c, err := compact(raw)
		if err != nil {
			return dst, err
		}
		raw = c
	}
	dst = append(dst, member...)
	return append(dst, raw...), nil
}

func compact(raw []byte) ([]byte, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	return b.Bytes(), nil
}

// unquote decodes a JSON string literal.
func unquote(b []byte) (string, error) {
	var s string
	err := sonic.ConfigStd.Unmarshal(b, &s)
	return s, err
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does.
func appendString(dst []byte, s string) []byte { return jsoncodec.AppendStringValid(dst, s) }
