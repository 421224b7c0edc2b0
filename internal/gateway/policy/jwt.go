package policy

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/snodo/snodo/internal/redact"
	"github.com/snodo/snodo/internal/safetext"
)

// Bounds of the JWKS and the tokens checked against it.
const (
	// MaxJWKSBytes bounds the JWKS document.
	MaxJWKSBytes = 1 << 20
	// JWKSFetchTimeout bounds one fetch of the JWKS, and so how long a
	// request waits for one.
	JWKSFetchTimeout = 5 * time.Second
	// JWKSMaxAge is how long fetched keys are used before they are fetched
	// again; past it, with the JWKS unreachable, tokens are refused.
	JWKSMaxAge = time.Hour
	// JWKSRefetchInterval is the least time between two fetches of the
	// JWKS on a token whose key ID it does not hold.
	JWKSRefetchInterval = time.Minute
	// jwksRetryInterval is the least time between a failed fetch and the
	// next one.
	jwksRetryInterval = 10 * time.Second
	// JWTLeeway is the clock skew allowed on exp and nbf.
	JWTLeeway = 30 * time.Second
)

// jwtAlgs are the only signature algorithms accepted: never none, never
// HS* (a public key must not become an HMAC secret).
var jwtAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA}

type jwtVerifier struct {
	cfg    JWTConfig
	p      *Policy
	client *http.Client
	// timeout bounds one fetch (JWKSFetchTimeout).
	timeout time.Duration
	// shown is the JWKS URL as errors and logs show it (query redacted).
	shown string

	mu          sync.Mutex // held while fetching: one fetch at a time
	keys        *jose.JSONWebKeySet
	fetched     time.Time // of keys
	lastAttempt time.Time
	lastErr     error
}

func newJWTVerifier(_ context.Context, c *JWTConfig, p *Policy) (*jwtVerifier, error) {
	if c.Issuer == "" {
		return nil, errors.New("config jwt.issuer: missing; write the issuer exactly as the tokens' iss claim holds it")
	}
	if c.Audience == "" {
		return nil, errors.New("config jwt.audience: missing; write this gateway's resource identifier, exactly as the tokens' aud claim holds it")
	}
	u, err := url.Parse(c.JWKSURL)
	if c.JWKSURL == "" || err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("config jwt.jwksUrl: %q is not an absolute https URL; write the issuer's jwks_uri", redact.URL(c.JWKSURL))
	}
	if u.User != nil {
		return nil, fmt.Errorf("config jwt.jwksUrl: %q holds user information; the JWKS is public, write its URL without it", redact.URL(c.JWKSURL))
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return nil, fmt.Errorf("config jwt.jwksUrl: %q is plain http to another host, where the keys could be swapped in transit; use https", redact.URL(c.JWKSURL))
	}
	client := p.opts.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: JWKSFetchTimeout}
	}
	return &jwtVerifier{cfg: *c, p: p, client: client, timeout: JWKSFetchTimeout, shown: redact.URL(c.JWKSURL)}, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// verify checks token's signature against the JWKS and its claims, and
