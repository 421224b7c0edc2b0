// Package exchange keeps a call open on an MCP server while a 2026-07-28
// host gathers the input the server asked for: the multi round-trip of a
// legacy (2024-11-05 … 2025-11-25) server's requests, as the one-server
// proxy (internal/proxy) and the gateway's hub (internal/gateway/hub)
// forward them.
//
// A 2026-07-28 host cannot be sent requests: what the server asks of the
// client must reach it as the input requests of an input_required result
// to one of its own requests (tools/call, prompts/get, resources/read),
// which the host answers by retrying that request with inputResponses and
// the result's requestState.
//
// An Exchange is one such call. Table.Start runs the call in a goroutine of
// its own, under a context that belongs to the exchange (not to the host
// request) and carries the exchange (FromContext), so that the handlers of
// the call's input requests know where they belong (Exchange.Ask). The
// host request then waits (Exchange.Await) for whichever comes first:
//
//   - the call's outcome: its result or error is the response;
//   - a handler asking for input (with every other input already waiting):
//     the response is an input_required result whose inputRequests are
//     those inputs under keys of the exchange's own ("input-N"), and whose
//     requestState is the exchange's random, unguessable 128-bit handle;
//     the handlers stay blocked, the call stays open on the server;
//   - the host cancelling its request: the call is cancelled on the server.
//
// The host's retry carries the requestState: Table.Resume finds the
// exchange when the retry is bound alike (the same owner, method and
// params digest: Binding), hands each answer to the handler waiting for it,
// puts an input the host did not answer back to be asked again, and the
// retry waits again as above.
//
// An exchange waiting for a retry is cancelled on the server after
// Config.ResumeTimeout, and its requestState is unknown from then on. The
// requestState is a handle, not the state itself, so it needs no integrity
// protection: a forged or altered one names no exchange, and one presented
// for another binding is refused as if unknown (nothing worse than a
// failed request). It is valid for one retry at a time, in the process
// that issued it only.
package exchange

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snodo/snodo/jsonrpc"
)

// DefaultResumeTimeout is how long an exchange waits for the host's retry
// when Config.ResumeTimeout is not set.
const DefaultResumeTimeout = 5 * time.Minute

var (
	// ErrUnknown is Resume's error for a requestState that names no
	// exchange of the table, or one bound to another request or owner.
	ErrUnknown = errors.New("requestState is unknown, expired, or from another request")
	// ErrInUse is Resume's error for an exchange another retry is
	// attached to.
	ErrInUse = errors.New("requestState is in use by another retry")

	errResumeExpired = errors.New("the host did not retry the request in time")
	errExchangeDone  = errors.New("the request is complete")
)

// Binding is what a requestState is valid for: a retry must match it all.
type Binding struct {
	// Owner is who started the exchange (an identity's name; "" for an
	// anonymous host or a single-host connection).
	Owner string
	// Method is the host request's method.
	Method string
	// Target names what the request goes to, beyond its params (a
	// backend server); "" when there is one.
	Target string
	// Digest is a digest of the forwarded params (without what is
	// between the host and the caller: _meta, inputResponses,
	// requestState).
	Digest [32]byte
}

// Config configures a Table.
type Config struct {
	// Prefix starts every handle (e.g. "snodo-proxy:").
	Prefix string
	// ResumeTimeout is how long an exchange whose host request returned
	// input_required waits for the retry before its call is cancelled
	// (default DefaultResumeTimeout).
	ResumeTimeout time.Duration
	// Gone, when closed, says no retry can come (the host's connection
	// ended): an exchange that returns input_required then ends at once,
	// and an input asked is refused. nil: never.
	Gone <-chan struct{}
}

// Table holds the exchanges in progress, by requestState. It is safe for
// concurrent use.
type Table struct {
	cfg Config
	wg  sync.WaitGroup
	mu  sync.Mutex
	m   map[string]*Exchange
}

