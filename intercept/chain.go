package intercept

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/snodo/snodo/jsonrpc"
)

// Chain runs interceptors in order: requests in the order given, results
// in the reverse order. The zero Chain, and a nil *Chain, intercept
// nothing. A Chain is safe for concurrent use once made.
type Chain struct {
	list []Interceptor
}

// NewChain returns the chain of list, in that order.
func NewChain(list ...Interceptor) *Chain {
	return &Chain{list: append([]Interceptor(nil), list...)}
}

// Len returns how many interceptors the chain holds.
func (c *Chain) Len() int {
	if c == nil {
		return 0
	}
	return len(c.list)
}

// Intercepts reports whether an interceptor of the chain intercepts the
// requests (results false) or the results of method.
func (c *Chain) Intercepts(method string, results bool) bool {
	if c == nil {
		return false
	}
	for _, i := range c.list {
		if wants(i, method, results) {
			return true
		}
	}
	return false
}

func wants(i Interceptor, method string, results bool) bool {
	if f, ok := i.(Filter); ok {
		return f.Intercepts(method, results)
	}
	return true
}

// name is how errors name the interceptor at index n of the chain.
func (c *Chain) name(n int) string {
	if s := nameOf(c.list[n]); s != "" {
		return s
	}
	return "#" + strconv.Itoa(n+1)
}

// nameOf is i's name (Namer, or a Funcs' Name), or "".
func nameOf(i Interceptor) string {
	switch v := i.(type) {
	case Namer:
		return v.Name()
	case Funcs:
		return v.Name
	case *Funcs:
		return v.Name
	}
	return ""
}

func timeoutOf(i Interceptor) time.Duration {
	if t, ok := i.(Timeouter); ok && t.Timeout() > 0 {
		return t.Timeout()
	}
	return DefaultTimeout
}

var errDeadline = errors.New("interceptor deadline")

// timeoutGrace is how long past its own Timeout the chain waits for a
// Timeouter before it refuses its decision.
const timeoutGrace = time.Second

// run calls one interceptor under its own deadline. A decision given
// after the deadline, or after ctx ended, is a failure: it may have been
// decided on less than the request.
func run(ctx context.Context, i Interceptor, f func(ctx context.Context) (Decision, error)) (Decision, error) {
	d := timeoutOf(i)
	if _, own := i.(Timeouter); own {
		// The interceptor keeps its own deadline (a Wasm module stops
		// its guest at it, and says so): no timer of the chain's, whose
		// cost would be most of a Wasm no-op's. A decision that still
		// came later than the deadline and a grace is not taken.
		start := time.Now()
		dec, err := f(ctx)
		if err == nil {
			if took := time.Since(start); took > d+timeoutGrace {
				err = fmt.Errorf("deadline of %s exceeded (it decided after %s)", d, took.Round(time.Millisecond))
			} else if ctx.Err() != nil {
				err = context.Cause(ctx)
			}
		}
		return dec, err
	}
	cctx, cancel := context.WithTimeoutCause(ctx, d, errDeadline)
	defer cancel()
	dec, err := f(cctx)
	if err == nil && cctx.Err() != nil {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		} else {
			err = fmt.Errorf("deadline of %s exceeded", d)
		}
	}
	return dec, err
}

// Request runs the request interceptors that intercept r.Method over r, in
// order, each seeing the previous one's rewrite, and returns the params to
// send: r.Params itself when nothing was rewritten. r.Params must be a JSON
// object (or empty: {}). A denial is a *jsonrpc.Error with CodeDenied; an
// interceptor's failure, or params that are ambiguous (CheckUnambiguous),
// is a *jsonrpc.Error too; either way nothing may be sent.
func (c *Chain) Request(ctx context.Context, r *Request) (json.RawMessage, error) {
	if !c.Intercepts(r.Method, false) {
		return r.Params, nil
	}
	if len(bytes.TrimSpace(r.Params)) == 0 || string(bytes.TrimSpace(r.Params)) == "null" {
		r.Params = json.RawMessage(`{}`)
	}
	if err := CheckUnambiguous(r.Params); err != nil {
		return nil, &jsonrpc.Error{Kind: jsonrpc.KindProtocol, Code: jsonrpc.CodeInvalidParams, Cause: err,
			Message: fmt.Sprintf("params for %s refused, not sent: %v (interceptors check them, and the server must read what they checked)", r.Method, err)}
	}
	for n, i := range c.list {
		if !wants(i, r.Method, false) {
			continue
		}
		dec, err := run(ctx, i, func(ctx context.Context) (Decision, error) { return i.InterceptRequest(ctx, r) })
		if err != nil {
			return nil, c.failed(n, r.Method, false, err)
		}
		switch dec.Action {
		case Continue:
		case Deny:
			return nil, c.denied(n, r.Method, false, dec.Error)
		case Rewrite:
			p, err := CheckRewrite(r.Method, r.Params, dec.Params)
			if err != nil {
				return nil, c.failed(n, r.Method, false, fmt.Errorf("invalid rewrite: %w", err))
			}
			r.Params = p
		default:
			return nil, c.failed(n, r.Method, false, fmt.Errorf("invalid decision %s for a request (want continue, deny or rewrite)", dec.Action))
		}
	}
	return r.Params, nil
}