// returns its subject.
func (v *jwtVerifier) verify(ctx context.Context, token string) (string, error) {
	tok, err := jwt.ParseSigned(token, jwtAlgs)
	if err != nil {
		return "", unauthorized("the bearer token is not a JWT signed with RS256, ES256 or EdDSA (%s)", short(err.Error()))
	}
	if len(tok.Headers) != 1 {
		return "", unauthorized("the JWT has %d signatures; send one", len(tok.Headers))
	}
	hdr := tok.Headers[0]
	keys, err := v.keysFor(ctx, hdr.KeyID, hdr.Algorithm)
	if err != nil {
		return "", err
	}
	var claims jwt.Claims
	var verified bool
	for _, k := range keys {
		if err := tok.Claims(k.Key, &claims); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return "", unauthorized("the JWT's signature does not verify with the issuer's key %q", short(hdr.KeyID))
	}
	now := v.p.now()
	switch err := claims.ValidateWithLeeway(jwt.Expected{
		Issuer:      v.cfg.Issuer,
		AnyAudience: jwt.Audience{v.cfg.Audience},
		Time:        now,
	}, JWTLeeway); {
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return "", unauthorized("the JWT's issuer %q is not %q", short(claims.Issuer), v.cfg.Issuer)
	case errors.Is(err, jwt.ErrInvalidAudience):
		return "", unauthorized("the JWT's audience does not hold %q; get a token for this gateway", v.cfg.Audience)
	case errors.Is(err, jwt.ErrExpired):
		return "", unauthorized("the JWT expired at %s; get a new token", claims.Expiry.Time().UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrNotValidYet):
		return "", unauthorized("the JWT is not valid before %s", claims.NotBefore.Time().UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return "", unauthorized("the JWT was issued in the future (iat); check the issuer's clock")
	case err != nil:
		return "", unauthorized("the JWT's claims are not valid: %v", err)
	}
	if claims.Expiry == nil {
		return "", unauthorized("the JWT has no exp; the gateway accepts only tokens that expire")
	}
	switch {
	case claims.Subject == "":
		return "", unauthorized("the JWT has no sub")
	case len(claims.Subject) > MaxSubjectBytes:
		return "", unauthorized("the JWT's sub is longer than %d bytes", MaxSubjectBytes)
	case !printable(claims.Subject):
		return "", unauthorized("the JWT's sub holds control characters or invalid UTF-8")
	}
	return claims.Subject, nil
}

// short returns a host's text for an error: escaped (internal/safetext)
// and cut to 64 bytes.
func short(s string) string {
	const max = 64
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return safetext.Escape(s, false)
}

// keysFor returns the JWKS keys that may have signed a token of key ID kid
// and algorithm alg, fetching the JWKS when it is not held, is older than
// JWKSMaxAge, or (at most once a JWKSRefetchInterval) lacks kid.
func (v *jwtVerifier) keysFor(ctx context.Context, kid, alg string) ([]jose.JSONWebKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.p.now()
	fresh := v.keys != nil && now.Sub(v.fetched) < JWKSMaxAge
	if !fresh {
		if err := v.fetchLocked(ctx, now); err != nil {
			return nil, err
		}
	}
	ks := v.match(kid, alg)
	if len(ks) == 0 && fresh && now.Sub(v.lastAttempt) >= JWKSRefetchInterval {
		if err := v.fetchLocked(ctx, now); err != nil {
			return nil, err
		}
		ks = v.match(kid, alg)
	}
	if len(ks) == 0 {
		return nil, unauthorized("the issuer's JWKS holds no %s key with key ID %q", alg, short(kid))
	}
	return ks, nil
}

// match returns the public signing keys of kid whose type fits alg. With
// no kid, any such key of the set.
func (v *jwtVerifier) match(kid, alg string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range v.keys.Keys {
		if kid != "" && k.KeyID != kid {
			continue
		}
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if k.Algorithm != "" && k.Algorithm != alg {
			continue
		}
		var ok bool
		switch key := k.Key.(type) {
		case *rsa.PublicKey:
			ok = alg == string(jose.RS256) && key.N.BitLen() >= 2048
		case *ecdsa.PublicKey:
			ok = alg == string(jose.ES256) && key.Curve.Params().Name == "P-256"
		case ed25519.PublicKey:
			ok = alg == string(jose.EdDSA)
		}
		if ok {
			out = append(out, k)
		}
	}
	return out
}

// fetchLocked fetches the JWKS, unless the last attempt failed less than
// jwksRetryInterval ago (then it returns that failure again).
func (v *jwtVerifier) fetchLocked(ctx context.Context, now time.Time) error {
	if v.lastErr != nil && now.Sub(v.lastAttempt) < jwksRetryInterval {
		return v.lastErr
	}
	v.lastAttempt = now
	ks, err := v.fetch(ctx)
	if err != nil {
		err = redact.Error(err)
		v.p.log.Warn("gateway: cannot fetch the JWKS", "url", v.shown, "err", err)
		v.lastErr = unauthorized("the token cannot be verified now: the issuer's JWKS at %s: %v", v.shown, err)
		return v.lastErr
	}
	v.lastErr = nil
	v.keys, v.fetched = ks, now
	v.p.log.Info("gateway: fetched the JWKS", "url", v.shown, "keys", len(ks.Keys))
	return nil
}

func (v *jwtVerifier) fetch(ctx context.Context) (*jose.JSONWebKeySet, error) {
	// The fetch serves every request waiting on it, not only the one that
	// started it: it is bounded by its own timeout, not ended with it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), v.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.JWKSURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, application/jwk-set+json")
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("status %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxJWKSBytes+1))
	if err != nil {
		return nil, err
	}
	if len(body) > MaxJWKSBytes {
		return nil, fmt.Errorf("the JWKS is larger than %d bytes", MaxJWKSBytes)
	}
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.Keys == nil {
		return nil, fmt.Errorf("not a JWKS (an object with a keys array): %v", err)
	}
	// A key of a type or curve this gateway does not know is skipped, not
	// a failure of the whole set.
	var ks jose.JSONWebKeySet
	for _, raw := range doc.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err == nil && k.Valid() && k.IsPublic() {
			ks.Keys = append(ks.Keys, k)
		}
	}
	return &ks, nil
}
