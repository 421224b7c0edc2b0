package proxy

// Forwarding server requests to a 2026-07-28 host.
//
// A 2026-07-28 host cannot be sent requests: what the server asks of the
// client must reach it as the input requests of an input_required result
// to one of its own requests (tools/call, prompts/get, resources/read),
// which the host answers by retrying that request with inputResponses and
// the result's requestState.
//
// The proxy keeps the forwarded call running on the server meanwhile. A
// modern host's multi round-trip request starts an exchange: the call to
// the server runs in a goroutine of its own, under a context that belongs
// to the exchange (not to the host request), carrying the exchange as a
// value so that the handlers of the call's input requests know where they
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
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/jsonrpc"
)

// exchange is one forwarded multi round-trip call of a 2026-07-28 host.
type exchange struct {
	p       *Proxy
	state   string // the requestState handle
	method  string
	digest  [32]byte // of the forwarded params
	created time.Time

	ctx    context.Context // the forwarded call's
	cancel context.CancelCauseFunc
	inputs chan *input     // handlers asking for input
	done   chan struct{}   // closed when the call has ended
	res    json.RawMessage // the call's outcome, set before done is closed
	err    error

	mu       sync.Mutex
	caps     capabilities    // of the host request attached last
	token    json.RawMessage // its progress token, or nil
	attached bool            // a host request is waiting on the exchange
	asked    map[string]*input
	backlog  []*input // to ask (again) in the next input_required
	next     int
	expire   *time.Timer
}

// input is one input request waiting for the host's answer.
type input struct {
	key    string
	method string
	params json.RawMessage
	answer chan json.RawMessage // buffered: the host's answer is never waited for
}

var (
	errResumeExpired = errors.New("the host did not retry the request in time")
	errExchangeDone  = errors.New("the request is complete")
)

func capabilitiesOf(meta map[string]json.RawMessage) capabilities {
	var c capabilities
	_ = json.Unmarshal(meta[metaClientCapabilities], &c)
	return c
}

// serveExchange serves a 2026-07-28 host's tools/call, prompts/get or
// resources/read: a new forwarded call, or the retry of one (state).
func (p *Proxy) serveExchange(ctx context.Context, hr *hostRequest, params, token json.RawMessage, level string, state *string, responses map[string]json.RawMessage) (json.RawMessage, error) {
	caps := capabilitiesOf(hr.meta)
	digest := sha256.Sum256(params)
	var ex *exchange
	if state != nil {
		p.mu.Lock()
		ex = p.exchanges[*state]
		p.mu.Unlock()
		if ex == nil || ex.method != hr.req.Method || ex.digest != digest {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: "requestState is unknown, expired, or from another request: send the request again without it"}
		}
		if !ex.resume(caps, token, responses) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState is in use by another retry"}
		}
	} else {
		ex = p.startExchange(hr.req.Method, params, digest, caps, token, level)
	}
	res, asked, err := ex.await(ctx)
	if asked {
		hr.rec.InputRequired = true
	}
	return res, err
}

// startExchange starts the forwarded call of a new exchange.
func (p *Proxy) startExchange(method string, params json.RawMessage, digest [32]byte, caps capabilities, token json.RawMessage, level string) *exchange {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ex := &exchange{
		p: p, state: "snodo-proxy:" + base64.RawURLEncoding.EncodeToString(b[:]), method: method, digest: digest,
		created: time.Now(), inputs: make(chan *input), done: make(chan struct{}),
		caps: caps, token: token, attached: true, asked: map[string]*input{},
	}
	ctx, cancel := context.WithCancelCause(p.life)
	ex.ctx, ex.cancel = context.WithValue(ctx, exchangeKey{}, ex), cancel
	p.mu.Lock()
	p.exchanges[ex.state] = ex
	p.mu.Unlock()
	opts := []snodo.CallOption{snodo.WithProgress(func(pr snodo.Progress) {
		ex.mu.Lock()
		tok := ex.token
		ex.mu.Unlock()
		if tok != nil {
			p.progress(tok, pr)
		}
	})}
	if level != "" {
		opts = append(opts, snodo.WithLogLevel(snodo.LogLevel(level)))
	}
	p.wg.Add(1)
	go func() {
		// The context lives on after the call, until the exchange is
		// dropped: an input a legacy server asked through this exchange
		// may still be waiting for the host's retry.
		defer p.wg.Done()
		ex.res, ex.err = p.client.Request(ex.ctx, method, params, opts...)
		close(ex.done)
	}()
	return ex
}

// capabilities returns the capabilities of the host request attached last.
func (ex *exchange) capabilities() capabilities {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.caps
}