// Result runs the result interceptors that intercept r.Method over r, in
// the reverse order, each seeing the previous one's replacement, and
// returns what the caller gets: a result, or an error (the server's, a
// replacement, a denial with CodeDenied, or an interceptor's failure).
// A result with ambiguous keys is withheld (-32603).
func (c *Chain) Result(ctx context.Context, r *Result) (json.RawMessage, error) {
	if !c.Intercepts(r.Method, true) {
		return r.Result, errOrNil(r.Error)
	}
	if r.Error == nil {
		if err := CheckUnambiguous(r.Result); err != nil {
			return nil, &jsonrpc.Error{Kind: jsonrpc.KindProtocol, Code: jsonrpc.CodeInternalError, Cause: err,
				Message: fmt.Sprintf("the server's %s result was withheld: %v (interceptors check it, and the caller must read what they checked)", r.Method, err)}
		}
	}
	for n := len(c.list) - 1; n >= 0; n-- {
		i := c.list[n]
		if !wants(i, r.Method, true) {
			continue
		}
		dec, err := run(ctx, i, func(ctx context.Context) (Decision, error) { return i.InterceptResult(ctx, r) })
		if err != nil {
			return nil, c.failed(n, r.Method, true, err)
		}
		switch dec.Action {
		case Continue:
		case Deny:
			return nil, c.denied(n, r.Method, true, dec.Error)
		case Replace:
			switch {
			case dec.Result != nil && dec.Error == nil:
				if err := CheckUnambiguous(dec.Result); err != nil {
					return nil, c.failed(n, r.Method, true, fmt.Errorf("invalid replacement result: %w", err))
				}
				r.Result, r.Error = bytes.TrimSpace(dec.Result), nil
			case dec.Result == nil && dec.Error != nil:
				e := *dec.Error
				if e.Kind == "" {
					e.Kind = jsonrpc.KindServer
				}
				r.Result, r.Error = nil, &e
			default:
				return nil, c.failed(n, r.Method, true, errors.New("invalid replacement: want exactly one of a result and an error"))
			}
		default:
			return nil, c.failed(n, r.Method, true, fmt.Errorf("invalid decision %s for a result (want continue, deny or replace)", dec.Action))
		}
	}
	return r.Result, errOrNil(r.Error)
}

func errOrNil(e *jsonrpc.Error) error {
	if e == nil {
		return nil
	}
	return e
}

// denied is the CodeDenied error of a denial by interceptor n.
func (c *Chain) denied(n int, method string, results bool, reason *jsonrpc.Error) *jsonrpc.Error {
	name := c.name(n)
	msg := fmt.Sprintf("request %s denied by interceptor %q; it was not sent", method, name)
	if results {
		msg = fmt.Sprintf("the answer to %s was denied by interceptor %q and withheld", method, name)
	}
	data := struct {
		Interceptor string         `json:"interceptor"`
		Method      string         `json:"method"`
		Error       *jsonrpc.Error `json:"error,omitempty"`
	}{name, method, reason}
	if reason != nil && reason.Message != "" {
		msg += ": " + reason.Message
	}
	raw, _ := json.Marshal(data)
	return &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: CodeDenied, Message: msg, Data: raw}
}

// failed is the -32603 error of interceptor n's failure: fail closed.
func (c *Chain) failed(n int, method string, results bool, err error) *jsonrpc.Error {
	name := c.name(n)
	what := "the request was not sent"
	if results {
		what = "the answer was withheld"
	}
	cause := err.Error()
	var je *jsonrpc.Error
	if errors.As(err, &je) && je.Message != "" {
		cause = je.Message
	}
	e := &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("interceptor %q failed on %s, so %s: %s", name, method, what, cause),
		Cause:   &failedCause{msg: cause, err: err}}
	if je != nil && len(je.Data) > 0 {
		e.Data = je.Data
	} else {
		e.Data, _ = json.Marshal(map[string]string{"interceptor": name, "cause": err.Error()})
	}
	return e
}

// failedCause is the cause of an interceptor's failure: its error, said as
// the message says it, matching ErrFailed.
type failedCause struct {
	msg string
	err error
}

func (f *failedCause) Error() string        { return f.msg }
func (f *failedCause) Unwrap() error        { return f.err }
func (f *failedCause) Is(target error) bool { return target == ErrFailed }

// addressed are the members of a request's params that say what it
// addresses, which a rewrite must keep.
var addressed = map[string][]string{
	"tools/call":            {"name"},
	"prompts/get":           {"name"},
	"resources/read":        {"uri"},
	"resources/subscribe":   {"uri"},
	"resources/unsubscribe": {"uri"},
	"tasks/get":             {"taskId"},
	"tasks/result":          {"taskId"},
	"tasks/cancel":          {"taskId"},
	"tasks/update":          {"taskId"},
}

// clientMembers are members of params that the client writes itself in a
// multi round-trip request.
var clientMembers = []string{"inputResponses", "requestState"}

// CheckRewrite checks a request interceptor's rewrite of orig (the params
// it was given) for method, and returns it compact: a JSON object without
// ambiguous keys (CheckUnambiguous), with the members that say what the
// request addresses unchanged (the name of tools/call and prompts/get,
// the uri of resources/read, subscribe and unsubscribe, the taskId of the
// task requests), and without inputResponses or requestState unless orig
// had them, as they were.
func CheckRewrite(method string, orig, rewrite json.RawMessage) (json.RawMessage, error) {
	if err := CheckUnambiguous(rewrite); err != nil {
		return nil, err
	}
	var o, w map[string]json.RawMessage
	if err := json.Unmarshal(orig, &o); err != nil {
		return nil, fmt.Errorf("the original params are not a JSON object: %v", err)
	}
	if err := json.Unmarshal(rewrite, &w); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	keep := append(append([]string(nil), addressed[method]...), clientMembers...)
	for _, k := range keep {
		if !sameJSON(o[k], w[k]) {
			return nil, fmt.Errorf("it changes %q, which a rewrite of %s must keep", k, method)
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, rewrite); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func sameJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return false
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
}
