// Package guest is the Go SDK for Snodo handler modules: it implements the
// guest side of the ABI (abi/ABI.md) so that a handler is a typed Go
// function.
//
//	package main
//
//	import "github.com/snodo/snodo/abi/guest"
//
//	func init() {
//		guest.HandleElicitation(func(ctx guest.Context, req guest.ElicitRequest) (guest.ElicitResult, error) {
//			ctx.Infof("asked: %s", req.Message)
//			return guest.ElicitResult{Action: guest.Decline}, nil
//		})
//	}
//
//	func main() {}
//
// Build it as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o handler.wasm .
//
// Note: in a c-shared Wasm module, package initialisers run (from
// _initialize) but main does not: register handlers in init.
// Note: an instance runs one call at a time, so handlers need no locking;
// global state lives as long as the instance, which the host may replace
// at any time (after a failure, or with a fresh one for concurrency).
//
// The package builds on every platform; off wasip1 the host imports are
// inert, which lets handler logic be tested with go test (see Call).
package guest

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/snodo/snodo/abi"
)

var (
	handlers = map[string]func(Context, json.RawMessage) (any, error){}
	progress func(Context, Progress) (Action, error)
	events   func(Context, Event) (Action, error)
	name     string
)

// SetName sets the module's name in its manifest (used in host logs).
func SetName(n string) { name = n }

func register[Req, Res any](method string, f func(Context, Req) (Res, error)) {
	if f == nil {
		panic("guest: nil handler for " + method)
	}
	handlers[method] = func(ctx Context, params json.RawMessage) (any, error) {
		var req Req
		if len(params) > 0 {
			if err := json.Unmarshal(params, &req); err != nil {
				return nil, &Error{Code: -32602, Message: fmt.Sprintf("invalid %s params: %v", method, err)}
			}
		}
		return f(ctx, req)
	}
}

// HandleElicitation makes the module answer elicitation/create with f.
func HandleElicitation(f func(Context, ElicitRequest) (ElicitResult, error)) {
	register(abi.MethodElicitationCreate, f)
}

// HandleSampling makes the module answer sampling/createMessage with f.
func HandleSampling(f func(Context, SamplingRequest) (SamplingResult, error)) {
	register(abi.MethodSamplingCreate, f)
}

// HandleRoots makes the module answer roots/list with f.
func HandleRoots(f func(Context, RootsRequest) (RootsResult, error)) {
	register(abi.MethodRootsList, f)
}

// HandleProgress makes the module a progress consumer: f sees every
// progress notification of a request and returns Stop (or an error) to
// cancel it.
func HandleProgress(f func(Context, Progress) (Action, error)) { progress = f }

// HandleEvents makes the module a subscription consumer: f sees every
// event and returns Stop to end the subscription (an error ends it too).
func HandleEvents(f func(Context, Event) (Action, error)) { events = f }

// Context is what a handler has at hand: the method it answers, the
// module's configuration and logging.
type Context struct {
	// Method is the request's method, the event's method, or
	// "notifications/progress".
	Method string
}

// Config decodes the module's configuration into v.
func (Context) Config(v any) error { return Config(v) }

// Debugf, Infof, Warnf and Errorf log through the host.
func (Context) Debugf(format string, args ...any) { logf(abi.LevelDebug, format, args...) }
func (Context) Infof(format string, args ...any)  { logf(abi.LevelInfo, format, args...) }
func (Context) Warnf(format string, args ...any)  { logf(abi.LevelWarn, format, args...) }
func (Context) Errorf(format string, args ...any) { logf(abi.LevelError, format, args...) }

func logf(level abi.Level, format string, args ...any) {
	hostLog(level, fmt.Sprintf(format, args...))
}

var configCache []byte

// ConfigBytes returns the module's configuration JSON ("null" when none).
func ConfigBytes() []byte {
	if configCache == nil {
		configCache = hostConfig()
	}
	return configCache
}

// Config decodes the module's configuration into v; a null configuration
// leaves v as it is.
func Config(v any) error {
	b := ConfigBytes()
	if string(b) == "null" || len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("guest: module configuration: %w", err)
	}
	return nil
}

// manifest returns the module's manifest: what has been registered.
func manifest() []byte {
	m := abi.Manifest{ABI: abi.Version, Name: name, Progress: progress != nil, Events: events != nil}
	for _, method := range abi.KnownMethods {
		if handlers[method] != nil {
			m.Methods = append(m.Methods, method)
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// dispatch runs one call of the entry point e with its input, and returns
// the status and output (nil for none).
func dispatch(export string, input []byte) (abi.Status, []byte) {
	switch export {
	case abi.ExportHandle:
		var req abi.Request
		if err := json.Unmarshal(input, &req); err != nil {
			return errorOutput(&Error{Code: -32602, Message: "invalid request envelope: " + err.Error()})
		}
		h := handlers[req.Method]
		if h == nil {
			return errorOutput(&Error{Code: -32601, Message: "method not found: " + req.Method})
		}
		res, err := h(Context{Method: req.Method}, req.Params)
		if err != nil {
			return errorOutput(err)
		}
		out, err := json.Marshal(res)
		if err != nil {
			return errorOutput(fmt.Errorf("encode result: %w", err))
		}
		return abi.StatusOK, out
	case abi.ExportProgress:
		if progress == nil {
			return errorOutput(&Error{Code: -32601, Message: "module does not consume progress"})
		}
		var env abi.Progress
		var p Progress
		if err := json.Unmarshal(input, &env); err != nil {
			return errorOutput(err)
		}
		if err := json.Unmarshal(env.Params, &p); err != nil {
			return errorOutput(&Error{Code: -32602, Message: "invalid progress params: " + err.Error()})
		}
		return action(progress(Context{Method: "notifications/progress"}, p))
	case abi.ExportEvent:
		if events == nil {
			return errorOutput(&Error{Code: -32601, Message: "module does not consume events"})
		}
		var ev Event
		if err := json.Unmarshal(input, &ev); err != nil {
			return errorOutput(err)
		}
		return action(events(Context{Method: ev.Method}, ev))
	}
	return errorOutput(errors.New("unknown entry point " + export))
}

func action(a Action, err error) (abi.Status, []byte) {
	if err != nil {
		return errorOutput(err)
	}
	if a == Stop {
		return abi.StatusStop, nil
	}
	return abi.StatusOK, nil
}

func errorOutput(err error) (abi.Status, []byte) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: -32603, Message: err.Error()}
	}
	out, merr := json.Marshal(e)
	if merr != nil {
		out, _ = json.Marshal(&Error{Code: e.Code, Message: e.Message})
	}
	return abi.StatusError, out
}

// Call runs the module's registered handler for an ABI entry point
// (abi.ExportHandle, abi.ExportProgress or abi.ExportEvent) on an input
// envelope, as the host would, and returns the status and output. It lets
// handler logic be tested natively with go test; configuration is the one
// given to SetTestConfig.
func Call(export string, input []byte) (abi.Status, []byte) { return dispatch(export, input) }

// Manifest returns the manifest the module gives the host.
func Manifest() []byte { return manifest() }
