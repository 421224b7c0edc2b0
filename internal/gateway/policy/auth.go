package policy

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/snodo/snodo/internal/gateway"
)

// errForbidden is the error of a request whose credentials are good but
// whose subject the config gives nothing (answered 403).
var errForbidden = errors.New("forbidden")

// Authenticate returns the identity of r's Authorization: Bearer token. r
// nil is the local host over stdio: its identity is the identities entry
// with local set, or nil (anonymous, allowed everything). With neither
// identities nor jwt configured, every request is anonymous.
//
// A refusal wraps gateway.ErrUnauthorized (or, for a valid JWT whose
// subject has no policy, is a 403 error); its message says what is wrong
// and never holds the token. Each refusal goes to the Auditor (direction
// "policy", decision "deny", method "authenticate", the message as reason).
func (p *Policy) Authenticate(r *http.Request) (*gateway.Identity, error) {
	if r == nil {
		return p.local, nil
	}
	if p.open {
		return nil, nil
	}
	id, err := p.authenticate(r)
	if err != nil {
		rec := gateway.AuditRecord{Decision: "deny", Reason: err.Error(), Method: "authenticate"}
		if id != nil {
			rec.Identity = id.Name
		}
		p.audit(rec)
		return nil, err
	}
	return id, nil
}

func unauthorized(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{gateway.ErrUnauthorized}, a...)...)
}

func (p *Policy) authenticate(r *http.Request) (*gateway.Identity, error) {
	vals := r.Header.Values("Authorization")
	switch {
	case len(vals) == 0:
		return nil, unauthorized("no Authorization header; send Authorization: Bearer <token>")
	case len(vals) > 1:
		return nil, unauthorized("%d Authorization headers; send exactly one", len(vals))
	}
	h := vals[0]
	if len(h) > MaxAuthorizationBytes {
		return nil, unauthorized("the Authorization header is %d bytes, more than the %d allowed", len(h), MaxAuthorizationBytes)
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, unauthorized("the Authorization header is not a bearer token; send Authorization: Bearer <token>")
	}
	token = strings.TrimLeft(token, " ")
	if token == "" {
		return nil, unauthorized("the bearer token is empty")
	}
	if !b64token(token) {
		return nil, unauthorized("the bearer token holds characters a token may not (RFC 6750: letters, digits and -._~+/ then '=' padding)")
	}
	d := sha256.Sum256([]byte(token))
	if name, ok := p.byToken[d]; ok {
		return &gateway.Identity{Name: name}, nil
	}
	if p.jwt != nil && strings.Count(token, ".") == 2 {
		sub, err := p.jwt.verify(r.Context(), token)
		if err != nil {
			return nil, err
		}
		id := &gateway.Identity{Name: sub}
		if _, ok := p.rules(id); !ok {
			return id, fmt.Errorf("%w: the token's subject %q has no identities entry and jwt.defaultPolicy is not set; add one of them to the gateway's config", errForbidden, sub)
		}
		return id, nil
	}
	if p.jwt != nil {
		return nil, unauthorized("the bearer token matches no identity and is not a JWT")
	}
	return nil, unauthorized("the bearer token matches no identity")
}

// b64token reports RFC 6750's b64token syntax.
func b64token(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/') {
			break
		}
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}
