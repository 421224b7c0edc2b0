package front

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/jsonrpc"
)

// maxPendingAsks bounds the server-to-client requests a session may have
// waiting for the host's answer.
const maxPendingAsks = 256

// maxInflight bounds the requests a legacy session (or the stdio host) may
// have in flight at once.
const maxInflight = 1024

// session is a legacy host's session: what it negotiated, its requests in
// flight (for notifications/cancelled) and the server-to-client requests
// waiting for its answers.
type session struct {
	id         string // "" for the stdio host's
	identity   *gateway.Identity
	version    string
	caps       json.RawMessage
	clientInfo json.RawMessage

	ctx    context.Context // ends with the session
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	inflight map[string]context.CancelCauseFunc // by idKey of the host's request ID
	pending  map[string]chan *jsonrpc.Response  // by the gateway's request ID
	nextAsk  uint64
	lastUsed time.Time
	active   int  // requests and streams being served
	watching bool // the standalone GET stream is open
}

func newSession(parent context.Context, id string, ident *gateway.Identity) *session {
	ctx, cancel := context.WithCancelCause(parent)
	return &session{id: id, identity: ident, ctx: ctx, cancel: cancel,
		inflight: map[string]context.CancelCauseFunc{}, pending: map[string]chan *jsonrpc.Response{}}
}

// newSessionID returns a random 128-bit session ID.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// begin registers a host request in flight; its context ends when the
// host cancels it, the session ends, or parent ends.
func (s *session) begin(parent context.Context, id jsonrpc.ID) (context.Context, func(), *jsonrpc.Error) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })
	key := idKey(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.inflight[key]; dup {
		stop()
		cancel(nil)
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("request id %s is already in flight in this session", key)}
	}
	if len(s.inflight) >= maxInflight {
		stop()
		cancel(nil)
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("too many requests in flight in this session (limit %d)", maxInflight)}
	}
	s.inflight[key] = cancel
	s.active++
	return ctx, func() {
		stop()
		cancel(nil)
		s.mu.Lock()
		delete(s.inflight, key)
		s.active--
		s.lastUsed = time.Now()
		s.mu.Unlock()
	}, nil
}

// idKey tells a string ID from the number with the same digits.
func idKey(id jsonrpc.ID) string { return string(id.AppendJSON(nil)) }

// cancelled handles the host's notifications/cancelled.
func (s *session) cancelled(params json.RawMessage) {
	var c struct {
		RequestID jsonrpc.ID `json:"requestId"`
		Reason    string     `json:"reason"`
	}
	if json.Unmarshal(params, &c) != nil || !c.RequestID.IsValid() {
		return
	}
	s.mu.Lock()
	cancel := s.inflight[idKey(c.RequestID)]
	s.mu.Unlock()
	if cancel != nil {
		reason := c.Reason
		if reason == "" {
			reason = "no reason given"
		}
		cancel(fmt.Errorf("%w: %s", errCancelledByHost, reason))
	}
}

// errCancelledByHost is the cause of a request the host cancelled with
// notifications/cancelled: it is not answered.
var errCancelledByHost = errors.New("cancelled by the host")

// errUnknownResponse is the error of a host response that answers no
// request the gateway sent.
var errUnknownResponse = errors.New("the response answers no request the gateway is waiting for")

// answer hands the host's response to the request waiting for it.
func (s *session) answer(r *jsonrpc.Response) error {
	s.mu.Lock()
	ch := s.pending[r.ID.String()]
	delete(s.pending, r.ID.String())
	s.mu.Unlock()
	if ch == nil {
		return errUnknownResponse
	}
	ch <- r // buffered: one response per request
	return nil
}

// ask sends the host a server-to-client request with send and waits for
// its answer, or ctx's end.
func (s *session) ask(ctx context.Context, method string, params json.RawMessage, send func(jsonrpc.Message) error) (json.RawMessage, error) {
	if !declares(s.caps, method) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("the host did not declare the capability %s needs", method)}
	}
	ch := make(chan *jsonrpc.Response, 1)
	s.mu.Lock()
	if len(s.pending) >= maxPendingAsks {
		s.mu.Unlock()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("too many requests waiting for the host's answer (limit %d)", maxPendingAsks)}
	}
	s.nextAsk++
	key := "gw-" + strconv.FormatUint(s.nextAsk, 10)
	s.pending[key] = ch
	s.mu.Unlock()
	forget := func() {
		s.mu.Lock()
		delete(s.pending, key)
		s.mu.Unlock()
	}
	if err := send(&jsonrpc.Request{ID: jsonrpc.StringID(key), Method: method, Params: params}); err != nil {
		forget()
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-ctx.Done():
		forget()
		return nil, context.Cause(ctx)
	}
}

// idle reports whether the session has been unused since before cutoff.
func (s *session) idle(cutoff time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active == 0 && s.lastUsed.Before(cutoff)
}

func (s *session) touch() {
	s.mu.Lock()
	s.lastUsed = time.Now()
	s.mu.Unlock()
}
