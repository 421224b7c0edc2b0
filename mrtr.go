package snodo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/internal/admit"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// Result types of the 2026-07-28 revision.
const (
	resultComplete      = "complete"
	resultInputRequired = "input_required"
)

// inputRequired is an InputRequiredResult.
type inputRequired struct {
	InputRequests map[string]inputRequest `json:"inputRequests"`
	// RequestState is the raw JSON string, echoed byte for byte.
	RequestState json.RawMessage `json:"requestState"`
}

type inputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// readResultType reads a modern result's resultType: nil for a complete
// result (an absent resultType is "complete"), the input request for
// "input_required", and an error for any other value.
//
// See the specification's basic/index.mdx "ResultType".
func readResultType(result json.RawMessage) (*inputRequired, error) {
	var resultType json.RawMessage
	scanned := eachMember(result, func(key, value []byte) bool {
		if string(key) == "resultType" {
			resultType = value
			return false
		}
		return true
	})
	if !scanned {
		// The exact, slower path.
		var head struct {
			ResultType json.RawMessage `json:"resultType"`
		}
		if err := unmarshal(result, &head); err != nil {
			return nil, err
		}
		resultType = head.ResultType
	}
	switch string(resultType) {
	case "", "null", `"` + resultComplete + `"`:
		return nil, nil
	case `"` + resultInputRequired + `"`:
	default:
		var rt string
		if err := unmarshal(resultType, &rt); err != nil {
			return nil, fmt.Errorf("resultType must be a string, got %s", resultType)
		}
		if rt == resultComplete {
			return nil, nil
		}
		if rt != resultInputRequired {
			return nil, fmt.Errorf("unknown resultType %q", rt)
		}
	}
	var ir inputRequired
	if err := unmarshal(result, &ir); err != nil {
		return nil, err
	}
	if string(ir.RequestState) == "null" {
		ir.RequestState = nil
	}
	if ir.RequestState != nil && ir.RequestState[0] != '"' {
		return nil, fmt.Errorf("requestState must be a string, got %s", ir.RequestState)
	}
	if ir.InputRequests == nil && ir.RequestState == nil {
		return nil, fmt.Errorf("an input_required result needs inputRequests or requestState")
	}
	return &ir, nil
}

// capabilityOf names the client capability an input request needs.
func capabilityOf(method string, params json.RawMessage) string {
	switch method {
	case abi.MethodElicitationCreate:
		if elicitMode(params) == elicitURL {
			return "elicitation.url"
		}
		return "elicitation.form"
	case abi.MethodSamplingCreate:
		if samplingUsesTools(params) {
			return "sampling.tools"
		}
		return "sampling"
	case abi.MethodRootsList:
		return "roots"
	}
	return method
}

// elicitMode returns an elicitation request's mode; absent is form.
//
// The params (already decoded once as part of their message) are scanned
// for a "mode" member with a plain string or null value; a key that matches
// "mode" only without regard to case, a value with an escape or of another
// type, or params the scanner cannot read are decoded by the codec, which
// is what it gives for them.
func elicitMode(params json.RawMessage) string {
	mode, exact := "", true
	scanned := eachMember(params, func(key, value []byte) bool {
		switch {
		case string(key) == "mode":
			switch {
			case string(value) == "null":
			case len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' && printableASCII(value[1:len(value)-1]):
				mode = string(value[1 : len(value)-1])
			default:
				exact = false
			}
		case len(key) == len("mode") && bytes.EqualFold(key, []byte("mode")),
			len(key) > len("mode") && !asciiOnly(key):
			// Matched without regard to case (encoding/json's folding
			// includes non-ASCII letters): the codec decides.
			exact = false
		}
		return exact
	})
	if !scanned || !exact {
		var p struct {
			Mode string `json:"mode"`
		}
		_ = unmarshal(params, &p)
		mode = p.Mode
	}
	if mode == "" {
		return elicitForm
	}
	return mode
}

