package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/internal/exchange"
	"github.com/snodo/snodo/jsonrpc"
)

// capabilities are the client capabilities a host declares (initialize's
// capabilities, or a 2026-07-28 request's
// _meta["io.modelcontextprotocol/clientCapabilities"]), as far as
// forwarding needs them.
type capabilities struct {
	Elicitation json.RawMessage `json:"elicitation,omitempty"`
	Sampling    json.RawMessage `json:"sampling,omitempty"`
	Roots       json.RawMessage `json:"roots,omitempty"`
}

// declares reports whether the host declared the capability method needs.
func (c capabilities) declares(method string) bool {
	present := func(r json.RawMessage) bool { return len(r) > 0 && string(r) != "null" }
	switch method {
	case abi.MethodElicitationCreate:
		return present(c.Elicitation)
	case abi.MethodSamplingCreate:
		return present(c.Sampling)
	case abi.MethodRootsList:
		return present(c.Roots)
	}
	return false
}

// Declares reports whether client capabilities (an initialize's
// capabilities object) declare the capability a server-to-client request
// of method needs: elicitation, sampling or roots.
func Declares(caps json.RawMessage, method string) bool {
	var c capabilities
	_ = json.Unmarshal(caps, &c)
	return c.declares(method)
}

// CapabilityName is the client capability a server-to-client request of
// method needs (elicitation, sampling, roots), or method itself.
func CapabilityName(method string) string {
	switch method {
	case abi.MethodElicitationCreate:
		return "elicitation"
	case abi.MethodSamplingCreate:
		return "sampling"
	case abi.MethodRootsList:
		return "roots"
	}
	return method
}

// HandleRequest implements snodo.Handler: it forwards what the server
// asks of the client to the host.
//
//   - A 2026-07-28 server's input request belongs to the call that got
//     it, and so does a legacy server's request on the HTTP stream of a
//     call; when that call serves a 2026-07-28 host request, the input
//     goes to the host in an input_required result of that request.
//   - Otherwise, a host that opened with initialize gets it as a
//     server-to-client request.
//   - Otherwise (a legacy server's request over stdio, or on the HTTP GET
//     stream, while only 2026-07-28 host requests are in flight), it goes
//     to the oldest host request waiting for a multi round-trip capable
//     call, as input of that request.
//
// A host that did not declare the capability, or no host request to carry
// the input, is answered -32601 naming the missing handler.
func (p *Proxy) HandleRequest(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	started := time.Now()
	rec := AuditRecord{Direction: DirServerToHost, Method: method, Decision: DecisionAllow}
	res, err := p.route(ctx, method, params, &rec)
	if err != nil {
		var je *jsonrpc.Error
		if e, ok := err.(*jsonrpc.Error); ok {
			je = e
		} else {
			je = &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError, Message: err.Error(), Cause: err}
		}
		rec.ErrorCode = je.Code
		err = je
	}
	p.audit.write(rec, started)
	return res, err
}

// AuditIntercept writes one decision of an interceptor module to the audit
// log (runtime.Config.OnIntercept): a deny, rewrite or replace, or a
// failure.
func (p *Proxy) AuditIntercept(e intercept.Event) {
	rec := AuditRecord{Direction: DirIntercept, Method: e.Method, Module: e.Interceptor, Phase: "request"}
	if e.Results {
		rec.Phase = "result"
	}
	switch {
	case e.Err != nil:
		rec.Decision, rec.Reason = DecisionFail, e.Err.Error()
	case e.Action == intercept.Deny:
		rec.Decision, rec.Reason = DecisionDeny, e.Message
		rec.ErrorCode = intercept.CodeDenied
	case e.Action == intercept.Rewrite:
		rec.Decision = DecisionRewrite
	case e.Action == intercept.Replace:
		rec.Decision = DecisionReplace
	default:
		rec.Decision = e.Action.String()
	}
	p.audit.write(rec, time.Now())
}

// AuditModule wraps the handler of a Wasm module that answers method, so
// that each server request it answers is written to the audit log as
// forwarded ones are: method, module, duration, the JSON-RPC error code
// of a failure, and nothing of the request or answer. Give it to the
// runtime (runtime.Config.WrapModule).
func (p *Proxy) AuditModule(method, module string, h snodo.Handler) snodo.Handler {
	return snodo.HandlerFunc(func(ctx context.Context, m string, params json.RawMessage) (json.RawMessage, error) {
		started := time.Now()
		res, err := h.HandleRequest(ctx, m, params)
		rec := AuditRecord{Direction: DirServerToModule, Method: m, Module: module, Decision: DecisionAllow}
		if err != nil {
			var je *jsonrpc.Error
			if errors.As(err, &je) && je.Code != 0 {
				rec.ErrorCode = je.Code
			} else {
				rec.ErrorCode = jsonrpc.CodeInternalError
			}
			if ctx.Err() != nil {
				rec.Cancelled = true
			}
		}
		p.audit.write(rec, started)
		return res, err
	})
}

