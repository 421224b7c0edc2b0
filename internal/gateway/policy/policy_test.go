package policy

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo/internal/gateway"
)

// recorder is an Auditor that keeps what it is given.
type recorder struct {
	mu   sync.Mutex
	recs []gateway.AuditRecord
}

func (r *recorder) Audit(rec gateway.AuditRecord) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

func (r *recorder) all() []gateway.AuditRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]gateway.AuditRecord(nil), r.recs...)
}

// clock is a time that moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newClock() *clock { return &clock{t: time.Unix(1_800_000_000, 0)} }

func sections(t testing.TB, cfg string) gateway.Sections {
	t.Helper()
	s, err := gateway.ParseConfig([]byte(cfg), ".json")
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	return s
}

func newPolicy(t testing.TB, cfg string, opts Options) (*Policy, *clock) {
	t.Helper()
	p, err := New(context.Background(), sections(t, cfg), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c := newClock()
	p.now = c.now
	return p, c
}

const (
	aliceToken = "alice-secret-token-0123456789"
	bobToken   = "bob.secret_token~42+/=="
)

func TestHashToken(t *testing.T) {
	// sha256("") and sha256("abc"), FIPS 180-2.
	for in, want := range map[string]string{
		"":    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"abc": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	} {
		if got := HashToken(in); got != want {
			t.Errorf("HashToken(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestNewConfigErrors(t *testing.T) {
	h := HashToken(aliceToken)
	servers := `"mcpServers": {"github": {"command": "x"}, "fs": {"command": "y"}}`
	for _, tc := range []struct {
		name, cfg, want string
	}{
		{"unknown member", `{"identities": {"a": {"token": "x"}}}`, `unknown field "token"`},
		{"token in clear", `{"identities": {"a": {"tokenSha256": "` + aliceToken + `"}}}`, "identities.a.tokenSha256: not a SHA-256 in hex"},
		{"short digest", `{"identities": {"a": {"tokenSha256": "abcd"}}}`, "identities.a.tokenSha256"},
		{"same token twice", `{"identities": {"a": {"tokenSha256": "` + h + `"}, "b": {"tokenSha256": "` + strings.ToUpper(h) + `"}}}`, "the same token as identities.a"},
		{"two local", `{"identities": {"a": {"local": true}, "b": {"local": true}}}`, "identities.b.local: identities.a is already the local identity"},
		{"empty name", `{"identities": {"": {}}}`, "must not be empty"},
		{"control name", `{"identities": {"a\u0007": {}}}`, "control characters"},
		{"bad server name", `{"identities": {"a": {"allowServers": ["Git_Hub"]}}}`, `identities.a.allowServers[0]: "Git_Hub" is not a server name`},
		{"server not configured", `{` + servers + `, "identities": {"a": {"denyServers": ["gihtub"]}}}`, `identities.a.denyServers[0]: no server named "gihtub" in mcpServers`},
		{"bad glob", `{"identities": {"a": {"denyTools": ["fs__[a-"]}}}`, `identities.a.denyTools[0]: "fs__[a-"`},
		{"empty glob", `{"identities": {"a": {"allowTools": [""]}}}`, `identities.a.allowTools[0]`},
		{"control glob", `{"identities": {"a": {"allowTools": ["fs__\u0000*"]}}}`, `identities.a.allowTools[0]`},
		{"zero rate", `{"identities": {"a": {"rateLimit": {"perSecond": 0, "burst": 1}}}}`, "identities.a.rateLimit.perSecond"},
		{"zero burst", `{"identities": {"a": {"rateLimit": {"perSecond": 1}}}}`, "identities.a.rateLimit.burst"},
		{"negative concurrency", `{"identities": {"a": {"maxConcurrent": -1}}}`, "identities.a.maxConcurrent"},
		{"server limit unknown", `{` + servers + `, "limits": {"servers": {"git": {"maxConcurrent": 1}}}}`, `limits.servers.git: no server named "git"`},
		{"server limit bad rate", `{"limits": {"servers": {"git": {"rateLimit": {"perSecond": -3, "burst": 1}}}}}`, "limits.servers.git.rateLimit.perSecond"},
		{"limits unknown member", `{"limits": {"identities": {}}}`, `unknown field "identities"`},
		{"jwt no issuer", `{"jwt": {"audience": "a", "jwksUrl": "https://x/jwks"}}`, "jwt.issuer: missing"},
		{"jwt no audience", `{"jwt": {"issuer": "i", "jwksUrl": "https://x/jwks"}}`, "jwt.audience: missing"},
		{"jwt relative url", `{"jwt": {"issuer": "i", "audience": "a", "jwksUrl": "/jwks"}}`, "jwt.jwksUrl"},
		{"jwt user info", `{"jwt": {"issuer": "i", "audience": "a", "jwksUrl": "https://u:pw@idp.example/jwks"}}`, "jwt.jwksUrl: \"https://u:xxxxx@idp.example/jwks\" holds user information"},
		{"jwt plain http", `{"jwt": {"issuer": "i", "audience": "a", "jwksUrl": "http://idp.example/jwks"}}`, "jwt.jwksUrl: \"http://idp.example/jwks\" is plain http"},
		{"jwt default with token", `{"jwt": {"issuer": "i", "audience": "a", "jwksUrl": "https://x/jwks", "defaultPolicy": {"tokenSha256": "` + h + `"}}}`, `unknown field "tokenSha256"`},
		{"jwt default bad glob", `{"jwt": {"issuer": "i", "audience": "a", "jwksUrl": "https://x/jwks", "defaultPolicy": {"denyTools": ["["]}}}`, "jwt.defaultPolicy.denyTools[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(context.Background(), sections(t, tc.cfg), Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error holding %q", err, tc.want)
			}
			if strings.Contains(err.Error(), aliceToken) {
				t.Errorf("the error echoes the token: %v", err)
			}
		})
	}
}

func bearer(h ...string) *http.Request {
	r, _ := http.NewRequest(http.MethodPost, "http://gw/mcp", nil)
	for _, v := range h {
		r.Header.Add("Authorization", v)
	}
	return r
}

func TestAuthenticateTokens(t *testing.T) {
	rec := &recorder{}
	p, _ := newPolicy(t, `{"identities": {
		"alice": {"tokenSha256": "`+HashToken(aliceToken)+`"},
		"bob":   {"tokenSha256": "`+strings.ToUpper(HashToken(bobToken))+`"},
		"me":    {"local": true}}}`, Options{Auditor: rec})

	for _, tc := range []struct {
		name   string
		header []string
		want   string // identity, or "" for a refusal
		errHas string
	}{
		{"alice", []string{"Bearer " + aliceToken}, "alice", ""},
		{"bob, upper-case digest in config, padding", []string{"Bearer " + bobToken}, "bob", ""},
		{"scheme any case", []string{"bEaReR " + aliceToken}, "alice", ""},
		{"missing", nil, "", "no Authorization header"},
		{"two headers", []string{"Bearer " + aliceToken, "Bearer " + bobToken}, "", "2 Authorization headers"},
		{"wrong token", []string{"Bearer " + aliceToken + "x"}, "", "matches no identity"},
		{"basic", []string{"Basic " + aliceToken}, "", "not a bearer token"},
		{"no token", []string{"Bearer "}, "", "empty"},
		{"garbled", []string{"Bearer " + aliceToken + " extra"}, "", "characters a token may not"},
		{"control character", []string{"Bearer " + aliceToken + "\x7f"}, "", "characters a token may not"},
		{"padding inside", []string{"Bearer ab=cd"}, "", "characters a token may not"},
		{"oversized", []string{"Bearer " + strings.Repeat("A", MaxAuthorizationBytes)}, "", "more than the 16384 allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := p.Authenticate(bearer(tc.header...))
			if tc.want != "" {
				if err != nil || id == nil || id.Name != tc.want {
					t.Fatalf("Authenticate = %v, %v; want %s", id, err, tc.want)
				}
				return
			}
			if id != nil || !errors.Is(err, gateway.ErrUnauthorized) || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("Authenticate = %v, %v; want ErrUnauthorized holding %q", id, err, tc.errHas)
			}
			for _, h := range tc.header {
				if tok := strings.TrimPrefix(h, "Bearer "); len(tok) > 4 && strings.Contains(err.Error(), tok) {
					t.Errorf("the error echoes the token: %v", err)
				}
			}
		})
	}

	// Every refusal is audited, never with the token.
	var denies int
	for _, r := range rec.all() {
		if r.Direction != "policy" || r.Decision != "deny" {
			t.Errorf("audit record %+v: want direction policy, decision deny", r)
		}
		if strings.Contains(r.Reason, aliceToken) || strings.Contains(r.Reason, bobToken) {
			t.Errorf("audit record holds a token: %+v", r)
		}
		denies++
	}
	if denies != 9 {
		t.Errorf("%d refusals audited, want 9", denies)
	}

	// Over stdio, the local identity.
	if id, err := p.Authenticate(nil); err != nil || id == nil || id.Name != "me" {
		t.Errorf("Authenticate(nil) = %v, %v; want me", id, err)
	}
}

