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
//			if _, ok := req.RequestedSchema.Properties.Get("name"); ok {
//				return guest.ElicitResult{Action: guest.Accept, Content: guest.Fields{guest.String("name", "Ada")}}, nil
//			}
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
// The SDK decodes requests and encodes results with its own JSON codec,
// which gives what encoding/json gives for the same types, without
// reflection. Under Wasm with the host's deadline mechanism, every function
// call and loop iteration of the guest costs a check by the host, and an
// allocation several microseconds; so the codec decodes the params while
// it reads the input, allocates nothing for the request itself, and makes
// one copy of the input per call, shared by all the strings and raw values
// of the request (a string a handler keeps keeps that copy alive). Values
// of other types in a result (a handler's own struct in a sampling
// result's Content or an Error's Data, say) are encoded by encoding/json.
//
// An elicitation form's fields are a slice, Properties, in the order of the
// request, and an accepted form's values are one too, Fields, made with
// String, Number, Integer, Bool and Strings: no map is built, hashed or
// sorted per call, and the form keeps its order.
//
// Between calls, while a garbage collection is marking, the SDK yields to
// the runtime's own goroutines (the collector's background worker among
// them): in a Wasm module nothing else runs once an exported function has
// returned, and a cycle left unfinished frees nothing. A handler that
// allocates a great deal within a single call can call runtime.Gosched
// itself.
//
// The package builds on every platform; off wasip1 the host imports are
// inert, which lets handler logic be tested with go test (see Call).
package guest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/snodo/snodo/abi"
)

var (
	// handlers are the module's handlers, one per method: a handful at
	// most, found by a scan, which under Wasm costs less than hashing the
	// method for a map.
	handlers []methodHandler
	progress func(Context, Progress) (Action, error)
	events   func(Context, Event) (Action, error)
	name     string
	// samplingTools is set by DeclareSamplingTools.
	samplingTools bool
)

// DeclareSamplingTools says the module's sampling handler (HandleSampling)
// supports tool use: the manifest says "samplingTools": true, the client
// declares MCP's sampling.tools capability, and SamplingRequest.Tools may be
// set.
func DeclareSamplingTools() { samplingTools = true }

// SetName sets the module's name in its manifest (used in host logs).
func SetName(n string) { name = n }

type methodHandler struct {
	method string
	h      handler
}

// handlerFor returns the handler of method, or nil.
func handlerFor(method string) handler {
	for i := range handlers {
		if handlers[i].method == method {
			return handlers[i].h
		}
	}
	return nil
}

// handler answers one method. Its request lives in the handler, decoded
// in place while the input is read: an instance runs one call at a time
// (and Call takes callMu), so one request per method suffices, and
// nothing is allocated for it.
type handler interface {
	// reset zeroes the request.
	reset()
	// decode reads params into the request, from the cursor.
	decode(d *decoder) error
	// run calls the handler with the request and appends the result to
	// out.
	run(ctx Context, out []byte) ([]byte, error)
}

type typedHandler[Req any, PReq interface {
	*Req
	jsonDecoder
}, Res jsonAppender] struct {
	f   func(Context, Req) (Res, error)
	req Req
}

func (h *typedHandler[Req, PReq, Res]) reset() {
	var zero Req
	h.req = zero
}

func (h *typedHandler[Req, PReq, Res]) decode(d *decoder) error {
	return PReq(&h.req).decodeJSON(d)
}

func (h *typedHandler[Req, PReq, Res]) run(ctx Context, out []byte) ([]byte, error) {
	res, err := h.f(ctx, h.req)
	if err != nil {
		return out, err
	}
	n := len(out)
	if out, err = res.appendJSON(out); err != nil {
		return out[:n], fmt.Errorf("encode result: %w", err)
	}
	return out, nil
}

func register[Req any, PReq interface {
	*Req
	jsonDecoder
}, Res jsonAppender](method string, f func(Context, Req) (Res, error)) {
	if f == nil {
		panic("guest: nil handler for " + method)
	}
	h := &typedHandler[Req, PReq, Res]{f: f}
	for i := range handlers {
		if handlers[i].method == method {
			handlers[i].h = h
			return
		}
	}
	handlers = append(handlers, methodHandler{method, h})
}

// HandleElicitation makes the module answer elicitation/create with f.
func HandleElicitation(f func(Context, ElicitRequest) (ElicitResult, error)) {
	register[ElicitRequest, *ElicitRequest](abi.MethodElicitationCreate, f)
}

// HandleSampling makes the module answer sampling/createMessage with f.
func HandleSampling(f func(Context, SamplingRequest) (SamplingResult, error)) {
	register[SamplingRequest, *SamplingRequest](abi.MethodSamplingCreate, f)
}