func (p *Proxy) route(ctx context.Context, method string, params json.RawMessage, rec *AuditRecord) (json.RawMessage, error) {
	select {
	case <-p.ready:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	// The client passes the call's context to the handlers of its input
	// requests (a 2026-07-28 server's, a legacy server's over HTTP on the
	// call's stream): it names the exchange the call belongs to.
	ex := exchange.FromContext(ctx)
	select {
	case <-p.hostGone:
		rec.Decision = DecisionDeny
		return nil, noHandler(method, "and the host has closed the connection")
	default:
	}
	p.mu.Lock()
	legacy, caps := p.hostInit, p.hostCaps
	p.mu.Unlock()
	if ex == nil && !legacy {
		ex = p.exchanges.Oldest()
	}
	if ex != nil {
		caps = exchangeCapabilities(ex)
	} else if !legacy {
		rec.Decision = DecisionDeny
		return nil, noHandler(method, "and no host request is in flight to carry it to the host")
	}
	if !caps.declares(method) {
		rec.Decision = DecisionDeny
		return nil, noHandler(method, fmt.Sprintf("and the host did not declare the %s capability", CapabilityName(method)))
	}
	if ex != nil {
		return ex.Ask(ctx, method, params)
	}
	return p.askHost(ctx, method, params)
}

func noHandler(method, why string) *jsonrpc.Error {
	return &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeMethodNotFound,
		Message: fmt.Sprintf("%s: no Wasm handler module is configured for it (--handler), %s", method, why)}
}

// askHost sends the host a server-to-client request and waits for its
// answer. When ctx ends first (the server cancelled its request, the call
// timed out), the host is told with notifications/cancelled.
func (p *Proxy) askHost(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	ch := make(chan *jsonrpc.Response, 1)
	p.mu.Lock()
	p.nextID++
	id := jsonrpc.StringID(fmt.Sprintf("snodo-proxy-%d", p.nextID))
	p.pending[id] = ch
	p.mu.Unlock()
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	if method == abi.MethodElicitationCreate {
		p.rememberURLElicitation(params)
	}
	p.writeMsg(&jsonrpc.Request{ID: id, Method: method, Params: params})
	forget := func() {
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			e := *r.Error
			e.Kind = jsonrpc.KindHandler
			return nil, &e
		}
		return r.Result, nil
	case <-ctx.Done():
		forget()
		p.notify("notifications/cancelled", map[string]any{"requestId": id, "reason": "the server no longer needs the answer"})
		return nil, context.Cause(ctx)
	case <-p.hostGone:
		forget()
		return nil, &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError, Message: method + ": the host closed the connection"}
	}
}

// maxURLElicitations bounds the URL-mode elicitations remembered for their
// completion notification; past it the oldest are forgotten.
const maxURLElicitations = 256

// rememberURLElicitation notes the elicitationId of a URL-mode
// elicitation forwarded to a 2025-11-25 host, the only version with
// notifications/elicitation/complete.
func (p *Proxy) rememberURLElicitation(params json.RawMessage) {
	r, err := snodo.ParseElicitRequest(params)
	if err != nil || r.Mode != "url" || r.ElicitationID == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hostVer != "2025-11-25" || slices.Contains(p.urlElicits, r.ElicitationID) {
		return
	}
	if len(p.urlElicits) >= maxURLElicitations {
		p.urlElicits = slices.Delete(p.urlElicits, 0, 1)
	}
	p.urlElicits = append(p.urlElicits, r.ElicitationID)
}

// OnElicitationComplete carries the server's
// notifications/elicitation/complete to the host when the elicitation it
// completes was forwarded to the host; give it to the client
// (snodo.Options.OnElicitationComplete). Others are ignored, as MCP
// requires of an unknown elicitationId.
func (p *Proxy) OnElicitationComplete(elicitationID string) {
	p.mu.Lock()
	i := slices.Index(p.urlElicits, elicitationID)
	if i >= 0 {
		p.urlElicits = slices.Delete(p.urlElicits, i, i+1)
	}
	p.mu.Unlock()
	if i < 0 {
		return
	}
	// The hook runs in the client's reader, which must not wait for the
	// host.
	p.spawn(func() {
		p.notify("notifications/elicitation/complete", map[string]string{"elicitationId": elicitationID})
	})
}
