package snodo

import (
	"errors"
	"slices"

	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
)

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
