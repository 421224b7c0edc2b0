// Package policy is the gateway's gateway.Policy: who a host is (bearer
// tokens matched by their SHA-256, or JWTs checked as an OAuth resource
// server against the issuer's JWKS), which backend servers and tools it
// may see and call, and how many requests it may send (rate limits and
// concurrency caps, per identity and per server).
//
// It reads three sections of the gateway's config file:
//
//	identities: {name: {tokenSha256, allowServers, denyServers, allowTools,
//	             denyTools, rateLimit: {perSecond, burst}, maxConcurrent, local}}
//	jwt:        {issuer, audience, jwksUrl, defaultPolicy: {allowServers, …}}
//	limits:     {servers: {name: {rateLimit: {perSecond, burst}, maxConcurrent}}}
//
// With neither identities nor jwt, every host is anonymous (a nil
// Identity) and allowed everything, under the servers' limits only.
//
// A JWT's subject is its identity's name: the identities entry of that
// name, if any, gives its policy (and shares its limits); otherwise
// jwt.defaultPolicy does, each subject with its own limits; with neither,
// the request is refused (403), so that a new subject of the issuer gets
// nothing until the config says what it may do.
package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/internal/safetext"
)

// Options are what the gateway gives the policy besides its config.
type Options struct {
	// Auditor receives a record of every refusal (direction "policy");
	// nil records nothing.
	Auditor gateway.Auditor
	// Logger receives the policy's own logs (JWKS fetches); nil discards
	// them. Tokens are never logged.
	Logger *slog.Logger
	// HTTPClient fetches the JWKS; nil uses a client of its own. Its
	// requests are bounded by JWKSFetchTimeout whatever its settings.
	HTTPClient *http.Client
}

// Bounds of what a host sends.
const (
	// MaxAuthorizationBytes bounds the Authorization header; a longer one
	// is refused before it is parsed or hashed.
	MaxAuthorizationBytes = 16 << 10
	// MaxSubjectBytes bounds a JWT's sub.
	MaxSubjectBytes = 256
	// maxNameBytes bounds an identity's name in the config.
	maxNameBytes = 256
)

// HashToken returns what an identity's tokenSha256 holds for token: the
// lower-case hex SHA-256 of its bytes. A token hosts can send is RFC 6750's
// b64token (letters, digits, -._~+/ then '=' padding); Authenticate refuses
// any other before hashing it.
func HashToken(token string) string {
	d := sha256.Sum256([]byte(token))
	return hex.EncodeToString(d[:])
}

// RateLimit is a token bucket: perSecond requests a second on average,
// burst at once.
type RateLimit struct {
	PerSecond float64 `json:"perSecond"`
	Burst     int     `json:"burst"`
}

// Rules are what an identity (or jwt.defaultPolicy) may do.
type Rules struct {
	AllowServers  []string   `json:"allowServers"`
	DenyServers   []string   `json:"denyServers"`
	AllowTools    []string   `json:"allowTools"`
	DenyTools     []string   `json:"denyTools"`
	RateLimit     *RateLimit `json:"rateLimit"`
	MaxConcurrent int        `json:"maxConcurrent"`
}

// IdentityConfig is one member of the identities section.
type IdentityConfig struct {
	// TokenSha256 is HashToken of the identity's bearer token (never the
	// token itself); empty for an identity reached only by a JWT subject
	// or as the local identity.
	TokenSha256 string `json:"tokenSha256"`
	// Local makes this the identity of the one local host over stdio (at
	// most one identity may say so); without one, the local host is
	// anonymous and allowed everything.
	Local bool `json:"local"`
	Rules
}

// JWTConfig is the jwt section.
type JWTConfig struct {
	Issuer   string `json:"issuer"`
	Audience string `json:"audience"`
	JWKSURL  string `json:"jwksUrl"`
	// DefaultPolicy is the policy of a subject with no identities entry;
	// nil refuses such subjects.
	DefaultPolicy *Rules `json:"defaultPolicy"`
}

// ServerLimit is one member of limits.servers.
type ServerLimit struct {
	RateLimit     *RateLimit `json:"rateLimit"`
	MaxConcurrent int        `json:"maxConcurrent"`
}

// LimitsConfig is the limits section.
type LimitsConfig struct {
	Servers map[string]ServerLimit `json:"servers"`
}

// Policy implements gateway.Policy. Its methods are safe for concurrent use.
type Policy struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time

	// byToken maps a token's SHA-256 to its identity's name.
	byToken    map[[sha256.Size]byte]string
	identities map[string]*Rules
	local      *gateway.Identity
	jwt        *jwtVerifier
	defaults   *Rules
	open       bool // no identities and no jwt: everyone anonymous

	mu       sync.Mutex
	subjects map[string]*limitState // per identity name
	servers  map[string]*limitState
}

var _ gateway.Policy = (*Policy)(nil)

// Open reports whether the policy has no identities and no jwt section:
// every host is anonymous and allowed everything.
func (p *Policy) Open() bool { return p.open }