// printableASCII reports whether b has only printable ASCII bytes and no
// quote or backslash: a JSON string's contents that are its value.
func printableASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// asciiOnly reports whether b has only ASCII bytes.
func asciiOnly(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// handlerFor returns the handler for an input or server request, or an
// error naming the capability nobody answers.
//
// A URL-mode elicitation goes to the Options.URLElicitation handler when there
// is one, and is checked first (checkURLElicitation); a sampling request
// with tools needs Options.SamplingTools.
func (c *Client) handlerFor(method string, params json.RawMessage) (Handler, *Error) {
	h, ok := c.cfg.handlers[method]
	switch method {
	case abi.MethodElicitationCreate:
		mode := elicitMode(params)
		if mode == elicitURL && c.cfg.urlElicit != nil {
			h, ok = c.cfg.urlElicit, true
		} else if ok && !slices.Contains(c.cfg.elicitModes, mode) {
			ok = false
		}
		if ok && mode == elicitURL {
			if c.dialect != nil && c.dialect.ProtocolVersion() < version20251125 {
				// URL mode came in 2025-11-25: never declared before.
				ok = false
			} else if err := c.checkURLElicitation(params); err != nil {
				return nil, err
			}
		}
	case abi.MethodSamplingCreate:
		if ok && !c.cfg.samplingTools && samplingUsesTools(params) {
			ok = false
		}
	}
	if !ok {
		return nil, protocolError(jsonrpc.CodeMethodNotFound, ErrNoHandler,
			"%s needs the client capability %q, which has no handler", method, capabilityOf(method, params))
	}
	return h, nil
}

// answerInputs answers the input requests of one input_required result
// and returns the inputResponses object.
//
// The handlers run in the client's one admission path: each holds a slot of
// the client's gate (Options.MaxServerRequests), shared with every other call's
// inputs and with legacy server requests, so that at most that many run at
// once. An input waits for a slot rather than being refused, because its
// call is waiting for it and the schema has no error InputResponse; the
// round runs at most as many workers as the gate has slots, never a
// goroutine per queued input.
//
// The handlers' context ends with ctx (the caller), with the call's timeout
// for this round (-32001), with the call's total deadline when there is
// one, with Close and with the connection. The first failure cancels the
// others and fails the call with that error.
//
// See the specification's basic/patterns/mrtr.mdx.
func (c *Client) answerInputs(ctx context.Context, method string, requests map[string]inputRequest, cc *callConfig, deadline time.Time) ([]byte, error) {
	if requests == nil {
		// Only requestState: retry at once.
		return nil, nil
	}
	keys := make([]string, 0, len(requests))
	for k := range requests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	handlers := make([]Handler, len(keys))
	for i, k := range keys {
		r := requests[k]
		c.noteDeprecated(r.Method)
		h, err := c.handlerFor(r.Method, r.Params)
		if err != nil {
			err.Message = fmt.Sprintf("%s: input request %q: %s", method, k, err.Message)
			return nil, err
		}
		handlers[i] = h
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(c.life, func() { cancel(context.Cause(c.life)) })
	defer stop()
	if timeout, hitTotal := roundTimeout(cc, deadline); timeout > 0 || hitTotal {
		cause := transport.TimeoutError(cc.timeout)
		if hitTotal {
			cause = transport.MaxTotalTimeoutError(cc.maxTotal)
		}
		t := time.AfterFunc(max(timeout, 0), func() { cancel(cause) })
		defer t.Stop()
	}

	results := make([]json.RawMessage, len(keys))
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	// The workers take the requests in turn; the caller is one of them, so
	// that a round of one request starts and wakes no goroutine.
	worker := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= len(keys) || ctx.Err() != nil {
				return
			}
			if err := c.gate.Acquire(ctx); err != nil {
				return
			}
			if ctx.Err() != nil {
				// Both were ready: the round has ended.
				c.gate.Release()
				return
			}
			r := requests[keys[i]]
			res, err := runHandler(ctx, handlers[i], r.Method, r.Params)
			c.gate.Release()
			if err != nil {
				cancel(handlerError(err, "%s: input request %q (%s) failed", method, keys[i], r.Method))
				return
			}
			results[i] = res
		}
	}
	for range min(len(keys), c.gate.Limit()) - 1 {
		wg.Go(worker)
	}
	worker()
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil {
		return nil, callEndError(ctx, cause)
	}
	out := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendMember(out, k, results[i])
	}
	return append(out, '}'), nil
}

