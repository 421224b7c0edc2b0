package wasm

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/jsonrpc"
)

// A Module is an intercept.Interceptor (ABI version 2, ABI.md section 8),
// named by its name, under its Timeout, for the methods its manifest
// lists.
var (
	_ intercept.Interceptor = (*Module)(nil)
	_ intercept.Namer       = (*Module)(nil)
	_ intercept.Timeouter   = (*Module)(nil)
	_ intercept.Filter      = (*Module)(nil)
)

// Timeout returns the deadline of each of the module's calls.
func (m *Module) Timeout() time.Duration { return m.timeout }

// Intercepts reports whether the module's manifest intercepts the requests
// (results false) or the results of method.
func (m *Module) Intercepts(method string, results bool) bool {
	return m.manifest.Intercepts(method, results)
}

// InterceptRequest gives the module one request (snodo_intercept_request)
// and returns its decision: OK continues, ERROR denies (with the module's
// error object as the reason), REPLACE rewrites the params. A module whose
// manifest does not intercept the method's requests continues without a
// call. Any failure of the call — trap, deadline, memory, output limit,
// invalid output — is the -32603 error naming the module: the chain fails
// closed on it.
func (m *Module) InterceptRequest(ctx context.Context, r *intercept.Request) (intercept.Decision, error) {
	if !m.manifest.Intercepts(r.Method, false) {
		return intercept.Decision{}, nil
	}
	ix := abi.InterceptResult{InterceptRequest: interceptInput(r)}
	res, err := m.callWith(ctx, entryInterceptRequest, "", nil, &ix)
	if d, done := m.passOrDeny(res, err); done {
		return d, err
	}
	// REPLACE (checkInterceptOutput let nothing else through).
	return intercept.Decision{Action: intercept.Rewrite, Params: res.output}, nil
}

// InterceptResult gives the module the server's answer to one request
// (snodo_intercept_result) and returns its decision: OK passes, ERROR
// denies, REPLACE replaces the answer with the module's result or error.
func (m *Module) InterceptResult(ctx context.Context, r *intercept.Result) (intercept.Decision, error) {
	if !m.manifest.Intercepts(r.Method, true) {
		return intercept.Decision{}, nil
	}
	ix := abi.InterceptResult{InterceptRequest: interceptInput(&r.Request), Result: r.Result}
	if r.Error != nil {
		b, err := json.Marshal(r.Error)
		if err != nil {
			return intercept.Decision{}, fmt.Errorf("wasm module %q: the server's error cannot be encoded: %v", m.name, err)
		}
		ix.Result, ix.Error = nil, b
	}
	res, err := m.callWith(ctx, entryInterceptResult, "", nil, &ix)
	if d, done := m.passOrDeny(res, err); done {
		return d, err
	}
	rep, err := abi.ParseReplacement(res.output)
	if err != nil { // checked in the call already
		return intercept.Decision{}, m.invalidOutput(err)
	}
	if rep.Error != nil {
		return intercept.Decision{Action: intercept.Replace, Error: &jsonrpc.Error{
			Kind: jsonrpc.KindServer, Code: rep.Error.Code,
			Message: SanitizeText(rep.Error.Message), Data: sanitizeJSON(rep.Error.Data)}}, nil
	}
	return intercept.Decision{Action: intercept.Replace, Result: rep.Result}, nil
}

func interceptInput(r *intercept.Request) abi.InterceptRequest {
	return abi.InterceptRequest{Method: r.Method, Params: r.Params, Server: r.Server, Caller: r.Caller,
		Era: r.Era, ProtocolVersion: r.ProtocolVersion}
}

// passOrDeny is the decision of an interceptor call that failed (err),
// answered OK (pass) or ERROR (deny); done is false for REPLACE, which
// each entry point reads its own way.
func (m *Module) passOrDeny(res callResult, err error) (d intercept.Decision, done bool) {
	switch {
	case err != nil:
		return intercept.Decision{}, true
	case res.status == abi.StatusOK:
		return intercept.Decision{}, true
	case res.status == abi.StatusError:
		return intercept.Decision{Action: intercept.Deny, Error: m.denyReason(res.output)}, true
	}
	return intercept.Decision{}, false
}

// denyReason is the reason of an ERROR answer: the module's error object,
// escaped, or nil when it gave none.
func (m *Module) denyReason(output []byte) *jsonrpc.Error {
	if len(output) == 0 {
		return nil
	}
	return m.guestError(output, "denied it")
}

// checkInterceptOutput checks an interceptor entry point's answer (ABI.md
// sections 8.2 and 8.3) and returns what is wrong with it, or "".
func checkInterceptOutput(e entry, st abi.Status, output []byte, outputSet bool) string {
	switch st {
	case abi.StatusOK:
		if outputSet {
			return fmt.Sprintf("%s returned OK with output (OK lets things through unchanged; return REPLACE to change them)", entryNames[e])
		}
	case abi.StatusError:
		// The error object is checked as any call's.
	case abi.StatusReplace:
		if e == entryInterceptRequest {
			if err := abi.CheckResult(output); err != nil {
				return fmt.Sprintf("%s returned REPLACE: the rewritten params: %v", entryNames[e], err)
			}
		} else if _, err := abi.ParseReplacement(output); err != nil {
			return fmt.Sprintf("%s returned REPLACE: %v", entryNames[e], err)
		}
	default:
		return fmt.Sprintf("%s returned status %s (want OK, ERROR or REPLACE)", entryNames[e], st)
	}
	return ""
}