// New reads the identities, jwt and limits sections. Every error names the
// member at fault and what to write instead.
func New(ctx context.Context, sections gateway.Sections, opts Options) (*Policy, error) {
	var ids map[string]IdentityConfig
	if err := decodeStrict(sections, "identities", &ids); err != nil {
		return nil, err
	}
	var jc *JWTConfig
	if err := decodeStrict(sections, "jwt", &jc); err != nil {
		return nil, err
	}
	var lc LimitsConfig
	if err := decodeStrict(sections, "limits", &lc); err != nil {
		return nil, err
	}
	servers, err := serverNames(sections)
	if err != nil {
		return nil, err
	}

	p := &Policy{
		opts:       opts,
		log:        opts.Logger,
		now:        time.Now,
		byToken:    map[[sha256.Size]byte]string{},
		identities: map[string]*Rules{},
		subjects:   map[string]*limitState{},
		servers:    map[string]*limitState{},
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}

	names := make([]string, 0, len(ids))
	for n := range ids {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		ic := ids[name]
		at := fmt.Sprintf("identities.%s", quoteName(name))
		if err := checkName(name); err != nil {
			return nil, fmt.Errorf("config %s: %v", at, err)
		}
		if ic.TokenSha256 != "" {
			d, err := parseDigest(ic.TokenSha256)
			if err != nil {
				return nil, fmt.Errorf("config %s.tokenSha256: %v", at, err)
			}
			if other, dup := p.byToken[d]; dup {
				return nil, fmt.Errorf("config %s.tokenSha256: the same token as identities.%s; give each identity a token of its own", at, quoteName(other))
			}
			p.byToken[d] = name
		}
		if ic.Local {
			if p.local != nil {
				return nil, fmt.Errorf("config %s.local: identities.%s is already the local identity; set local on one identity only", at, quoteName(p.local.Name))
			}
			p.local = &gateway.Identity{Name: name}
		}
		r := ic.Rules
		if err := checkRules(at, &r, servers); err != nil {
			return nil, err
		}
		p.identities[name] = &r
		p.subjects[name] = newLimitState(r.RateLimit, r.MaxConcurrent)
	}

	if jc != nil {
		v, err := newJWTVerifier(ctx, jc, p)
		if err != nil {
			return nil, err
		}
		p.jwt = v
		if jc.DefaultPolicy != nil {
			r := *jc.DefaultPolicy
			if err := checkRules("jwt.defaultPolicy", &r, servers); err != nil {
				return nil, err
			}
			p.defaults = &r
		}
	}
	p.open = len(ids) == 0 && p.jwt == nil

	snames := make([]string, 0, len(lc.Servers))
	for n := range lc.Servers {
		snames = append(snames, n)
	}
	sort.Strings(snames)
	for _, name := range snames {
		sl := lc.Servers[name]
		at := fmt.Sprintf("limits.servers.%s", quoteName(name))
		if err := checkServer(name, servers); err != nil {
			return nil, fmt.Errorf("config %s: %v", at, err)
		}
		if err := checkLimits(at, sl.RateLimit, sl.MaxConcurrent); err != nil {
			return nil, err
		}
		p.servers[name] = newLimitState(sl.RateLimit, sl.MaxConcurrent)
	}
	return p, nil
}

// sectionShapes say what each section holds, for its decoding errors.
var sectionShapes = map[string]string{
	"identities": `{"name": {"tokenSha256", "allowServers", "denyServers", "allowTools", "denyTools", "rateLimit": {"perSecond", "burst"}, "maxConcurrent", "local"}}`,
	"jwt":        `{"issuer", "audience", "jwksUrl", "defaultPolicy": {"allowServers", "denyServers", "allowTools", "denyTools", "rateLimit", "maxConcurrent"}}`,
	"limits":     `{"servers": {"name": {"rateLimit": {"perSecond", "burst"}, "maxConcurrent"}}}`,
}

// decodeStrict decodes a section; its error says what the section holds.
func decodeStrict(s gateway.Sections, name string, v any) error {
	if err := s.Decode(name, v); err != nil {
		return fmt.Errorf("%w; %s holds %s", err, name, sectionShapes[name])
	}
	return nil
}

// serverNames returns the names of the mcpServers section, or nil when it
// is absent (then server names are checked against the pattern only).
func serverNames(s gateway.Sections) (map[string]bool, error) {
	raw, ok := s["mcpServers"]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("config mcpServers: %w (write an object of servers by name)", err)
	}
	names := make(map[string]bool, len(m))
	for n := range m {
		names[n] = true
	}
	return names, nil
}

func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("an identity's name must not be empty")
	case len(name) > maxNameBytes:
		return fmt.Errorf("the name is longer than %d bytes; use a shorter one", maxNameBytes)
	case !printable(name):
		return errors.New("the name holds control characters or invalid UTF-8; use printable characters")
	}
	return nil
}

func checkServer(name string, servers map[string]bool) error {
	if !serverPattern(name) {
		return fmt.Errorf("%q is not a server name (%s)", name, gateway.ServerNamePattern)
	}
	if servers != nil && !servers[name] {
		return fmt.Errorf("no server named %q in mcpServers; name one of its servers", name)
	}
	return nil
}

