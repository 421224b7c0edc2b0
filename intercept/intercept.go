// Package intercept is Snodo's policy on what an MCP client sends and what
// comes back: an Interceptor sees each client-to-server request before it
// is sent — and lets it go, denies it or rewrites its params — and the
// server's answer before the caller sees it — and lets it pass, denies it
// or replaces it. Native Go functions (Funcs, RequestFunc, ResultFunc) and
// Wasm modules (handlers/wasm's Module, ABI version 2) implement it; a
// client takes them in snodo.Options.Interceptors.
//
// The client runs its interceptors as a Chain: requests in the order given,
// results in the reverse order, each call under its own deadline. A denial
// fails the call with CodeDenied (-32030) and nothing reaches the server;
// an interceptor that fails — returns an error, overruns its deadline,
// answers an invalid decision — fails the call too (fail closed), with
// -32603 naming it.
package intercept

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/snodo/snodo/jsonrpc"
)

// CodeDenied is the JSON-RPC error code of a call an interceptor denied:
// the request was not sent, or the server's answer was withheld.
const CodeDenied = -32030

// ErrDenied matches, with errors.Is, every denial's *jsonrpc.Error: kind
// handler, code CodeDenied (a server's own -32030 is of kind server, and
// does not match).
var ErrDenied = &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: CodeDenied}

// ErrFailed matches, with errors.Is, the error of a call whose interceptor
// failed (fail closed). The error's Cause chain holds the interceptor's
// error.
var ErrFailed = errors.New("interceptor failed")

// DefaultTimeout bounds one interceptor call of an interceptor that does
// not say its own (Timeouter).
const DefaultTimeout = 5 * time.Second

// Request is one client-to-server request, as it is about to be sent.
type Request struct {
	// Method and Params are the request as the caller made it (or as the
	// previous interceptor rewrote it), before the client adds its _meta.
	// Params is a JSON object, {} when there are none.
	Method string
	Params json.RawMessage
	// Server is the server's name as the server reported it: its word,
	// not the operator's.
	Server string
	// Caller is who made the request, when known (WithCaller); "" when
	// not.
	Caller string
	// Era is "legacy" or "modern"; ProtocolVersion the negotiated version.
	Era             string
	ProtocolVersion string
}

// Result is the server's answer to a request: exactly one of Result and
// Error is set.
type Result struct {
	// Request is the request as it was sent, after rewrites.
	Request
	// Result is the server's result object.
	Result json.RawMessage
	// Error is the server's error.
	Error *jsonrpc.Error
}

// Action is what an interceptor decided.
type Action uint8

const (
	// Continue lets a request go, or an answer pass, unchanged.
	Continue Action = iota
	// Deny refuses a request (nothing is sent) or withholds an answer:
	// the call fails with CodeDenied, carrying Decision.Error's message
	// and data.
	Deny
	// Rewrite sends the request with Decision.Params instead (requests
	// only).
	Rewrite
	// Replace gives the caller Decision.Result, or Decision.Error as if
	// the server had answered it, instead of the server's answer (results
	// only).
	Replace
)

func (a Action) String() string {
	switch a {
	case Continue:
		return "continue"
	case Deny:
		return "deny"
	case Rewrite:
		return "rewrite"
	case Replace:
		return "replace"
	}
	return "invalid action"
}

// Decision is an interceptor's answer.
type Decision struct {
	Action Action
	// Params are the rewritten params (Rewrite): a JSON object.
	Params json.RawMessage
	// Result is the replacement result (Replace): a JSON object.
	Result json.RawMessage
	// Error is the reason of a Deny (its message and data; nil: a
	// message naming the interceptor), or the replacement error of a
	// Replace.
	Error *jsonrpc.Error
}

// Interceptor checks requests and results. Both methods are called from
// many goroutines at once. An error fails the call (fail closed); the
// client never sends a request, or gives an answer, that an interceptor
// could not decide on. A method that has nothing to say returns
// Decision{} (Continue).
type Interceptor interface {
	InterceptRequest(ctx context.Context, r *Request) (Decision, error)
	InterceptResult(ctx context.Context, r *Result) (Decision, error)
}

// Namer is an Interceptor with a name for errors and logs (a Wasm module's
// name). Without it, an interceptor is named by its place in the chain.
type Namer interface{ Name() string }

// Timeouter is an Interceptor that enforces a deadline of its own on each
// call (a Wasm module stops its guest at its Timeout): the chain sets no
// timer for it, and refuses a decision that comes later than the deadline
// and a second's grace. Other interceptors run under a context that ends
// at DefaultTimeout.
type Timeouter interface{ Timeout() time.Duration }

// Filter is an Interceptor that says which requests it intercepts (a Wasm
// module's manifest): the chain skips it for the others, and does not even
// check their params for it.
type Filter interface {
	Intercepts(method string, results bool) bool
}

// Funcs adapts Go functions to an Interceptor; a nil function lets
// everything through in its direction.
type Funcs struct {
	Name      string
	OnRequest func(ctx context.Context, r *Request) (Decision, error)
	OnResult  func(ctx context.Context, r *Result) (Decision, error)
}

// InterceptRequest calls f.OnRequest.
func (f Funcs) InterceptRequest(ctx context.Context, r *Request) (Decision, error) {
	if f.OnRequest == nil {
		return Decision{}, nil
	}
	return f.OnRequest(ctx, r)
}

// InterceptResult calls f.OnResult.
func (f Funcs) InterceptResult(ctx context.Context, r *Result) (Decision, error) {
	if f.OnResult == nil {
		return Decision{}, nil
	}
	return f.OnResult(ctx, r)
}

// Intercepts reports whether f has a function for the direction.
func (f Funcs) Intercepts(method string, results bool) bool {
	if results {
		return f.OnResult != nil
	}
	return f.OnRequest != nil
}

// RequestFunc is an Interceptor of requests alone.
type RequestFunc func(ctx context.Context, r *Request) (Decision, error)

// InterceptRequest calls f.
func (f RequestFunc) InterceptRequest(ctx context.Context, r *Request) (Decision, error) {
	return f(ctx, r)
}

// InterceptResult lets every result pass.
func (f RequestFunc) InterceptResult(context.Context, *Result) (Decision, error) {
	return Decision{}, nil
}

// Intercepts reports true for requests only.
func (f RequestFunc) Intercepts(_ string, results bool) bool { return !results }

// ResultFunc is an Interceptor of results alone.
type ResultFunc func(ctx context.Context, r *Result) (Decision, error)

// InterceptRequest lets every request go.
func (f ResultFunc) InterceptRequest(context.Context, *Request) (Decision, error) {
	return Decision{}, nil
}

// InterceptResult calls f.
func (f ResultFunc) InterceptResult(ctx context.Context, r *Result) (Decision, error) {
	return f(ctx, r)
}

// Intercepts reports true for results only.
func (f ResultFunc) Intercepts(_ string, results bool) bool { return results }

type callerKey struct{}

// WithCaller returns ctx carrying who makes the requests made with it (a
// proxy's downstream host, a user): interceptors see it as Request.Caller.
func WithCaller(ctx context.Context, caller string) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}

// CallerFrom returns the caller WithCaller set, or "".
func CallerFrom(ctx context.Context) string {
	s, _ := ctx.Value(callerKey{}).(string)
	return s
}
