package abi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Manifest is what snodo_describe writes (ABI.md section 2).
type Manifest struct {
	ABI      int      `json:"abi"`
	Name     string   `json:"name,omitempty"`
	Methods  []string `json:"methods,omitempty"`
	Progress bool     `json:"progress,omitempty"`
	Events   bool     `json:"events,omitempty"`
	// SamplingTools says the module's sampling/createMessage handler
	// supports tool use (MCP sampling.tools): the client declares the
	// capability and passes it sampling requests with tools.
	SamplingTools bool `json:"samplingTools,omitempty"`
	// Intercept declares the module's interceptors (ABI version 2, ABI.md
	// section 8): what the client sends, what comes back, or both.
	Intercept *Intercept `json:"intercept,omitempty"`
}

// Intercept is the "intercept" member of a version-2 manifest.
type Intercept struct {
	// Requests: the module checks or rewrites client-to-server requests
	// (snodo_intercept_request).
	Requests bool `json:"requests,omitempty"`
	// Results: the module checks or replaces what the server answered
	// (snodo_intercept_result).
	Results bool `json:"results,omitempty"`
	// Methods are the request methods the module intercepts; nil means
	// every method.
	Methods []string `json:"methods,omitempty"`
}

// Intercepts reports whether the manifest intercepts method: its requests
// (results false) or its results (results true).
func (m Manifest) Intercepts(method string, results bool) bool {
	ic := m.Intercept
	if ic == nil || (results && !ic.Results) || (!results && !ic.Requests) {
		return false
	}
	if ic.Methods == nil {
		return true
	}
	for _, x := range ic.Methods {
		if x == method {
			return true
		}
	}
	return false
}

// MaxMethodBytes bounds a method name an interceptor manifest lists.
const MaxMethodBytes = 256

// checkMethodName refuses a method name an MCP request could not have:
// empty, longer than MaxMethodBytes, or holding anything but visible ASCII
// other than a quote or a backslash.
func checkMethodName(name string) error {
	if name == "" || len(name) > MaxMethodBytes {
		return fmt.Errorf("method name of %d bytes (want 1 to %d)", len(name), MaxMethodBytes)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return fmt.Errorf("method name %q holds byte 0x%02x (want visible ASCII, no quote or backslash)", name, c)
		}
	}
	return nil
}

// ParseManifest decodes and checks a manifest: the version is known, every
// method is one of KnownMethods (once), and the module declares something.
// The error says exactly what is wrong.
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	if len(bytes.TrimSpace(data)) == 0 {
		return m, errors.New("snodo_describe gave no manifest (it must call set_output with a JSON object)")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("manifest is not a valid JSON object: %v", err)
	}
	if dec.More() {
		return m, errors.New("manifest has trailing data after the JSON object")
	}
	if m.ABI < 1 || m.ABI > Version {
		if m.ABI == 0 {
			return m, fmt.Errorf(`manifest has no "abi" version (want 1 to %d)`, Version)
		}
		return m, fmt.Errorf(`manifest "abi" is %d, this host speaks versions 1 to %d`, m.ABI, Version)
	}
	seen := map[string]bool{}
	for _, method := range m.Methods {
		if !IsKnownMethod(method) {
			return m, fmt.Errorf("manifest lists unknown method %q (ABI version %d knows %s)", method, Version, strings.Join(KnownMethods, ", "))
		}
		if seen[method] {
			return m, fmt.Errorf("manifest lists method %q twice", method)
		}
		seen[method] = true
	}
	if m.SamplingTools && !seen[MethodSamplingCreate] {
		return m, fmt.Errorf(`manifest says "samplingTools" but does not list %q`, MethodSamplingCreate)
	}
	if err := checkIntercept(m); err != nil {
		return m, err
	}
	if len(m.Methods) == 0 && !m.Progress && !m.Events && m.Intercept == nil {
		return m, errors.New(`manifest declares nothing: no "methods", "progress", "events" or "intercept" (a Go guest registers its handlers in init: main does not run in a -buildmode=c-shared module)`)
	}
	return m, nil
}

