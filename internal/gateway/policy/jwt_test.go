package policy

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/snodo/snodo/internal/gateway"
)

const (
	testIssuer   = "https://idp.example"
	testAudience = "https://gw.example/mcp"
)

// issuer is a test OAuth authorization server: its keys, and a JWKS
// endpoint that counts its fetches and can be made to fail or hang.
type issuer struct {
	t     testing.TB
	rsa   *rsa.PrivateKey
	ec    *ecdsa.PrivateKey
	ed    ed25519.PrivateKey
	other *rsa.PrivateKey // not in the JWKS

	mu      sync.Mutex
	keys    []jose.JSONWebKey
	status  int
	body    []byte        // served instead of the keys when set
	hang    chan struct{} // when set, the handler waits on it
	fetches atomic.Int32
	srv     *httptest.Server
}

func newIssuer(t testing.TB) *issuer {
	t.Helper()
	is := &issuer{t: t, status: http.StatusOK}
	k := sharedKeys(t)
	is.rsa, is.other, is.ec, is.ed = k.rsa, k.other, k.ec, k.ed
	is.keys = []jose.JSONWebKey{
		{Key: &is.rsa.PublicKey, KeyID: "rsa", Algorithm: "RS256", Use: "sig"},
		{Key: &is.ec.PublicKey, KeyID: "ec", Algorithm: "ES256", Use: "sig"},
		{Key: is.ed.Public(), KeyID: "ed", Algorithm: "EdDSA", Use: "sig"},
	}
	is.srv = httptest.NewServer(http.HandlerFunc(is.serve))
	t.Cleanup(func() {
		is.mu.Lock()
		if is.hang != nil {
			close(is.hang)
			is.hang = nil
		}
		is.mu.Unlock()
		is.srv.Close()
	})
	return is
}

// testKeys are made once: RSA key generation is slow under -race.
type keySet struct {
	once  sync.Once
	rsa   *rsa.PrivateKey
	other *rsa.PrivateKey
	ec    *ecdsa.PrivateKey
	ed    ed25519.PrivateKey
	err   error
}

var testKeys keySet

func sharedKeys(t testing.TB) *keySet {
	t.Helper()
	k := &testKeys
	k.once.Do(func() {
		if k.rsa, k.err = rsa.GenerateKey(rand.Reader, 2048); k.err != nil {
			return
		}
		if k.other, k.err = rsa.GenerateKey(rand.Reader, 2048); k.err != nil {
			return
		}
		if k.ec, k.err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); k.err != nil {
			return
		}
		_, k.ed, k.err = ed25519.GenerateKey(rand.Reader)
	})
	if k.err != nil {
		t.Fatal(k.err)
	}
	return k
}

func (is *issuer) serve(w http.ResponseWriter, r *http.Request) {
	is.fetches.Add(1)
	is.mu.Lock()
	hang, status, body, keys := is.hang, is.status, is.body, is.keys
	is.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
		return
	}
	if body == nil {
		body, _ = json.Marshal(jose.JSONWebKeySet{Keys: keys})
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (is *issuer) set(f func(is *issuer)) {
	is.mu.Lock()
	f(is)
	is.mu.Unlock()
}

// claims are a token's claims, valid for an hour from now.
func validClaims(now time.Time, sub string) jwt.Claims {
	return jwt.Claims{
		Issuer:    testIssuer,
		Audience:  jwt.Audience{testAudience},
		Subject:   sub,
		Expiry:    jwt.NewNumericDate(now.Add(time.Hour)),
		NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)),
		IssuedAt:  jwt.NewNumericDate(now.Add(-time.Minute)),
	}
}

func (is *issuer) sign(alg jose.SignatureAlgorithm, key any, kid string, claims any) string {
	is.t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		is.t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		is.t.Fatal(err)
	}
	return tok
}

// raw builds a compact JWS by hand: header, claims, and a signature made by
// sig over them (nil: an empty signature).
func raw(t *testing.T, header map[string]any, claims any, sig func(signingInput []byte) []byte) string {
	t.Helper()
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	in := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	var s []byte
	if sig != nil {
		s = sig([]byte(in))
	}
	return in + "." + base64.RawURLEncoding.EncodeToString(s)
}

