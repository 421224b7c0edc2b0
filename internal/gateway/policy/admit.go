package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/jsonrpc"
	"golang.org/x/time/rate"
)

// maxSubjectStates bounds the limit states of JWT subjects under
// jwt.defaultPolicy; idle ones (no request in flight, bucket full) are
// dropped first, which loses nothing.
const maxSubjectStates = 10000

// limitState is the rate limiter and the in-flight count of one identity
// or server. Guarded by Policy.mu (the limiter has its own lock).
type limitState struct {
	lim           *rate.Limiter // nil: no rate limit
	rl            *RateLimit
	maxConcurrent int // 0: no cap
	inFlight      int
}

func newLimitState(rl *RateLimit, maxConcurrent int) *limitState {
	s := &limitState{rl: rl, maxConcurrent: maxConcurrent}
	if rl != nil {
		s.lim = rate.NewLimiter(rate.Limit(rl.PerSecond), rl.Burst)
	}
	return s
}

// idle reports a state no different from a new one.
func (s *limitState) idle(now time.Time) bool {
	return s.inFlight == 0 && (s.lim == nil || s.lim.TokensAt(now) >= float64(s.rl.Burst))
}

// Admit refuses at once, never waiting, a request over a concurrency cap
// or a rate limit of its identity or of server: the error is a
// *jsonrpc.Error of code gateway.CodeRateLimited naming the limit, with
// data {"retryAfterMs": N} for a rate limit. release returns the request's
// slots; calling it again does nothing. Each refusal goes to the Auditor
// (direction "policy", decision "rate-limited", or "deny" for an identity
// the config does not know) with the identity, the server, the message and
// the code; its method is empty, as Admit is not told it.
func (p *Policy) Admit(ctx context.Context, id *gateway.Identity, server string) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var name string
	if id != nil {
		name = id.Name
	}
	now := p.now()

	p.mu.Lock()
	var who, srv *limitState
	if id != nil {
		r, ok := p.rules(id)
		if !ok {
			p.mu.Unlock()
			err := &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("identity %q has no policy in the gateway's config", name)}
			p.refused(name, server, "deny", err)
			return nil, err
		}
		who = p.subjectLocked(name, r, now)
		if who == nil {
			p.mu.Unlock()
			err := limited(fmt.Sprintf("rate limited: more than %d identities are active at once; retry later", maxSubjectStates), time.Second)
			p.refused(name, server, "rate-limited", err)
			return nil, err
		}
	}
	srv = p.servers[server]

	var err *jsonrpc.Error
	switch {
	case who != nil && who.maxConcurrent > 0 && who.inFlight >= who.maxConcurrent:
		err = capped(fmt.Sprintf("identity %q: at most %d requests at once", name, who.maxConcurrent), who.maxConcurrent)
	case srv != nil && srv.maxConcurrent > 0 && srv.inFlight >= srv.maxConcurrent:
		err = capped(fmt.Sprintf("server %q: at most %d requests at once", server, srv.maxConcurrent), srv.maxConcurrent)
	}
	if err == nil {
		var whoRes *rate.Reservation
		if who != nil && who.lim != nil {
			whoRes = who.lim.ReserveN(now, 1)
			if d := whoRes.DelayFrom(now); d > 0 {
				whoRes.CancelAt(now)
				err = limited(fmt.Sprintf("rate limited: identity %q is over %s", name, rateText(who.rl)), d)
			}
		}
		if err == nil && srv != nil && srv.lim != nil {
			res := srv.lim.ReserveN(now, 1)
			if d := res.DelayFrom(now); d > 0 {
				res.CancelAt(now)
				if whoRes != nil {
					whoRes.CancelAt(now)
				}
				err = limited(fmt.Sprintf("rate limited: server %q is over %s", server, rateText(srv.rl)), d)
			}
		}
	}
	if err != nil {
		p.mu.Unlock()
		p.refused(name, server, "rate-limited", err)
		return nil, err
	}
	if who != nil {
		who.inFlight++
	}
	if srv != nil {
		srv.inFlight++
	}
	p.mu.Unlock()

	var done atomic.Bool
	return func() {
		if !done.CompareAndSwap(false, true) {
			return
		}
		p.mu.Lock()
		if who != nil {
			who.inFlight--
		}
		if srv != nil {
			srv.inFlight--
		}
		p.mu.Unlock()
	}, nil
}

// subjectLocked returns name's limit state, making one from r for a JWT
// subject under jwt.defaultPolicy; nil when there are too many.
func (p *Policy) subjectLocked(name string, r *Rules, now time.Time) *limitState {
	if s, ok := p.subjects[name]; ok {
		return s
	}
	if len(p.subjects) >= maxSubjectStates+len(p.identities) {
		for n, s := range p.subjects {
			if _, static := p.identities[n]; !static && s.idle(now) {
				delete(p.subjects, n)
			}
		}
		if len(p.subjects) >= maxSubjectStates+len(p.identities) {
			return nil
		}
	}
	s := newLimitState(r.RateLimit, r.MaxConcurrent)
	p.subjects[name] = s
	return s
}

func (p *Policy) refused(identity, server, decision string, err *jsonrpc.Error) {
	p.audit(gateway.AuditRecord{
		Identity:  identity,
		Server:    server,
		Decision:  decision,
		Reason:    err.Message,
		ErrorCode: err.Code,
	})
}

func rateText(rl *RateLimit) string {
	return fmt.Sprintf("%g requests per second (burst %d)", rl.PerSecond, rl.Burst)
}

// limited is a rate limit's refusal, retry after d.
func limited(msg string, d time.Duration) *jsonrpc.Error {
	ms := int64(math.Ceil(float64(d) / float64(time.Millisecond)))
	if ms < 1 {
		ms = 1
	}
	data, _ := json.Marshal(map[string]int64{"retryAfterMs": ms})
	return &jsonrpc.Error{Kind: jsonrpc.KindServer, Code: gateway.CodeRateLimited, Message: fmt.Sprintf("%s; retry in %d ms", msg, ms), Data: data}
}

// capped is a concurrency cap's refusal.
func capped(msg string, n int) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]int{"maxConcurrent": n})
	return &jsonrpc.Error{Kind: jsonrpc.KindServer, Code: gateway.CodeRateLimited, Message: msg, Data: data}
}