// checkIntercept checks a manifest's "intercept": only in version 2 and
// later, declaring requests or results, methods each a valid name once and,
// when given, not empty.
func checkIntercept(m Manifest) error {
	ic := m.Intercept
	if ic == nil {
		return nil
	}
	if m.ABI < VersionInterceptors {
		return fmt.Errorf(`manifest has "intercept" but "abi" %d: interceptors need "abi": %d`, m.ABI, VersionInterceptors)
	}
	if !ic.Requests && !ic.Results {
		return errors.New(`manifest "intercept" declares neither "requests": true nor "results": true`)
	}
	if ic.Methods != nil && len(ic.Methods) == 0 {
		return errors.New(`manifest "intercept" lists no "methods": omit "methods" to intercept every method, or name some`)
	}
	seen := map[string]bool{}
	for _, method := range ic.Methods {
		if err := checkMethodName(method); err != nil {
			return fmt.Errorf(`manifest "intercept" "methods": %v`, err)
		}
		if seen[method] {
			return fmt.Errorf(`manifest "intercept" lists method %q twice`, method)
		}
		seen[method] = true
	}
	return nil
}

// Answers reports whether the manifest lists method.
func (m Manifest) Answers(method string) bool {
	for _, x := range m.Methods {
		if x == method {
			return true
		}
	}
	return false
}

// Request is the input of snodo_handle (ABI.md section 3.1).
type Request struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// Progress is the input of snodo_progress (ABI.md section 3.2).
type Progress struct {
	Params json.RawMessage `json:"params"`
}

// Event is the input of snodo_event (ABI.md section 3.3).
type Event struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// AppendRequest appends the snodo_handle input for method and params to
// dst. params must be valid JSON (or empty, which becomes {}); method is
// escaped as a JSON string.
func AppendRequest(dst []byte, method string, params json.RawMessage) []byte {
	dst = append(dst, `{"method":`...)
	dst = appendString(dst, method)
	dst = append(dst, `,"params":`...)
	dst = appendParams(dst, params)
	return append(dst, '}')
}

// AppendProgress appends the snodo_progress input for params to dst.
func AppendProgress(dst []byte, params json.RawMessage) []byte {
	dst = append(dst, `{"params":`...)
	dst = appendParams(dst, params)
	return append(dst, '}')
}

// AppendEvent appends the snodo_event input for an event to dst.
func AppendEvent(dst []byte, method string, params json.RawMessage) []byte {
	return AppendRequest(dst, method, params)
}

func appendParams(dst []byte, params json.RawMessage) []byte {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || string(p) == "null" {
		return append(dst, '{', '}')
	}
	return append(dst, p...)
}