// HandleRoots makes the module answer roots/list with f.
func HandleRoots(f func(Context, RootsRequest) (RootsResult, error)) {
	register[RootsRequest, *RootsRequest](abi.MethodRootsList, f)
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
	m := abi.Manifest{ABI: 1, Name: name, Progress: progress != nil, Events: events != nil,
		SamplingTools: samplingTools && handlerFor(abi.MethodSamplingCreate) != nil}
	if ic := interceptManifest(); ic != nil {
		// Interceptors need version 2; without them the module stays a
		// version-1 module, which hosts that know only version 1 load.
		m.ABI, m.Intercept = abi.VersionInterceptors, ic
	}
	for _, method := range abi.KnownMethods {
		if handlerFor(method) != nil {
			m.Methods = append(m.Methods, method)
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// dec is the decoder of the call being made (one at a time); its scratch
// buffer is kept from call to call.
var dec decoder

// callMu makes Call run one call at a time, as an instance does.
var callMu sync.Mutex

// dispatch runs one call of the entry point e with its input, and returns
// the status and output (nil for none), appended to out. One call at a
// time.
//
// The decoded strings and raw values share the memory of one copy of the
// input, made here: the host reuses its input buffer for the next call,
// while a handler may keep what it was given. One copy per call instead
// of one per string matters under Wasm, where each allocation costs
// microseconds.
func dispatch(export string, input, out []byte) (abi.Status, []byte) {
	out = out[:0]
	if export == abi.ExportInterceptRequest || export == abi.ExportInterceptResult {
		// Interceptors keep nothing of the input past the call but what
		// they copy: json.Unmarshal copies the raw values.
		return intercept(export, input, out)
	}
	d := &dec
	*d = decoder{scratch: d.scratch[:0]}
	if len(input) <= arenaInput {
		d.arena = new(callArena)
		d.data = d.arena.input[:len(input):len(input)]
		copy(d.data, input)
	} else {
		d.data = bytes.Clone(input) // and no arena: its parts are allocated as needed
	}
	defer func() { d.data, d.arena = nil, nil }()
	switch export {
	case abi.ExportHandle:
		h, method, err := d.request()
		if err != nil {
			if h == nil {
				return errorOutput(out, &Error{Code: -32602, Message: "invalid request envelope: " + err.Error()})
			}
			h.reset()
			return errorOutput(out, &Error{Code: -32602, Message: fmt.Sprintf("invalid %s params: %v", method, err)})
		}
		if h == nil {
			return errorOutput(out, &Error{Code: -32601, Message: "method not found: " + method})
		}
		out, err = h.run(Context{Method: method}, out)
		h.reset()
		if err != nil {
			return errorOutput(out[:0], err)
		}
		return abi.StatusOK, out
	case abi.ExportProgress:
		if progress == nil {
			return errorOutput(out, &Error{Code: -32601, Message: "module does not consume progress"})
		}
		params, err := decodeProgressEnvelope(d.data)
		if err != nil {
			return errorOutput(out, err)
		}
		var p Progress
		*d = decoder{data: params, scratch: d.scratch}
		d.ws()
		if err := d.done(p.decodeJSON(d)); err != nil {
			return errorOutput(out, &Error{Code: -32602, Message: "invalid progress params: " + err.Error()})
		}
		a, err := progress(Context{Method: "notifications/progress"}, p)
		return action(out, a, err)
	case abi.ExportEvent:
		if events == nil {
			return errorOutput(out, &Error{Code: -32601, Message: "module does not consume events"})
		}
		var ev Event
		d.ws()
		if err := d.done(ev.decodeJSON(d)); err != nil {
			return errorOutput(out, err)
		}
		a, err := events(Context{Method: ev.Method}, ev)
		return action(out, a, err)
	}
	return errorOutput(out, errors.New("unknown entry point "+export))
}

func action(out []byte, a Action, err error) (abi.Status, []byte) {
	if err != nil {
		return errorOutput(out, err)
	}
	if a == Stop {
		return abi.StatusStop, nil
	}
	return abi.StatusOK, nil
}

func errorOutput(out []byte, err error) (abi.Status, []byte) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: -32603, Message: err.Error()}
	}
	b, merr := e.appendJSON(out[:0])
	if merr != nil {
		b, _ = (&Error{Code: e.Code, Message: e.Message}).appendJSON(out[:0])
	}
	return abi.StatusError, b
}

// Call runs the module's registered handler for an ABI entry point
// (abi.ExportHandle, abi.ExportProgress, abi.ExportEvent,
// abi.ExportInterceptRequest or abi.ExportInterceptResult) on an input
// envelope, as the host would, and returns the status and output. It lets
// handler logic be tested natively with go test; configuration is the one
// given to SetTestConfig.
// Calls are made one at a time, as an instance makes them.
func Call(export string, input []byte) (abi.Status, []byte) {
	callMu.Lock()
	defer callMu.Unlock()
	return dispatch(export, input, nil)
}

// Manifest returns the manifest the module gives the host.
func Manifest() []byte { return manifest() }
