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
// (ABI.md section 8.2).
type InterceptRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	// Server is the server's name for itself (its word, not the
	// operator's); Caller who made the request, when the client knows.
	Server string `json:"server,omitempty"`
	Caller string `json:"caller,omitempty"`
	// Era is "legacy" or "modern"; ProtocolVersion the negotiated one.
	Era             string `json:"era"`
	ProtocolVersion string `json:"protocolVersion"`
}

// InterceptResult is the server's answer to a request (ABI.md section
// 8.3): exactly one of Result and Error is set.
type InterceptResult struct {
	InterceptRequest
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

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
		var r InterceptRequest
		if err := json.Unmarshal(input, &r); err != nil {
			return errorOutput(out, &Error{Code: -32602, Message: "invalid intercept envelope: " + err.Error()})
		}
		d, err = onRequest(Context{Method: r.Method}, r)
	case abi.ExportInterceptResult:
		if onResult == nil {
			return errorOutput(out, errors.New("module does not intercept results"))
		}
		var r InterceptResult
		if err := json.Unmarshal(input, &r); err != nil {
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
