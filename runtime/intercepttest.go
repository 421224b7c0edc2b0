package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/jsonrpc"
)

// InterceptDecision is what an interceptor module decided on one envelope
// (TestInterceptor): Decision is "continue", "deny" (Error is the module's
// reason, or absent when it gave none), "rewrite" (Params are the new
// params, as the client would send them) or "replace" (Result, or Error as
// if the server had answered it).
type InterceptDecision struct {
	Decision string          `json:"decision"`
	Params   json.RawMessage `json:"params,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Error    *jsonrpc.Error  `json:"error,omitempty"`
}

// interceptEnvelope is the input of an interceptor entry point (ABI.md
// sections 8.2 and 8.3) as TestInterceptor reads it.
type interceptEnvelope struct {
	Method          string          `json:"method"`
	Params          json.RawMessage `json:"params"`
	Server          string          `json:"server"`
	Caller          string          `json:"caller"`
	Era             string          `json:"era"`
	ProtocolVersion string          `json:"protocolVersion"`
	Result          json.RawMessage `json:"result"`
	Error           json.RawMessage `json:"error"`
}

// TestInterceptor runs one envelope through a module's request interceptor
// (results false, snodo_intercept_request) or result interceptor (results
// true, snodo_intercept_result) without a server, and returns its
// decision checked as the client checks it: a rewrite must keep what the
// request addresses (intercept.CheckRewrite), a replacement result must be
// unambiguous.
//
// envelope is a JSON object: method (required), params (a JSON object; {}
// when absent), server, caller, era ("modern" when absent) and
// protocolVersion; for a result, exactly one of result (a JSON object) and
// error (a JSON-RPC error object, with code and message). An envelope that
// is not one is an *EnvelopeError. A module that does not intercept the
// method is a -32601 *jsonrpc.Error; a module that fails (traps, overruns
// its deadline, answers an invalid decision) is the -32603 *jsonrpc.Error
// the client would fail the call with.
func TestInterceptor(ctx context.Context, mc ModuleConfig, cacheDir string, results bool, envelope json.RawMessage) (*InterceptDecision, error) {
	req, res, err := parseEnvelope(envelope, results)
	if err != nil {
		return nil, err
	}
	m, host, err := loadOne(ctx, mc, cacheDir)
	if err != nil {
		return nil, err
	}
	defer host.Close(ctx)
	which, entry := "requests", abi.ExportInterceptRequest
	if results {
		which, entry = "results", abi.ExportInterceptResult
	}
	if !m.Manifest().Intercepts(req.Method, results) {
		return nil, &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("module %s does not intercept the %s of %s (its manifest's intercept: %s); it would not be called (%s)",
				m.Name(), which, req.Method, interceptDecl(m.Manifest().Intercept), entry)}
	}
	fail := func(err error) error {
		return &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("interceptor %q failed on %s, so the client would fail the call: %v", m.Name(), req.Method, err), Cause: err}
	}
	var dec intercept.Decision
	if results {
		dec, err = m.InterceptResult(ctx, res)
	} else {
		dec, err = m.InterceptRequest(ctx, req)
	}
	if err != nil {
		return nil, err // the module's -32603, naming it and the cause
	}
	out := &InterceptDecision{Decision: dec.Action.String()}
	switch dec.Action {
	case intercept.Continue:
	case intercept.Deny:
		out.Error = dec.Error
	case intercept.Rewrite:
		p, err := intercept.CheckRewrite(req.Method, req.Params, dec.Params)
		if err != nil {
			return nil, fail(fmt.Errorf("invalid rewrite: %w", err))
		}
		out.Params = p
	case intercept.Replace:
		if dec.Result != nil {
			if err := intercept.CheckUnambiguous(dec.Result); err != nil {
				return nil, fail(fmt.Errorf("invalid replacement result: %w", err))
			}
			out.Result = bytes.TrimSpace(dec.Result)
		} else {
			out.Error = dec.Error
		}
	default:
		return nil, fail(fmt.Errorf("invalid decision %s", dec.Action))
	}
	return out, nil
}

func interceptDecl(ic *abi.Intercept) string {
	if ic == nil {
		return "none"
	}
	b, _ := json.Marshal(ic)
	return string(b)
}

// EnvelopeError is an interceptor envelope TestInterceptor cannot use.
type EnvelopeError struct{ Err error }

func (e *EnvelopeError) Error() string { return "envelope: " + e.Err.Error() }
func (e *EnvelopeError) Unwrap() error { return e.Err }

func envelopeErr(format string, args ...any) error {
	return &EnvelopeError{Err: fmt.Errorf(format, args...)}
}

// parseEnvelope reads an interceptor envelope (see TestInterceptor).
func parseEnvelope(raw json.RawMessage, results bool) (*intercept.Request, *intercept.Result, error) {
	if err := intercept.CheckUnambiguous(raw); err != nil {
		return nil, nil, envelopeErr("%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var e interceptEnvelope
	if err := dec.Decode(&e); err != nil {
		return nil, nil, envelopeErr("want a JSON object with method, params, server, caller, era, protocolVersion (and, for a result, result or error): %v", err)
	}
	if dec.More() {
		return nil, nil, envelopeErr("trailing data after the JSON object")
	}
	if e.Method == "" {
		return nil, nil, envelopeErr(`"method" is missing: name the request's method, e.g. {"method":"tools/call","params":{"name":"x"}}`)
	}
	isObject := func(v json.RawMessage) bool {
		v = bytes.TrimSpace(v)
		return len(v) > 0 && v[0] == '{'
	}
	if p := bytes.TrimSpace(e.Params); len(p) == 0 || string(p) == "null" {
		e.Params = json.RawMessage(`{}`)
	} else if !isObject(p) {
		return nil, nil, envelopeErr(`"params" must be a JSON object, not %.40s`, p)
	}
	if e.Era == "" {
		e.Era = "modern"
	}
	if e.Era != "modern" && e.Era != "legacy" {
		return nil, nil, envelopeErr(`"era" must be "modern" or "legacy", not %q`, e.Era)
	}
	req := &intercept.Request{Method: e.Method, Params: bytes.TrimSpace(e.Params), Server: e.Server, Caller: e.Caller,
		Era: e.Era, ProtocolVersion: e.ProtocolVersion}
	hasResult := len(e.Result) > 0 && string(bytes.TrimSpace(e.Result)) != "null"
	hasError := len(e.Error) > 0 && string(bytes.TrimSpace(e.Error)) != "null"
	if !results {
		if hasResult || hasError {
			return nil, nil, envelopeErr(`a request's envelope has no "result" or "error" (give them with --intercept result)`)
		}
		return req, nil, nil
	}
	res := &intercept.Result{Request: *req}
	switch {
	case hasResult == hasError:
		return nil, nil, envelopeErr(`a result's envelope has exactly one of "result" (the server's result object) and "error" (its JSON-RPC error object)`)
	case hasResult:
		if !isObject(e.Result) {
			return nil, nil, envelopeErr(`"result" must be a JSON object, not %.40s`, bytes.TrimSpace(e.Result))
		}
		res.Result = bytes.TrimSpace(e.Result)
	default:
		var je struct {
			Code    *int64          `json:"code"`
			Message *string         `json:"message"`
			Data    json.RawMessage `json:"data"`
		}
		d := json.NewDecoder(bytes.NewReader(e.Error))
		d.DisallowUnknownFields()
		if err := d.Decode(&je); err != nil || je.Code == nil || je.Message == nil {
			if err == nil {
				err = errors.New("code or message missing")
			}
			return nil, nil, envelopeErr(`"error" must be a JSON-RPC error object {"code":…,"message":…,"data":…}: %v`, err)
		}
		res.Error = &jsonrpc.Error{Kind: jsonrpc.KindServer, Code: *je.Code, Message: *je.Message, Data: je.Data}
	}
	return req, res, nil
}