func checkRules(at string, r *Rules, servers map[string]bool) error {
	for _, l := range []struct {
		member string
		v      []string
	}{{"allowServers", r.AllowServers}, {"denyServers", r.DenyServers}} {
		for i, s := range l.v {
			if err := checkServer(s, servers); err != nil {
				return fmt.Errorf("config %s.%s[%d]: %v", at, l.member, i, err)
			}
		}
	}
	for _, l := range []struct {
		member string
		v      []string
	}{{"allowTools", r.AllowTools}, {"denyTools", r.DenyTools}} {
		for i, g := range l.v {
			if g == "" || !printable(g) {
				return fmt.Errorf("config %s.%s[%d]: %q is not a glob of merged tool names; write one such as \"github__*\" or \"fs__read_file\"", at, l.member, i, g)
			}
			if _, err := path.Match(globSafe(g), ""); err != nil {
				return fmt.Errorf("config %s.%s[%d]: %q: %v; write a glob such as \"github__*\" (* any run, ? one character, [a-z] a class, \\ escapes)", at, l.member, i, g, err)
			}
		}
	}
	return checkLimits(at, r.RateLimit, r.MaxConcurrent)
}

func checkLimits(at string, rl *RateLimit, maxConcurrent int) error {
	if rl != nil {
		if !(rl.PerSecond > 0) || math.IsInf(rl.PerSecond, 0) {
			return fmt.Errorf("config %s.rateLimit.perSecond: %v is not a rate; write a number of requests per second above 0 (0.5 is one every 2 s)", at, rl.PerSecond)
		}
		if rl.Burst < 1 {
			return fmt.Errorf("config %s.rateLimit.burst: %d; write how many requests may come at once, at least 1", at, rl.Burst)
		}
	}
	if maxConcurrent < 0 {
		return fmt.Errorf("config %s.maxConcurrent: %d; write a number of requests at once above 0, or leave it out for no cap", at, maxConcurrent)
	}
	return nil
}

func parseDigest(s string) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return d, errors.New("not a SHA-256 in hex (64 hex digits); write the output of `snodo-run gateway hash-token`, never the token itself")
	}
	copy(d[:], b)
	return d, nil
}

// quoteName quotes a config member's name for an error when it holds
// anything but plain characters.
func quoteName(s string) string {
	for _, r := range s {
		if !(r == '-' || r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return fmt.Sprintf("%q", s)
		}
	}
	return s
}

// printable reports valid UTF-8 without a character that could forge or
// hide text in a log line or a host's list (safetext.Unsafe: controls,
// bidirectional and zero-width characters, U+2028/U+2029 …).
func printable(s string) bool { return !safetext.Needs(s, false) }

func serverPattern(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0:
		default:
			return false
		}
	}
	return true
}

// globSafe makes '/' an ordinary character for path.Match, so that '*'
// matches tool names that hold '/' (a deny glob "fs__*" must cover a tool
// "a/b"). NUL stands for it: no allowed name or glob holds a control
// character.
func globSafe(s string) string { return strings.ReplaceAll(s, "/", "\x00") }

func matchAny(globs []string, name string) bool {
	n := globSafe(name)
	for _, g := range globs {
		if ok, _ := path.Match(globSafe(g), n); ok {
			return true
		}
	}
	return false
}

// rules returns id's rules: nil with ok for the anonymous host (nil id),
// nil without ok for an identity the config does not know.
func (p *Policy) rules(id *gateway.Identity) (*Rules, bool) {
	if id == nil {
		return nil, true
	}
	if r, ok := p.identities[id.Name]; ok {
		return r, true
	}
	if p.defaults != nil && p.jwt != nil {
		return p.defaults, true
	}
	return nil, false
}

// AllowServer reports whether id may see and use server: deny wins; an
// allow list admits only what it lists; a name with control characters is
// never allowed.
func (p *Policy) AllowServer(id *gateway.Identity, server string) bool {
	if !printable(server) {
		return false
	}
	r, ok := p.rules(id)
	if !ok {
		return false
	}
	if r == nil {
		return true
	}
	if slices.Contains(r.DenyServers, server) {
		return false
	}
	if r.AllowServers != nil && !slices.Contains(r.AllowServers, server) {
		return false
	}
	return true
}

// AllowTool reports whether id may see and call tool on server: the server
// must be allowed, no denyTools glob may match "server__tool", and with
// allowTools one of them must.
func (p *Policy) AllowTool(id *gateway.Identity, server, tool string) bool {
	if !printable(tool) || !p.AllowServer(id, server) {
		return false
	}
	r, _ := p.rules(id)
	if r == nil {
		return true
	}
	merged := server + gateway.NameSeparator + tool
	if matchAny(r.DenyTools, merged) {
		return false
	}
	if r.AllowTools != nil && !matchAny(r.AllowTools, merged) {
		return false
	}
	return true
}

func (p *Policy) audit(rec gateway.AuditRecord) {
	if p.opts.Auditor == nil {
		return
	}
	rec.Time = p.now()
	rec.Direction = "policy"
	p.opts.Auditor.Audit(rec)
}