// NewTable returns an empty table.
func NewTable(cfg Config) *Table {
	if cfg.ResumeTimeout <= 0 {
		cfg.ResumeTimeout = DefaultResumeTimeout
	}
	return &Table{cfg: cfg, m: map[string]*Exchange{}}
}

// Exchange is one call kept open on a server for a 2026-07-28 host.
type Exchange struct {
	t       *Table
	state   string // the requestState handle
	bind    Binding
	created time.Time

	ctx    context.Context // the call's
	cancel context.CancelCauseFunc
	inputs chan *input     // handlers asking for input
	done   chan struct{}   // closed when the call has ended
	res    json.RawMessage // the call's outcome, set before done is closed
	err    error

	waiting atomic.Int32 // inputs asked (Ask) and not yet answered

	mu       sync.Mutex
	host     any  // the host request attached last, as the caller describes it
	attached bool // a host request is waiting on the exchange
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

type ctxKey struct{}

// FromContext returns the exchange whose call ctx belongs to, or nil.
func FromContext(ctx context.Context) *Exchange {
	ex, _ := ctx.Value(ctxKey{}).(*Exchange)
	return ex
}

// Start starts the call of a new exchange bound to b: run runs in a
// goroutine of its own with a context derived from parent (which it must
// honour), and host describes the host request, which is attached (call
// Await next).
func (t *Table) Start(parent context.Context, b Binding, host any, run func(ctx context.Context) (json.RawMessage, error)) *Exchange {
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	ex := &Exchange{
		t: t, state: t.cfg.Prefix + base64.RawURLEncoding.EncodeToString(raw[:]), bind: b,
		created: time.Now(), inputs: make(chan *input), done: make(chan struct{}),
		host: host, attached: true, asked: map[string]*input{},
	}
	ctx, cancel := context.WithCancelCause(parent)
	ex.ctx, ex.cancel = context.WithValue(ctx, ctxKey{}, ex), cancel
	t.mu.Lock()
	t.m[ex.state] = ex
	t.mu.Unlock()
	t.wg.Add(1)
	go func() {
		// The context lives on after the call, until the exchange is
		// dropped: an input a legacy server asked through this exchange
		// may still be waiting for the host's retry.
		defer t.wg.Done()
		ex.res, ex.err = run(ex.ctx)
		close(ex.done)
	}()
	return ex
}

// Resume attaches a retry bound to b, described by host, to the exchange
// state names: its answers go to the handlers waiting for them, and what
// it did not answer is asked again (call Await next). It fails with
// ErrUnknown or ErrInUse.
func (t *Table) Resume(state string, b Binding, host any, responses map[string]json.RawMessage) (*Exchange, error) {
	t.mu.Lock()
	ex := t.m[state]
	t.mu.Unlock()
	if ex == nil || ex.bind != b {
		return nil, ErrUnknown
	}
	if !ex.resume(host, responses) {
		return nil, ErrInUse
	}
	return ex, nil
}

// Host returns what describes the host request attached last, and whether
// it is attached still (a host request is waiting on the exchange).
func (ex *Exchange) Host() (host any, attached bool) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.host, ex.attached
}