// await waits, for the host request attached, for the call's outcome or
// for input to ask the host; asked reports an input_required result.
func (ex *exchange) await(hostCtx context.Context) (res json.RawMessage, asked bool, err error) {
	ex.mu.Lock()
	ex.attached = true
	if ex.expire != nil {
		ex.expire.Stop()
	}
	batch := ex.backlog
	ex.backlog = nil
	ex.mu.Unlock()
	if len(batch) == 0 {
		select {
		case <-ex.done:
			ex.p.dropExchange(ex)
			return ex.res, false, ex.err
		case in := <-ex.inputs:
			batch = append(batch, in)
		case <-hostCtx.Done():
			ex.cancel(context.Cause(hostCtx))
			ex.p.dropExchange(ex)
			return nil, false, context.Cause(hostCtx)
		}
	}
	for more := true; more; {
		select {
		case in := <-ex.inputs:
			batch = append(batch, in)
		default:
			more = false
		}
	}
	res, err = ex.inputRequired(batch)
	return res, true, err
}

// inputRequired detaches the host request and returns its input_required
// result asking for batch.
func (ex *exchange) inputRequired(batch []*input) (json.RawMessage, error) {
	type inputRequest struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	reqs := make(map[string]inputRequest, len(batch))
	ex.mu.Lock()
	for _, in := range batch {
		if in.key == "" {
			ex.next++
			in.key = fmt.Sprintf("input-%d", ex.next)
		}
		ex.asked[in.key] = in
		params := in.params
		if len(params) == 0 {
			params = json.RawMessage(`{}`)
		}
		reqs[in.key] = inputRequest{in.method, params}
	}
	ex.attached = false
	wait := ex.p.cfg.ResumeTimeout
	select {
	case <-ex.p.hostGone: // no retry can come
		wait = 0
	default:
	}
	ex.expire = time.AfterFunc(wait, func() {
		ex.cancel(errResumeExpired)
		ex.p.dropExchange(ex)
	})
	ex.mu.Unlock()
	return json.Marshal(map[string]any{
		"resultType":    "input_required",
		"inputRequests": reqs,
		"requestState":  ex.state,
	})
}

// resume attaches a retry: its answers go to the handlers waiting for
// them, and what it did not answer is asked again. It reports false when
// another retry is attached.
func (ex *exchange) resume(caps capabilities, token json.RawMessage, responses map[string]json.RawMessage) bool {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.attached {
		return false
	}
	ex.attached = true
	if ex.expire != nil {
		ex.expire.Stop()
	}
	ex.caps, ex.token = caps, token
	keys := make([]string, 0, len(ex.asked))
	for k := range ex.asked {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return strings.Compare(a, b) })
	for _, k := range keys {
		in := ex.asked[k]
		delete(ex.asked, k)
		if r, ok := responses[k]; ok && len(r) > 0 && string(r) != "null" {
			in.answer <- r
			continue
		}
		ex.backlog = append(ex.backlog, in)
	}
	return true
}

// ask gives an input request to the exchange and waits for the host's
// answer.
func (ex *exchange) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	in := &input{method: method, params: params, answer: make(chan json.RawMessage, 1)}
	ended := func() error {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("%s: the host request that was to carry it ended, or the host closed the connection", method)}
	}
	select {
	case ex.inputs <- in:
	case <-ctx.Done():
		return nil, ended()
	case <-ex.p.hostGone:
		return nil, ended()
	case <-ex.ctx.Done():
		return nil, ended()
	}
	select {
	case r := <-in.answer:
		return r, nil
	case <-ctx.Done():
		return nil, ended()
	case <-ex.p.hostGone:
		return nil, ended()
	case <-ex.ctx.Done():
		return nil, ended()
	}
}

// oldestExchangeLocked returns the oldest exchange whose call is running.
func (p *Proxy) oldestExchangeLocked() *exchange {
	var oldest *exchange
	for _, ex := range p.exchanges {
		select {
		case <-ex.done:
			continue
		default:
		}
		if oldest == nil || ex.created.Before(oldest.created) {
			oldest = ex
		}
	}
	return oldest
}

func (p *Proxy) dropExchange(ex *exchange) {
	ex.cancel(errExchangeDone)
	ex.mu.Lock()
	if ex.expire != nil {
		ex.expire.Stop()
	}
	ex.mu.Unlock()
	p.mu.Lock()
	if p.exchanges[ex.state] == ex {
		delete(p.exchanges, ex.state)
	}
	p.mu.Unlock()
}

// dropDetached cancels the calls waiting for a retry, when the host's
// input has ended.
func (p *Proxy) dropDetached() {
	p.mu.Lock()
	var detached []*exchange
	for _, ex := range p.exchanges {
		ex.mu.Lock()
		if !ex.attached {
			detached = append(detached, ex)
		}
		ex.mu.Unlock()
	}
	p.mu.Unlock()
	for _, ex := range detached {
		ex.cancel(errHostGone)
		p.dropExchange(ex)
	}
}

// dropAll forgets every exchange, when Serve ends.
func (p *Proxy) dropAll() {
	p.mu.Lock()
	all := make([]*exchange, 0, len(p.exchanges))
	for _, ex := range p.exchanges {
		all = append(all, ex)
	}
	p.mu.Unlock()
	for _, ex := range all {
		ex.cancel(errHostGone)
		p.dropExchange(ex)
	}
}