// roundTimeout returns how long a round's input handlers may run: the
// call's timeout, or less when the call's total deadline comes first
// (hitTotal). 0 without either means no limit.
func roundTimeout(cc *callConfig, deadline time.Time) (d time.Duration, hitTotal bool) {
	d = cc.timeout
	if !deadline.IsZero() {
		if left := time.Until(deadline); d <= 0 || left <= d {
			return left, true
		}
	}
	return d, false
}

// callEndError is the error of a call whose input round ended early with
// cause: a Snodo error (a handler's failure, a timeout, the connection or
// Close) as it is; the caller's own context as a transport error wrapping
// it, as the transport reports a request abandoned by its caller.
func callEndError(ctx context.Context, cause error) error {
	if e, ok := cause.(*Error); ok {
		return e
	}
	code := int64(jsonrpc.CodeInternalError)
	msg := "request abandoned: context canceled"
	if errors.Is(cause, context.DeadlineExceeded) {
		code, msg = jsonrpc.CodeRequestTimeout, "request abandoned: context deadline exceeded"
	}
	return &Error{Kind: jsonrpc.KindTransport, Code: code, Message: msg, Cause: cause}
}

// runHandler calls h, turning a panic or an invalid result into a handler
// *Error; an error returned by h is returned as it is.
func runHandler(ctx context.Context, h Handler, method string, params json.RawMessage) (json.RawMessage, error) {
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	res, err := admit.Recover(method, func() (json.RawMessage, error) { return h.HandleRequest(ctx, method, params) })
	if err != nil {
		return nil, err
	}
	if len(res) == 0 || !api.Valid(res) {
		return nil, &Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("handler for %s returned invalid JSON", method)}
	}
	return res, nil
}

// handlerError wraps a handler's failure for the caller of a multi
// round-trip request: kind handler, the handler's code and data when it
// returned a *Error, -32603 otherwise, and the failure as cause.
func handlerError(err error, format string, args ...any) *Error {
	e := &Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(format, args...), Cause: err}
	if je, ok := err.(*Error); ok {
		if je.Code != 0 {
			e.Code = je.Code
		}
		e.Data = je.Data
	}
	return e
}

// The requests that may be answered with an input_required result, and the
// input requests such a result may carry (2026-07-28,
// basic/patterns/mrtr.mdx "Supported Requests" and "Server Requirements").
var (
	inputRequiredMethods = []string{"prompts/get", "resources/read", "tools/call"}
	inputRequestMethods  = []string{abi.MethodElicitationCreate, abi.MethodSamplingCreate, abi.MethodRootsList}
)

// ErrInputNotAllowed is the cause of the protocol error of a call whose
// server answered with an input_required result where the specification
// does not allow one: on a request other than tools/call, prompts/get and
// resources/read, or asking for input other than elicitation/create,
// sampling/createMessage and roots/list. No handler runs for it.
var ErrInputNotAllowed = errors.New("input_required where the protocol does not allow it")

// checkInputRequired refuses an input_required result the specification
// does not allow for method, before any of its inputs is answered.
func checkInputRequired(method string, ir *inputRequired) error {
	if !slices.Contains(inputRequiredMethods, method) {
		return protocolError(jsonrpc.CodeInternalError, ErrInputNotAllowed,
			"%s: the server answered input_required, which only %v may return", method, inputRequiredMethods)
	}
	keys := make([]string, 0, len(ir.InputRequests))
	for k, r := range ir.InputRequests {
		if !slices.Contains(inputRequestMethods, r.Method) {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		slices.Sort(keys)
		k := keys[0]
		return protocolError(jsonrpc.CodeInternalError, ErrInputNotAllowed,
			"%s: input request %q has method %q; an input_required result may ask only for %v",
			method, k, ir.InputRequests[k].Method, inputRequestMethods)
	}
	return nil
}
