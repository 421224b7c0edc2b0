package abi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	if m.ABI != Version {
		if m.ABI == 0 {
			return m, fmt.Errorf(`manifest has no "abi" version (want %d)`, Version)
		}
		return m, fmt.Errorf(`manifest "abi" is %d, this host speaks version %d`, m.ABI, Version)
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
	if len(m.Methods) == 0 && !m.Progress && !m.Events {
		return m, errors.New(`manifest declares nothing: no "methods", "progress" or "events" (a Go guest registers its handlers in init: main does not run in a -buildmode=c-shared module)`)
	}
	return m, nil
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
