package proxy

// Forwarding server requests to a 2026-07-28 host.
//
// A 2026-07-28 host cannot be sent requests: what the server asks of the
// client must reach it as the input requests of an input_required result
// to one of its own requests (tools/call, prompts/get, resources/read),
// which the host answers by retrying that request with inputResponses and
// the result's requestState.
//
// The proxy keeps the forwarded call running on the server meanwhile
// (package internal/exchange, which the gateway's hub shares). A modern
// host's multi round-trip request starts an exchange: the call to the
// server runs in a goroutine of its own, under a context that belongs to
// the exchange (not to the host request), carrying the exchange as a value
// so that the handlers of the call's input requests know where they
// belong. The host request then waits for whichever comes first:
//
//   - the call's outcome: its result or error is the response;
//   - a handler asking for input (with every other input already waiting):
//     the response is an input_required result whose inputRequests are
//     those inputs under keys of the proxy's own ("input-N"), and whose
//     requestState is the exchange's random, unguessable 128-bit handle;
//     the handlers stay blocked, the call stays open on the server;
//   - the host cancelling its request: the call is cancelled on the server.
//
// The host's retry carries the requestState: the proxy finds the exchange
// (same method, same params apart from _meta, inputResponses and
// requestState, or it refuses with -32602), hands each answer to the
// handler waiting for it, puts an input the host did not answer back to be
// asked again, and waits again as above. The retry's progress token
// replaces the previous one for the call's progress notifications.
//
// An exchange waiting for a retry is cancelled on the server after
// Config.ResumeTimeout, and its requestState is unknown from then on: the
// host gets -32602 and must start over. The requestState is a handle, not
// the state itself, so it needs no integrity protection: a forged or
// altered one names no exchange (nothing worse than a failed request).
// It is valid for one retry at a time, on this connection only.
//
// A legacy server's request over HTTP that comes on the stream of a call
// relates to that call (MCP 2025-11-25): the HTTP transport gives its
// handler the call's context values, so it reaches that call's exchange
// as a 2026-07-28 server's input request does. Over stdio, or on the
// standalone GET stream, a legacy server's request carries no link to the
// call it is part of (MCP 2025-11-25 defines none: no relatedRequestId,
// and a progress token in _meta is the server's to copy or not, which
// the proxy does not trust to pick among the host's calls): when the host opened with initialize
// it goes to the host as a server-to-client request; otherwise it goes to
// the oldest exchange in progress (exactly right when one call is in
// flight, the usual case), and with no exchange in progress it is
// answered -32601.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/exchange"
	"github.com/snodo/snodo/jsonrpc"
)

// exchangeHost describes the host request attached to an exchange last.
type exchangeHost struct {
	caps  capabilities
	token json.RawMessage // its progress token, or nil
}

func capabilitiesOf(meta map[string]json.RawMessage) capabilities {
	var c capabilities
	_ = json.Unmarshal(meta[metaClientCapabilities], &c)
	return c
}

// exchangeCapabilities returns the capabilities of the host request
// attached to ex last.
func exchangeCapabilities(ex *exchange.Exchange) capabilities {
	h, _ := ex.Host()
	eh, _ := h.(*exchangeHost)
	if eh == nil {
		return capabilities{}
	}
	return eh.caps
}

// serveExchange serves a 2026-07-28 host's tools/call, prompts/get or
// resources/read: a new forwarded call, or the retry of one (state).
func (p *Proxy) serveExchange(ctx context.Context, hr *hostRequest, params, token json.RawMessage, level string, state *string, responses map[string]json.RawMessage) (json.RawMessage, error) {
	host := &exchangeHost{caps: capabilitiesOf(hr.meta), token: token}
	bind := exchange.Binding{Method: hr.req.Method, Digest: sha256.Sum256(params)}
	var ex *exchange.Exchange
	if state != nil {
		var err error
		if ex, err = p.exchanges.Resume(*state, bind, host, responses); err != nil {
			msg := "requestState is in use by another retry"
			if errors.Is(err, exchange.ErrUnknown) {
				msg = "requestState is unknown, expired, or from another request: send the request again without it"
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
		}
	} else {
		ex = p.exchanges.Start(p.life, bind, host, func(ctx context.Context) (json.RawMessage, error) {
			ex := exchange.FromContext(ctx)
			opts := []snodo.CallOption{snodo.WithProgress(func(pr snodo.Progress) {
				h, _ := ex.Host()
				if tok := h.(*exchangeHost).token; tok != nil {
					p.progress(tok, pr)
				}
			})}
			if level != "" {
				opts = append(opts, snodo.WithLogLevel(snodo.LogLevel(level)))
			}
			return p.client.Request(ctx, hr.req.Method, params, opts...)
		})
	}
	res, asked, err := ex.Await(ctx)
	if asked {
		hr.rec.InputRequired = true
	}
	return res, err
}