func jwtPolicy(t testing.TB, is *issuer, extra string, opts Options) (*Policy, *clock) {
	t.Helper()
	cfg := `{"jwt": {"issuer": "` + testIssuer + `", "audience": "` + testAudience + `", "jwksUrl": "` + is.srv.URL + `/jwks"` + extra + `},
	  "identities": {"alice": {"tokenSha256": "` + HashToken(aliceToken) + `", "allowServers": ["fs"]}, "carol": {"allowServers": ["db"]}}}`
	p, c := newPolicy(t, cfg, opts)
	return p, c
}

func TestAuthenticateJWT(t *testing.T) {
	is := newIssuer(t)
	p, c := jwtPolicy(t, is, `, "defaultPolicy": {"allowServers": ["web"]}`, Options{})
	now := c.now()
	pemKey := func() []byte {
		der, _ := x509.MarshalPKIXPublicKey(&is.rsa.PublicKey)
		return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}()
	jwkJSON, _ := json.Marshal(is.keys[0])
	hs256 := func(secret []byte) func([]byte) []byte {
		return func(in []byte) []byte { m := hmac.New(sha256.New, secret); m.Write(in); return m.Sum(nil) }
	}
	expired := validClaims(now, "carol")
	expired.Expiry = jwt.NewNumericDate(now.Add(-time.Minute))
	future := validClaims(now, "carol")
	future.NotBefore = jwt.NewNumericDate(now.Add(10 * time.Minute))
	skewed := validClaims(now, "carol")
	skewed.NotBefore = jwt.NewNumericDate(now.Add(10 * time.Second)) // within the leeway
	noExp := validClaims(now, "carol")
	noExp.Expiry = nil
	wrongAud := validClaims(now, "carol")
	wrongAud.Audience = jwt.Audience{"https://other.example/mcp"}
	prefixAud := validClaims(now, "carol")
	prefixAud.Audience = jwt.Audience{testAudience + "/x"}
	twoAud := validClaims(now, "carol")
	twoAud.Audience = jwt.Audience{"https://other.example", testAudience}
	wrongIss := validClaims(now, "carol")
	wrongIss.Issuer = testIssuer + "/"
	noSub := validClaims(now, "")
	ctrlSub := validClaims(now, "carol\n")
	longSub := validClaims(now, strings.Repeat("s", MaxSubjectBytes+1))

	for _, tc := range []struct {
		name   string
		token  string
		want   string // identity, or "" for a refusal
		errHas string
		status int // 401 (ErrUnauthorized) or 403
	}{
		{"RS256", is.sign(jose.RS256, is.rsa, "rsa", validClaims(now, "carol")), "carol", "", 0},
		{"ES256", is.sign(jose.ES256, is.ec, "ec", validClaims(now, "carol")), "carol", "", 0},
		{"EdDSA", is.sign(jose.EdDSA, is.ed, "ed", validClaims(now, "carol")), "carol", "", 0},
		{"subject under defaultPolicy", is.sign(jose.RS256, is.rsa, "rsa", validClaims(now, "dave")), "dave", "", 0},
		{"nbf within leeway", is.sign(jose.RS256, is.rsa, "rsa", skewed), "carol", "", 0},
		{"audience among others", is.sign(jose.RS256, is.rsa, "rsa", twoAud), "carol", "", 0},
		{"static token still works", aliceToken, "alice", "", 0},
		{"wrong signature", is.sign(jose.RS256, is.other, "rsa", validClaims(now, "carol")), "", "signature does not verify", 401},
		{"own key embedded (jwk header)", func() string {
			sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: is.other}, (&jose.SignerOptions{EmbedJWK: true}).WithHeader("kid", "rsa"))
			if err != nil {
				t.Fatal(err)
			}
			tok, err := jwt.Signed(sig).Claims(validClaims(now, "carol")).Serialize()
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}(), "", "signature does not verify", 401},
		{"key of another type under kid", is.sign(jose.ES256, is.ec, "rsa", validClaims(now, "carol")), "", `no ES256 key with key ID "rsa"`, 401},
		{"alg none", raw(t, map[string]any{"alg": "none", "kid": "rsa", "typ": "JWT"}, validClaims(now, "carol"), nil), "", "not a JWT signed with RS256, ES256 or EdDSA", 401},
		{"HS256 with the PEM public key", raw(t, map[string]any{"alg": "HS256", "kid": "rsa"}, validClaims(now, "carol"), hs256(pemKey)), "", "not a JWT signed with RS256", 401},
		{"HS256 with the JWK", raw(t, map[string]any{"alg": "HS256", "kid": "rsa"}, validClaims(now, "carol"), hs256(jwkJSON)), "", "not a JWT signed with RS256", 401},
		{"RS384", is.sign(jose.RS384, is.rsa, "rsa", validClaims(now, "carol")), "", "not a JWT signed with RS256", 401},
		{"signature stripped", func() string {
			tok := is.sign(jose.RS256, is.rsa, "rsa", validClaims(now, "carol"))
			return tok[:strings.LastIndex(tok, ".")+1]
		}(), "", "", 401},
		{"claims swapped", func() string {
			a := strings.Split(is.sign(jose.RS256, is.rsa, "rsa", validClaims(now, "carol")), ".")
			b := strings.Split(is.sign(jose.RS256, is.rsa, "rsa", validClaims(now, "alice")), ".")
			return a[0] + "." + b[1] + "." + a[2]
		}(), "", "signature does not verify", 401},
		{"expired", is.sign(jose.RS256, is.rsa, "rsa", expired), "", "expired", 401},
		{"not yet valid", is.sign(jose.RS256, is.rsa, "rsa", future), "", "not valid before", 401},
		{"no exp", is.sign(jose.RS256, is.rsa, "rsa", noExp), "", "no exp", 401},
		{"wrong audience", is.sign(jose.RS256, is.rsa, "rsa", wrongAud), "", "audience does not hold", 401},
		{"audience prefix", is.sign(jose.RS256, is.rsa, "rsa", prefixAud), "", "audience does not hold", 401},
		{"wrong issuer", is.sign(jose.RS256, is.rsa, "rsa", wrongIss), "", "issuer", 401},
		{"no sub", is.sign(jose.RS256, is.rsa, "rsa", noSub), "", "no sub", 401},
		{"control sub", is.sign(jose.RS256, is.rsa, "rsa", ctrlSub), "", "control characters", 401},
		{"long sub", is.sign(jose.RS256, is.rsa, "rsa", longSub), "", "longer than", 401},
		{"unknown kid", is.sign(jose.RS256, is.other, "rotated", validClaims(now, "carol")), "", `no RS256 key with key ID "rotated"`, 401},
		{"garbled", "aaa.bbb.ccc", "", "not a JWT", 401},
		{"long kid", is.sign(jose.RS256, is.rsa, strings.Repeat("k", 8000), validClaims(now, "carol")), "", `key ID "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk…"`, 401},
		{"not a JWT", "opaque-token", "", "matches no identity and is not a JWT", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := p.Authenticate(bearer("Bearer " + tc.token))
			if tc.want != "" {
				if err != nil || id == nil || id.Name != tc.want {
					t.Fatalf("Authenticate = %v, %v; want %s", id, err, tc.want)
				}
				return
			}
			if id != nil || err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("Authenticate = %v, %v; want a refusal holding %q", id, err, tc.errHas)
			}
			if unauth := errors.Is(err, gateway.ErrUnauthorized); unauth != (tc.status == 401) {
				t.Errorf("errors.Is(err, ErrUnauthorized) = %v, want status %d: %v", unauth, tc.status, err)
			}
			if len(err.Error()) > 512 {
				t.Errorf("the error is %d bytes long", len(err.Error()))
			}
			if strings.Contains(err.Error(), tc.token) || strings.Contains(err.Error(), strings.Split(tc.token, ".")[0]+".") {
				t.Errorf("the error echoes the token: %v", err)
			}
		})
	}

	// The subject's policy: its identities entry, else defaultPolicy.
	if !p.AllowServer(&gateway.Identity{Name: "carol"}, "db") || p.AllowServer(&gateway.Identity{Name: "carol"}, "web") {
		t.Error("carol's identities entry does not decide for her")
	}
	if !p.AllowServer(&gateway.Identity{Name: "dave"}, "web") || p.AllowServer(&gateway.Identity{Name: "dave"}, "db") {
		t.Error("jwt.defaultPolicy does not decide for a subject without an entry")
	}
}

