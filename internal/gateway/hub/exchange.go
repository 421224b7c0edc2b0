package hub

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/exchange"
	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/internal/proxy"
	"github.com/snodo/snodo/jsonrpc"
)

// exchangePrefix starts the requestState of a call held open on a legacy
// server (package exchange): it tells it apart from a sealed one (mrtr).
const exchangePrefix = "snodo-gateway-held:"

// defaultMaxHeldCalls is Options.MaxHeldCalls' default.
const defaultMaxHeldCalls = 64

// exchangeHost describes the host request attached to an exchange last.
type exchangeHost struct {
	req   *gateway.Request
	token json.RawMessage // its progress token, or nil
}

// legacyServer reports whether b is connected to a server of a legacy
// protocol version (2024-11-05 … 2025-11-25), which asks the client
// requests of its own rather than inputs of a 2026-07-28 call.
func (b *backend) legacyServer() bool {
	rt, err := b.runner()
	return err == nil && rt.Client().Server().Era != snodo.EraModern
}

// heldCall serves a 2026-07-28 host's tools/call, prompts/get or
// resources/read to a legacy server: the call is held open on the server,
// in a goroutine of its own, while the host answers the server's requests
// in input_required results (package exchange). A retry (requestState)
// must come to this replica, from the same identity, for the same server,
// method and params.
func (h *Hub) heldCall(ctx context.Context, r *gateway.Request, b *backend, target string, params map[string]json.RawMessage) (json.RawMessage, error) {
	var state string
	if raw, ok := params["requestState"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &state) != nil {
			return nil, invalidParams("requestState must be a string, as the gateway gave it")
		}
	}
	var responses map[string]json.RawMessage
	if raw, ok := params["inputResponses"]; ok && string(raw) != "null" && state != "" {
		if json.Unmarshal(raw, &responses) != nil {
			return nil, invalidParams("inputResponses must be a JSON object of the answers to the inputRequests, by their keys")
		}
	}
	// The host's inputResponses reach the server only as answers to the
	// requests it asked: never as params (a server that reads them
	// without state would take them for answers the host was not asked).
	delete(params, "requestState")
	delete(params, "inputResponses")
	sent := marshal(params)
	bound := make(map[string]json.RawMessage, len(params))
	for k, v := range params {
		if k != "_meta" {
			bound[k] = v
		}
	}
	token, level := hostMeta(r)
	bind := exchange.Binding{Owner: identityName(r.Identity), Method: r.Method, Target: b.name, Digest: sha256.Sum256(marshal(bound))}
	host := &exchangeHost{req: r, token: token}
	var ex *exchange.Exchange
	if state != "" {
		var err error
		if ex, err = h.exchanges.Resume(state, bind, host, responses); err != nil {
			if errors.Is(err, exchange.ErrInUse) {
				return nil, invalidParams("requestState is in use by another retry of the same request: wait for its answer")
			}
			return nil, invalidParams("requestState is not valid for this request; start over: send the request again without requestState and inputResponses. "+
				"Server %q is a legacy MCP server, whose call the gateway holds open on the one replica that started it, for the identity, method and params that started it, until %v without a retry: "+
				"this replica holds no such call (the retry reached another replica, came too late, or does not match)", b.name, h.exchangeTimeout)
		}
	} else {
		owner := identityName(r.Identity)
		h.heldMu.Lock()
		if n := h.exchanges.Owned(owner); n >= h.opts.MaxHeldCalls {
			h.heldMu.Unlock()
			return nil, &jsonrpc.Error{Code: gateway.CodeRateLimited, Message: fmt.Sprintf(
				"this identity already holds %d calls open on legacy servers, waiting for its retries, the most the gateway keeps: retry those with their requestState (each is cancelled %v after its input_required result if not retried), then send this request again", n, h.exchangeTimeout)}
		}
		// The call outlives the host request that starts it, not the
		// values of its context (its trace, for the client span).
		ex = h.exchanges.Start(context.WithoutCancel(ctx), bind, host, func(ctx context.Context) (json.RawMessage, error) {
			ex := exchange.FromContext(ctx)
			opts := []snodo.CallOption{snodo.WithProgress(func(p snodo.Progress) {
				hv, attached := ex.Host()
				eh := hv.(*exchangeHost)
				if !attached || eh.token == nil {
					return
				}
				if b, err := json.Marshal(struct {
					Token json.RawMessage `json:"progressToken"`
					snodo.Progress
				}{eh.token, p}); err == nil {
					_ = eh.req.Notify("notifications/progress", b)
				}
			})}
			if level != "" {
				opts = append(opts, snodo.WithLogLevel(snodo.LogLevel(level)))
			}
			return b.request(ctx, r, r.Method, target, sent, opts...)
		})
		h.heldMu.Unlock()
	}
	res, _, err := ex.Await(ctx)
	return res, err
}

// hostMeta returns the progress token (nil when none) and the log level
// ("" when none) of a host request's _meta.
func hostMeta(r *gateway.Request) (token json.RawMessage, level string) {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(r.Params, &p)
	if v, ok := p.Meta[metaProgressToken]; ok && string(v) != "null" {
		token = v
	}
	_ = json.Unmarshal(p.Meta[metaLogLevel], &level)
	return token, level
}

// askModern answers, for a 2026-07-28 host, the request of a server that
// does not carry it as input of a 2026-07-28 call (a legacy server): when
// the host's call is held open (heldCall) and the host declared the
// capability, the request goes to the host as an input of that call's
// input_required result; otherwise it is refused.
func (h *Hub) askModern(ctx context.Context, c *call, server, method string, params json.RawMessage, rec *gateway.AuditRecord) (json.RawMessage, error) {
	if c.ex == nil {
		rec.Decision = "deny"
		return nil, noHandler(server, method, "and a 2026-07-28 host can be asked only in an input_required result of its tools/call, prompts/get or resources/read")
	}
	hv, _ := c.ex.Host()
	if r := hv.(*exchangeHost).req; !proxy.Declares(r.ClientCapabilities, method) {
		rec.Decision = "deny"
		return nil, noHandler(server, method, fmt.Sprintf("and the host did not declare the %s capability", proxy.CapabilityName(method)))
	}
	return c.ex.Ask(ctx, method, params)
}