// Await waits, for the host request attached, for the call's outcome or
// for input to ask the host; asked reports an input_required result.
func (ex *Exchange) Await(hostCtx context.Context) (res json.RawMessage, asked bool, err error) {
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
			ex.t.drop(ex, errExchangeDone)
			return ex.res, false, ex.err
		case in := <-ex.inputs:
			batch = append(batch, in)
		case <-hostCtx.Done():
			ex.t.drop(ex, context.Cause(hostCtx))
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
func (ex *Exchange) inputRequired(batch []*input) (json.RawMessage, error) {
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
	wait := ex.t.cfg.ResumeTimeout
	select {
	case <-ex.t.cfg.Gone: // no retry can come
		wait = 0
	default:
	}
	ex.expire = time.AfterFunc(wait, func() { ex.t.drop(ex, errResumeExpired) })
	ex.mu.Unlock()
	return json.Marshal(map[string]any{
		"resultType":    "input_required",
		"inputRequests": reqs,
		"requestState":  ex.state,
	})
}

// resume attaches a retry; it reports false when another one is attached.
func (ex *Exchange) resume(host any, responses map[string]json.RawMessage) bool {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.attached {
		return false
	}
	ex.attached = true
	if ex.expire != nil {
		ex.expire.Stop()
	}
	ex.host = host
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

// Ask gives an input request to the exchange and waits for the host's
// answer, until ctx (the server's request) ends, the exchange ends, or no
// retry can come (Config.Gone).
func (ex *Exchange) Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	ex.waiting.Add(1)
	defer ex.waiting.Add(-1)
	in := &input{method: method, params: params, answer: make(chan json.RawMessage, 1)}
	ended := func() error {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if ex.ctx.Err() != nil {
			// The exchange ended (the host did not retry in time, went
			// away, or cancelled): the call is being cancelled. Its
			// cancellation reaches the server before this refusal, so
			// that the server learns its call is cancelled rather than
			// end the call on the refusal first.
			select {
			case <-ex.done:
			case <-ctx.Done():
			}
		}
		return &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("%s: the host request that was to carry it ended, or the host closed the connection", method)}
	}
	select {
	case ex.inputs <- in:
	case <-ctx.Done():
		return nil, ended()
	case <-ex.t.cfg.Gone:
		return nil, ended()
	case <-ex.ctx.Done():
		return nil, ended()
	}
	select {
	case r := <-in.answer:
		return r, nil
	case <-ctx.Done():
		return nil, ended()
	case <-ex.t.cfg.Gone:
		return nil, ended()
	case <-ex.ctx.Done():
		return nil, ended()
	}
}

// Waiting reports whether an input asked of the exchange waits for the
// host's answer.
func (ex *Exchange) Waiting() bool { return ex.waiting.Load() > 0 }

// Oldest returns the oldest exchange whose call is running, or nil.
func (t *Table) Oldest() *Exchange {
	t.mu.Lock()
	defer t.mu.Unlock()
	var oldest *Exchange
	for _, ex := range t.m {
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

// drop cancels the exchange's call with cause (when it is still running)
// and forgets its requestState.
func (t *Table) drop(ex *Exchange, cause error) {
	ex.cancel(cause)
	ex.mu.Lock()
	if ex.expire != nil {
		ex.expire.Stop()
	}
	ex.mu.Unlock()
	t.mu.Lock()
	if t.m[ex.state] == ex {
		delete(t.m, ex.state)
	}
	t.mu.Unlock()
}

// DropDetached cancels, with cause, the calls waiting for a retry.
func (t *Table) DropDetached(cause error) {
	t.dropIf(cause, func(ex *Exchange) bool {
		ex.mu.Lock()
		defer ex.mu.Unlock()
		return !ex.attached
	})
}

// DropAll cancels, with cause, every exchange's call and forgets them all.
func (t *Table) DropAll(cause error) {
	t.dropIf(cause, func(*Exchange) bool { return true })
}

func (t *Table) dropIf(cause error, f func(*Exchange) bool) {
	t.mu.Lock()
	var drop []*Exchange
	for _, ex := range t.m {
		if f(ex) {
			drop = append(drop, ex)
		}
	}
	t.mu.Unlock()
	for _, ex := range drop {
		t.drop(ex, cause)
	}
}

// Owned returns the number of exchanges in progress started by owner.
func (t *Table) Owned(owner string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, ex := range t.m {
		if ex.bind.Owner == owner {
			n++
		}
	}
	return n
}

// Len returns the number of exchanges in progress.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// Wait waits for the calls of every exchange started to end.
func (t *Table) Wait() { t.wg.Wait() }
