package snodo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/snodo/snodo/jsonrpc"
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
	case MethodElicit:
		if elicitMode(params) == ElicitURL {
			return "elicitation.url"
		}
		return "elicitation.form"
	case MethodCreateMessage:
		return "sampling"
	case MethodListRoots:
		return "roots"
	}
	return method
}

// elicitMode returns an elicitation request's mode; absent is form.
func elicitMode(params json.RawMessage) string {
	var p struct {
		Mode string `json:"mode"`
	}
	_ = unmarshal(params, &p)
	if p.Mode == "" {
		return ElicitForm
	}
	return p.Mode
}

// handlerFor returns the handler for an input or server request, or an
// error naming the capability nobody answers.
func (c *Client) handlerFor(method string, params json.RawMessage) (Handler, *Error) {
	h, ok := c.cfg.handlers[method]
	if ok && method == MethodElicit && !slices.Contains(c.cfg.elicitModes, elicitMode(params)) {
		ok = false
	}
	if !ok {
		return nil, protocolError(jsonrpc.CodeMethodNotFound, ErrNoHandler,
			"%s needs the client capability %q, which has no handler", method, capabilityOf(method, params))
	}
	return h, nil
}

// answerInputs runs the handlers of every input request at once, each in a
// server-request slot, and returns the inputResponses object. The first
// failure cancels the others and fails the call with that error.
//
// See the specification's basic/patterns/mrtr.mdx.
func (c *Client) answerInputs(ctx context.Context, method string, requests map[string]inputRequest) ([]byte, error) {
	if requests == nil {
		// Only requestState: retry at once.
		return nil, nil
	}
	keys := make([]string, 0, len(requests))
	handlers := make(map[string]Handler, len(requests))
	for k, r := range requests {
		h, err := c.handlerFor(r.Method, r.Params)
		if err != nil {
			err.Message = fmt.Sprintf("%s: input request %q: %s", method, k, err.Message)
			return nil, err
		}
		handlers[k] = h
		keys = append(keys, k)
	}
	slices.Sort(keys)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]json.RawMessage, len(keys))
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	for i, k := range keys {
		wg.Go(func() {
			r := requests[k]
			select {
			case c.slots <- struct{}{}:
			case <-ctx.Done():
				fail(ctx.Err())
				return
			}
			defer func() { <-c.slots }()
			res, err := runHandler(ctx, handlers[k], r.Method, r.Params)
			if err != nil {
				fail(handlerError(err, "%s: input request %q (%s) failed", method, k, r.Method))
				return
			}
			results[i] = res
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
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

// runHandler calls h, turning a panic or an invalid result into a handler
// *Error; an error returned by h is returned as it is.
func runHandler(ctx context.Context, h Handler, method string, params json.RawMessage) (res json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, &Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("handler for %s panicked: %v", method, p)}
		}
	}()
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	res, err = h.HandleRequest(ctx, method, params)
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
