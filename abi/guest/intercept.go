package guest

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/snodo/snodo/abi"
)

// Interceptors (ABI version 2, abi/ABI.md section 8): a module that
// registers one declares "abi": 2 and "intercept" in its manifest; one
// that registers none stays a version-1 module.
var (
	onRequest        func(Context, InterceptRequest) (Decision, error)
	onResult         func(Context, InterceptResult) (Decision, error)
	interceptMethods []string
)

// InterceptRequest is a request the client is about to send the server
// (ABI.md section 8.2): method, params, the server's name for itself (its
// word, not the operator's), the caller when the client knows, the era
// and the negotiated version.
type InterceptRequest = abi.InterceptRequest

// InterceptResult is the server's answer to a request (ABI.md section
// 8.3): exactly one of Result and Error is set.
type InterceptResult = abi.InterceptResult

// Decision is what an interceptor answers; the zero Decision (Pass) lets
// the request or the answer through unchanged. To deny, return an error:
// an *Error is the reason the caller sees, any other error becomes one
// with code -32603.
type Decision struct {
	status abi.Status
	output []byte
}

// Pass lets the request go, or the answer pass, unchanged.
func Pass() Decision { return Decision{} }

// RewriteParams sends the request with params instead (requests only): a
// JSON object that keeps what the request addresses (ABI.md section 8.2).
func RewriteParams(params json.RawMessage) Decision {
	return Decision{status: abi.StatusReplace, output: params}
}

// ReplaceResult gives the caller result, a JSON object, instead of the
// server's answer (results only).
func ReplaceResult(result json.RawMessage) Decision {
	out := append([]byte(`{"result":`), result...)
	return Decision{status: abi.StatusReplace, output: append(out, '}')}
}

// ReplaceError gives the caller e, as if the server had answered it,
// instead of the server's answer (results only).
func ReplaceError(e *Error) Decision {
	b, err := e.appendJSON([]byte(`{"error":`))
	if err != nil {
		b, _ = (&Error{Code: e.Code, Message: e.Message}).appendJSON([]byte(`{"error":`))
	}
	return Decision{status: abi.StatusReplace, output: append(b, '}')}
}

// InterceptRequests makes the module a request interceptor: f sees each
// request of the methods listed (all of them when none is) before it is
// sent. The methods are shared with InterceptResults: the last list given
// applies to both.
func InterceptRequests(f func(Context, InterceptRequest) (Decision, error), methods ...string) {
	onRequest = f
	if len(methods) > 0 {
		interceptMethods = methods
	}
}

// InterceptResults makes the module a result interceptor: f sees the
// server's answer to each request of the methods listed (all when none
// is) before the client's caller does.
func InterceptResults(f func(Context, InterceptResult) (Decision, error), methods ...string) {
	onResult = f
	if len(methods) > 0 {
		interceptMethods = methods
	}
}

// intercept runs an interceptor entry point on the call's input.
func intercept(export string, input, out []byte) (abi.Status, []byte) {
	var d Decision
	var err error
	switch export {
	case abi.ExportInterceptRequest:
		if onRequest == nil {
			return errorOutput(out, errors.New("module does not intercept requests"))
		}
		var r InterceptResult
		if err := decodeEnvelope(input, &r); err != nil {
			return errorOutput(out, &Error{Code: -32602, Message: "invalid intercept envelope: " + err.Error()})
		}
		d, err = onRequest(Context{Method: r.Method}, r.InterceptRequest)
	case abi.ExportInterceptResult:
		if onResult == nil {
			return errorOutput(out, errors.New("module does not intercept results"))
		}
		var r InterceptResult
		if err := decodeEnvelope(input, &r); err != nil {
			return errorOutput(out, &Error{Code: -32602, Message: "invalid intercept envelope: " + err.Error()})
		}
		d, err = onResult(Context{Method: r.Method}, r)
	}
	if err != nil {
		return errorOutput(out, err)
	}
	if d.status == abi.StatusOK {
		return abi.StatusOK, nil
	}
	return d.status, append(out[:0], bytes.TrimSpace(d.output)...)
}

// interceptManifest is the manifest's "intercept", or nil.
func interceptManifest() *abi.Intercept {
	if onRequest == nil && onResult == nil {
		return nil
	}
	return &abi.Intercept{Requests: onRequest != nil, Results: onResult != nil, Methods: interceptMethods}
}

// decodeEnvelope reads an interceptor's input into r: one copy of the
// input, which the raw values (params, result, error) share, and the
// short strings decoded with encoding/json. Under Wasm, encoding/json on a
// whole 1 MiB result costs a hundred times more than this walk.
func decodeEnvelope(input []byte, r *InterceptResult) error {
	data := bytes.Clone(input)
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return errors.New("not a JSON object")
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return errors.New("want a key")
		}
		kEnd, err := skipValue(data, i)
		if err != nil {
			return err
		}
		var key string
		if err := json.Unmarshal(data[i:kEnd], &key); err != nil {
			return err
		}
		i = skipSpace(data, kEnd)
		if i >= len(data) || data[i] != ':' {
			return errors.New("want : after a key")
		}
		i = skipSpace(data, i+1)
		vEnd, err := skipValue(data, i)
		if err != nil {
			return err
		}
		v := data[i:vEnd]
		switch key {
		case "method":
			err = json.Unmarshal(v, &r.Method)
		case "server":
			err = json.Unmarshal(v, &r.Server)
		case "caller":
			err = json.Unmarshal(v, &r.Caller)
		case "era":
			err = json.Unmarshal(v, &r.Era)
		case "protocolVersion":
			err = json.Unmarshal(v, &r.ProtocolVersion)
		case "params":
			r.Params = v
		case "result":
			r.Result = v
		case "error":
			r.Error = v
		}
		if err != nil {
			return err
		}
		i = skipSpace(data, vEnd)
		if i >= len(data) {
			return errors.New("unexpected end")
		}
		if data[i] == '}' {
			return nil
		}
		if data[i] != ',' {
			return errors.New("want , or }")
		}
		i = skipSpace(data, i+1)
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value at data[i:], which the host
// has checked: strings are skipped by their quotes and escapes, objects
// and arrays by their depth.
func skipValue(data []byte, i int) (int, error) {
	depth := 0
	for i < len(data) {
		switch c := data[i]; c {
		case '"':
			i++
			for i < len(data) && data[i] != '"' {
				if data[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(data) {
				return 0, errors.New("unterminated string")
			}
			i++
			if depth == 0 {
				return i, nil
			}
		case '{', '[':
			depth++
			i++
		case '}', ']':
			depth--
			i++
			if depth == 0 {
				return i, nil
			}
			if depth < 0 {
				return 0, errors.New("unbalanced brackets")
			}
		case ',', ':', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i, nil
			}
			i++
		default:
			i++
		}
	}
	if depth != 0 {
		return 0, errors.New("unexpected end")
	}
	return i, nil
}