func TestAuthenticateOpen(t *testing.T) {
	// No identities and no jwt: every host anonymous, allowed everything,
	// whatever it sends.
	p, _ := newPolicy(t, `{"limits": {"servers": {"fs": {"maxConcurrent": 1}}}}`, Options{})
	for _, r := range []*http.Request{nil, bearer(), bearer("Bearer whatever"), bearer("garbage \x00")} {
		if id, err := p.Authenticate(r); id != nil || err != nil {
			t.Errorf("Authenticate = %v, %v; want nil, nil", id, err)
		}
	}
	if !p.AllowServer(nil, "fs") || !p.AllowTool(nil, "fs", "anything/at all") {
		t.Error("the anonymous host is refused with no identities configured")
	}

	// Identities without a local one: over stdio, anonymous.
	p, _ = newPolicy(t, `{"identities": {"a": {"tokenSha256": "`+HashToken(aliceToken)+`"}}}`, Options{})
	if id, err := p.Authenticate(nil); id != nil || err != nil {
		t.Errorf("Authenticate(nil) = %v, %v; want nil, nil", id, err)
	}
}

func TestAllowServerAndTool(t *testing.T) {
	p, _ := newPolicy(t, `{
	  "mcpServers": {"github": {}, "fs": {}, "db": {}, "web": {}},
	  "identities": {
	    "all":     {},
	    "listed":  {"allowServers": ["github", "fs"]},
	    "none":    {"allowServers": []},
	    "denied":  {"allowServers": ["github", "fs"], "denyServers": ["fs"]},
	    "tools":   {"allowTools": ["github__get_*", "fs__read_file", "db__q?"]},
	    "notools": {"denyTools": ["fs__*", "github__delete_*", "*__drop"]},
	    "both":    {"allowTools": ["github__*"], "denyTools": ["github__delete_repo"]},
	    "class":   {"allowTools": ["db__[ab]*"]}
	  }}`, Options{})
	id := func(n string) *gateway.Identity { return &gateway.Identity{Name: n} }

	for _, tc := range []struct {
		who, server string
		want        bool
	}{
		{"all", "github", true},
		{"all", "anything", true},
		{"listed", "github", true},
		{"listed", "fs", true},
		{"listed", "db", false},
		{"none", "github", false},
		{"denied", "github", true},
		{"denied", "fs", false}, // deny wins over allow
		{"denied", "db", false},
		{"stranger", "github", false}, // an identity the config does not know
		{"all", "git\nhub", false},
		{"all", "git\x00hub", false},
		{"all", "\xff", false},
	} {
		if got := p.AllowServer(id(tc.who), tc.server); got != tc.want {
			t.Errorf("AllowServer(%s, %q) = %v, want %v", tc.who, tc.server, got, tc.want)
		}
	}

	for _, tc := range []struct {
		who, server, tool string
		want              bool
	}{
		{"all", "fs", "write_file", true},
		{"listed", "db", "q", false}, // server not allowed, so no tool of it
		{"tools", "github", "get_issue", true},
		{"tools", "github", "create_issue", false},
		{"tools", "fs", "read_file", true},
		{"tools", "fs", "read_files", false},
		{"tools", "db", "q1", true},
		{"tools", "db", "q12", false},
		{"notools", "fs", "read_file", false},
		{"notools", "fs", "a/b", false}, // '*' covers '/': no way around a deny
		{"notools", "fs", "x/y/z", false},
		{"notools", "github", "delete_repo", false},
		{"notools", "github", "get_issue", true},
		{"notools", "db", "drop", false},
		{"notools", "db", "dropx", true},
		{"both", "github", "create_issue", true},
		{"both", "github", "delete_repo", false}, // deny wins
		{"both", "fs", "read_file", false},       // allowTools lists only github's
		{"class", "db", "alpha", true},
		{"class", "db", "beta", true},
		{"class", "db", "gamma", false},
		{"all", "fs", "read\nfile", false},
		{"all", "fs", "read\u2028file", false},
		{"all", "fs", "read\x00file", false},
		{"all", "fs", "\xc0\xaf", false},
		{"all", "fs", "read_file\u202e", false}, // bidirectional override
		{"all", "fs", "read\u200bfile", false},  // zero-width space
		{"all", "fs", "read\u0085file", false},  // C1 control
		{"all", "fs", "lire_fichier_é", true},
		{"stranger", "fs", "read_file", false},
	} {
		if got := p.AllowTool(id(tc.who), tc.server, tc.tool); got != tc.want {
			t.Errorf("AllowTool(%s, %q, %q) = %v, want %v", tc.who, tc.server, tc.tool, got, tc.want)
		}
	}
}