func TestJWTSubjectWithoutPolicy(t *testing.T) {
	is := newIssuer(t)
	p, c := jwtPolicy(t, is, "", Options{})
	id, err := p.Authenticate(bearer("Bearer " + is.sign(jose.RS256, is.rsa, "rsa", validClaims(c.now(), "dave"))))
	if id != nil || err == nil || errors.Is(err, gateway.ErrUnauthorized) || !strings.Contains(err.Error(), "jwt.defaultPolicy is not set") {
		t.Fatalf("Authenticate = %v, %v; want a 403 naming jwt.defaultPolicy", id, err)
	}
	if p.AllowServer(&gateway.Identity{Name: "dave"}, "fs") {
		t.Error("a subject with no policy may see a server")
	}
	if _, err := p.Admit(context.Background(), &gateway.Identity{Name: "dave"}, "fs"); err == nil {
		t.Error("a subject with no policy is admitted")
	}
}

func TestJWKSRefetch(t *testing.T) {
	is := newIssuer(t)
	p, c := jwtPolicy(t, is, `, "defaultPolicy": {}`, Options{})
	auth := func(key crypto.Signer, kid string) error {
		_, err := p.Authenticate(bearer("Bearer " + is.sign(jose.RS256, key, kid, validClaims(c.now(), "dave"))))
		return err
	}
	if err := auth(is.rsa, "rsa"); err != nil {
		t.Fatal(err)
	}
	if err := auth(is.rsa, "rsa"); err != nil || is.fetches.Load() != 1 {
		t.Fatalf("second token: %v, %d fetches; want the cached JWKS", err, is.fetches.Load())
	}

	// The issuer rotates to a new key: a token of an unknown kid refetches,
	// at most once a minute however many such tokens come.
	if err := auth(is.other, "new"); err == nil || is.fetches.Load() != 1 {
		t.Fatalf("unknown kid within a minute of the first fetch: %v, %d fetches; want a refusal and no refetch", err, is.fetches.Load())
	}
	c.advance(JWKSRefetchInterval)
	if err := auth(is.other, "new"); err == nil {
		t.Fatal("a token of a key the JWKS does not hold is accepted")
	}
	if n := is.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after an unknown kid, want 2", n)
	}
	is.set(func(is *issuer) {
		is.keys = append(is.keys, jose.JSONWebKey{Key: &is.other.PublicKey, KeyID: "new", Algorithm: "RS256"})
	})
	for range 50 {
		if err := auth(is.other, "new"); err == nil || !strings.Contains(err.Error(), `key ID "new"`) {
			t.Fatalf("within the minute: %v", err)
		}
	}
	if n := is.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches within a minute of unknown kids, want 2", n)
	}
	c.advance(JWKSRefetchInterval)
	if err := auth(is.other, "new"); err != nil {
		t.Fatalf("a minute later, the rotated key: %v", err)
	}
	if n := is.fetches.Load(); n != 3 {
		t.Fatalf("%d fetches, want 3", n)
	}

	// Past JWKSMaxAge the keys are fetched again; with the JWKS down, tokens
	// are refused (fails closed), and the failure is not retried on every
	// request.
	is.set(func(is *issuer) { is.status = http.StatusInternalServerError })
	c.advance(JWKSMaxAge)
	for range 20 {
		err := auth(is.rsa, "rsa")
		if !errors.Is(err, gateway.ErrUnauthorized) || !strings.Contains(err.Error(), "cannot be verified now") || !strings.Contains(err.Error(), "500") {
			t.Fatalf("JWKS down: %v; want a refusal naming the JWKS failure", err)
		}
	}
	if n := is.fetches.Load(); n != 4 {
		t.Fatalf("%d fetches with the JWKS down, want 4 (no retry within %v)", n, jwksRetryInterval)
	}
	is.set(func(is *issuer) { is.status = http.StatusOK })
	c.advance(jwksRetryInterval)
	if err := auth(is.rsa, "rsa"); err != nil {
		t.Fatalf("JWKS back: %v", err)
	}
}

