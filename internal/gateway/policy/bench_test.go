package policy

import (
	"context"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/snodo/snodo/internal/gateway"
)

func BenchmarkAuthenticateToken(b *testing.B) {
	p, err := New(context.Background(), gateway.Sections{"identities": []byte(`{"alice": {"tokenSha256": "` + HashToken(aliceToken) + `"}}`)}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	r := bearer("Bearer " + aliceToken)
	for b.Loop() {
		if _, err := p.Authenticate(r); err != nil {
			b.Fatal(err)
		}
	}
}

func benchmarkJWT(b *testing.B, alg jose.SignatureAlgorithm, kid string, key func(*issuer) any) {
	is := newIssuer(b)
	p, c := jwtPolicy(b, is, `, "defaultPolicy": {}`, Options{})
	r := bearer("Bearer " + is.sign(alg, key(is), kid, validClaims(c.now(), "dave")))
	for b.Loop() {
		if _, err := p.Authenticate(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAuthenticateJWTRS256(b *testing.B) {
	benchmarkJWT(b, jose.RS256, "rsa", func(is *issuer) any { return is.rsa })
}

func BenchmarkAuthenticateJWTES256(b *testing.B) {
	benchmarkJWT(b, jose.ES256, "ec", func(is *issuer) any { return is.ec })
}

func BenchmarkAuthenticateJWTEdDSA(b *testing.B) {
	benchmarkJWT(b, jose.EdDSA, "ed", func(is *issuer) any { return is.ed })
}

func BenchmarkAdmit(b *testing.B) {
	p, err := New(context.Background(), gateway.Sections{
		"identities": []byte(`{"alice": {"maxConcurrent": 100, "rateLimit": {"perSecond": 1e12, "burst": 1000000}}}`),
		"limits":     []byte(`{"servers": {"fs": {"maxConcurrent": 100, "rateLimit": {"perSecond": 1e12, "burst": 1000000}}}}`),
	}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	id := &gateway.Identity{Name: "alice"}
	for b.Loop() {
		rel, err := p.Admit(context.Background(), id, "fs")
		if err != nil {
			b.Fatal(err)
		}
		rel()
	}
}
