package intercept

import (
	"context"
	"time"
)

// Event is one decision of an interceptor, for an audit log.
type Event struct {
	// Interceptor is the interceptor's name (Namer), or "".
	Interceptor string
	// Method is the request's method; Results says the decision was on
	// the server's answer.
	Method  string
	Results bool
	// Action is what was decided; Err is set when the interceptor failed
	// (and Action is then Continue, which the chain ignores: it fails the
	// call).
	Action Action
	Err    error
	// Message is a denial's or a replacement error's message.
	Message string
	// Caller is who made the request (Request.Caller), or "".
	Caller string
}

// Observe returns i reporting each of its decisions other than Continue,
// and each of its failures, to f (called in the calling goroutine, after
// the decision). It keeps i's name, timeout and filter.
func Observe(i Interceptor, f func(Event)) Interceptor {
	return &observed{i: i, f: f}
}

type observed struct {
	i Interceptor
	f func(Event)
}

func (o *observed) report(method, caller string, results bool, d Decision, err error) {
	if err == nil && d.Action == Continue {
		return
	}
	e := Event{Interceptor: o.Name(), Method: method, Caller: caller, Results: results, Action: d.Action, Err: err}
	if err != nil {
		e.Action = Continue
	}
	if d.Error != nil {
		e.Message = d.Error.Message
	}
	o.f(e)
}

func (o *observed) InterceptRequest(ctx context.Context, r *Request) (Decision, error) {
	d, err := o.i.InterceptRequest(ctx, r)
	o.report(r.Method, r.Caller, false, d, err)
	return d, err
}

func (o *observed) InterceptResult(ctx context.Context, r *Result) (Decision, error) {
	d, err := o.i.InterceptResult(ctx, r)
	o.report(r.Method, r.Caller, true, d, err)
	return d, err
}

func (o *observed) Name() string { return nameOf(o.i) }

func (o *observed) Timeout() time.Duration { return timeoutOf(o.i) }

func (o *observed) Intercepts(method string, results bool) bool {
	return wants(o.i, method, results)
}