func TestJWKSBad(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    func(is *issuer)
		errHas string
	}{
		{"not found", func(is *issuer) { is.status = http.StatusNotFound }, "404"},
		{"not JSON", func(is *issuer) { is.body = []byte("<html>") }, "not a JWKS"},
		{"no keys member", func(is *issuer) { is.body = []byte(`{"key": []}`) }, "not a JWKS"},
		{"oversized", func(is *issuer) {
			is.body = []byte(`{"keys": [], "pad": "` + strings.Repeat("x", MaxJWKSBytes) + `"}`)
		}, "larger than 1048576 bytes"},
		{"only unusable keys", func(is *issuer) {
			is.body = []byte(`{"keys": [{"kty": "oct", "kid": "rsa", "k": "c2VjcmV0"}, {"kty": "XYZ", "kid": "rsa"}]}`)
		}, `no RS256 key with key ID "rsa"`},
		{"private key", func(is *issuer) {
			b, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: is.rsa, KeyID: "rsa"}}})
			is.body = b
		}, `no RS256 key with key ID "rsa"`},
		{"encryption key", func(is *issuer) {
			is.keys = []jose.JSONWebKey{{Key: &is.rsa.PublicKey, KeyID: "rsa", Use: "enc"}}
		}, `no RS256 key with key ID "rsa"`},
		{"short RSA key", func(is *issuer) {
			k, _ := rsa.GenerateKey(rand.Reader, 1024)
			is.rsa = k
			is.keys = []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "rsa"}}
		}, `no RS256 key with key ID "rsa"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := newIssuer(t)
			is.set(tc.set)
			p, c := jwtPolicy(t, is, `, "defaultPolicy": {}`, Options{})
			_, err := p.Authenticate(bearer("Bearer " + is.sign(jose.RS256, is.rsa, "rsa", validClaims(c.now(), "dave"))))
			if !errors.Is(err, gateway.ErrUnauthorized) || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("Authenticate: %v; want a refusal holding %q", err, tc.errHas)
			}
		})
	}
}

func TestJWKSHangs(t *testing.T) {
	// A JWKS that never answers: requests wait at most the fetch timeout,
	// then are refused; concurrent requests share the one fetch.
	is := newIssuer(t)
	is.set(func(is *issuer) { is.hang = make(chan struct{}) })
	p, c := jwtPolicy(t, is, `, "defaultPolicy": {}`, Options{})
	p.jwt.timeout = 200 * time.Millisecond
	tok := is.sign(jose.RS256, is.rsa, "rsa", validClaims(c.now(), "dave"))

	errs := make(chan error, 8)
	for range cap(errs) {
		go func() {
			_, err := p.Authenticate(bearer("Bearer " + tok))
			errs <- err
		}()
	}
	deadline := time.After(time.Minute) // bounds the wait only
	for range cap(errs) {
		select {
		case err := <-errs:
			if !errors.Is(err, gateway.ErrUnauthorized) || !strings.Contains(err.Error(), "cannot be verified now") {
				t.Fatalf("JWKS hangs: %v; want a refusal", err)
			}
		case <-deadline:
			t.Fatal("Authenticate waits on a JWKS that never answers")
		}
	}
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("%d fetches, want 1 shared by every waiting request", n)
	}
}

func TestJWTAuditNoToken(t *testing.T) {
	is := newIssuer(t)
	rec := &recorder{}
	p, c := jwtPolicy(t, is, "", Options{Auditor: rec})
	tok := is.sign(jose.RS256, is.other, "rsa", validClaims(c.now(), "carol"))
	if _, err := p.Authenticate(bearer("Bearer " + tok)); err == nil {
		t.Fatal("a token of another key is accepted")
	}
	recs := rec.all()
	if len(recs) != 1 || recs[0].Decision != "deny" || recs[0].Direction != "policy" {
		t.Fatalf("audit: %+v; want one policy deny", recs)
	}
	if strings.Contains(recs[0].Reason, strings.Split(tok, ".")[2]) {
		t.Errorf("the audit record holds the token: %+v", recs[0])
	}
}