// appendString appends s as a JSON string.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// ErrorObject is the output of a call that returns StatusError: a JSON-RPC
// error object.
type ErrorObject struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// ParseErrorObject decodes and checks an error object: a JSON object with
// an integer "code" and, if present, a string "message".
func ParseErrorObject(data []byte) (ErrorObject, error) {
	var raw struct {
		Code    *json.Number    `json:"code"`
		Message *string         `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	var e ErrorObject
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return e, fmt.Errorf("error output is not a JSON object: %v", err)
	}
	if dec.More() {
		return e, errors.New("error output has trailing data after the JSON object")
	}
	if raw.Code == nil {
		return e, errors.New(`error output has no "code"`)
	}
	code, err := raw.Code.Int64()
	if err != nil {
		return e, fmt.Errorf(`error output "code" %s is not an integer`, raw.Code.String())
	}
	e.Code = code
	if raw.Message != nil {
		e.Message = *raw.Message
	}
	if len(raw.Data) > 0 && string(raw.Data) != "null" {
		e.Data = raw.Data
	}
	return e, nil
}

// CheckResult checks the output of a request that returned StatusOK: one
// JSON object, nothing after it.
func CheckResult(data []byte) error {
	d := bytes.TrimSpace(data)
	if len(d) == 0 {
		return errors.New("no output (a result needs set_output with a JSON object)")
	}
	if d[0] != '{' {
		return errors.New("result is not a JSON object")
	}
	if !json.Valid(d) {
		return errors.New("result is not valid JSON")
	}
	return nil
}

// InterceptRequest is the input of snodo_intercept_request (ABI.md section
// 8.2): one client-to-server request, as it is about to be sent.
type InterceptRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	// Server is the server's name as it reported it (serverInfo.name):
	// the server's word, not the operator's.
	Server string `json:"server,omitempty"`
	// Caller identifies who made the request, when the client knows (the
	// proxy's downstream host); "" when it does not.
	Caller string `json:"caller,omitempty"`
	// Era is "legacy" or "modern"; ProtocolVersion the negotiated version.
	Era             string `json:"era"`
	ProtocolVersion string `json:"protocolVersion"`
}

// InterceptResult is the input of snodo_intercept_result (ABI.md section
// 8.3): the request as it was sent and what the server answered, a result
// or an error object (exactly one of them).
type InterceptResult struct {
	InterceptRequest
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// AppendInterceptRequest appends the snodo_intercept_request input for r
// to dst. r.Params must be a valid JSON object (or empty, which becomes
// {}); the strings are escaped, invalid UTF-8 as U+FFFD, so the input is
// valid JSON whenever r.Params is.
func AppendInterceptRequest(dst []byte, r *InterceptRequest) []byte {
	dst = appendInterceptFields(dst, r)
	return append(dst, '}')
}

// AppendInterceptResult appends the snodo_intercept_result input for r to
// dst: the request's fields, then "result" or "error" (r.Result and r.Error
// are valid JSON objects; Result is used when both are set).
func AppendInterceptResult(dst []byte, r *InterceptResult) []byte {
	dst = appendInterceptFields(dst, &r.InterceptRequest)
	if len(r.Result) > 0 || len(r.Error) == 0 {
		dst = append(dst, `,"result":`...)
		dst = appendParams(dst, r.Result)
	} else {
		dst = append(dst, `,"error":`...)
		dst = append(dst, bytes.TrimSpace(r.Error)...)
	}
	return append(dst, '}')
}

func appendInterceptFields(dst []byte, r *InterceptRequest) []byte {
	dst = append(dst, `{"method":`...)
	dst = appendStringUTF8(dst, r.Method)
	dst = append(dst, `,"params":`...)
	dst = appendParams(dst, r.Params)
	if r.Server != "" {
		dst = append(dst, `,"server":`...)
		dst = appendStringUTF8(dst, r.Server)
	}
	if r.Caller != "" {
		dst = append(dst, `,"caller":`...)
		dst = appendStringUTF8(dst, r.Caller)
	}
	dst = append(dst, `,"era":`...)
	dst = appendStringUTF8(dst, r.Era)
	dst = append(dst, `,"protocolVersion":`...)
	return appendStringUTF8(dst, r.ProtocolVersion)
}

// appendStringUTF8 is appendString with each byte of invalid UTF-8 written
// as U+FFFD, so that the string is valid JSON for any parser.
func appendStringUTF8(dst []byte, s string) []byte {
	if utf8.ValidString(s) {
		return appendString(dst, s)
	}
	return appendString(dst, strings.ToValidUTF8(s, "\uFFFD"))
}

// Replacement is the output of snodo_intercept_result with status REPLACE
// (ABI.md section 8.3): exactly one of Result (a JSON object) and Error.
type Replacement struct {
	Result json.RawMessage
	Error  *ErrorObject
}

// ParseReplacement decodes and checks a result interceptor's REPLACE
// output: one JSON object with exactly one member, "result" (a JSON
// object) or "error" (an error object), spelled exactly so.
func ParseReplacement(data []byte) (Replacement, error) {
	var r Replacement
	d := bytes.TrimSpace(data)
	if len(d) == 0 {
		return r, errors.New(`no output (REPLACE needs set_output with {"result": {...}} or {"error": {...}})`)
	}
	if d[0] != '{' || !json.Valid(d) {
		return r, errors.New("replacement is not a valid JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(d))
	_, _ = dec.Token() // '{', checked above
	key, raw := "", json.RawMessage(nil)
	for n := 0; dec.More(); n++ {
		tok, err := dec.Token()
		if err != nil {
			return r, fmt.Errorf("replacement is not a valid JSON object: %v", err)
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return r, fmt.Errorf("replacement is not a valid JSON object: %v", err)
		}
		if n > 0 || (k != "result" && k != "error") {
			return r, fmt.Errorf(`replacement must have exactly one member, "result" or "error" (it has %q)`, k)
		}
		key, raw = k, v
	}
	members := map[string]json.RawMessage{}
	if key != "" {
		members[key] = raw
	}
	if raw, ok := members["result"]; ok {
		if err := CheckResult(raw); err != nil {
			return r, fmt.Errorf(`replacement "result": %v`, err)
		}
		r.Result = bytes.TrimSpace(raw)
		return r, nil
	}
	raw, ok := members["error"]
	if !ok { // {}
		return r, errors.New(`replacement must have exactly one member, "result" or "error"`)
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return r, errors.New(`replacement "error" is not a JSON object`)
	}
	e, err := ParseErrorObject(raw)
	if err != nil {
		return r, fmt.Errorf(`replacement "error": %v`, err)
	}
	r.Error = &e
	return r, nil
}
