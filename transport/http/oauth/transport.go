package oauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Transport is an http.RoundTripper that authorizes requests to MCP servers
// with OAuth. It is safe for concurrent use. See the package documentation
// for the flow.
type Transport struct {
	base   http.RoundTripper
	cfg    Config
	client *http.Client
	flight singleflight.Group
	now    func() time.Time

	mu      sync.Mutex
	servers map[string]*serverState
}

// installed is a grant and the generation it was installed as.
type installed struct {
	grant *Grant
	gen   uint64
}

// serverState is the grant in use for one MCP server.
type serverState struct {
	mu     sync.Mutex
	loaded bool
	grant  *Grant
	gen    uint64 // incremented whenever grant changes
	// refused is a grant the server refused right after it was obtained;
	// a 401 for it starts no new authorization.
	refused *Grant
}

// NewTransport returns a Transport that sends requests through base (nil
// means http.DefaultTransport) with the authorization cfg describes.
//
// Note: a request whose authorization must be obtained or renewed is sent a
// second time, so its body must be replayable: http.NewRequest sets GetBody
// for bytes, strings and bytes.Buffer bodies. Without GetBody the
// authorization is still obtained, and RoundTrip returns an error wrapping
// ErrBodyNotReplayable; sending the request again then succeeds.
//
// Note: the authorization runs under the context of the request that
// needed it, so that request's deadline bounds the time the user has to
// consent; give the first request of a connection a generous one, or
// obtain the grant first with a request of the program's own when
// [Transport.Authorized] is false.
func NewTransport(base http.RoundTripper, cfg Config) (*Transport, error) {
	if base == nil {
		base = http.DefaultTransport
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.Scopes = slices.Clone(cfg.Scopes)
	c := cfg.HTTPClient
	if c == nil {
		c = &http.Client{Transport: base, Timeout: time.Minute}
	}
	return &Transport{base: base, cfg: cfg, client: c, now: time.Now, servers: map[string]*serverState{}}, nil
}

// NewClient returns an *http.Client whose requests are authorized as cfg
// describes; base (nil means http.DefaultClient) supplies the RoundTripper,
// timeout, redirect policy and cookie jar.
func NewClient(base *http.Client, cfg Config) (*http.Client, error) {
	if base == nil {
		base = http.DefaultClient
	}
	t, err := NewTransport(base.Transport, cfg)
	if err != nil {
		return nil, err
	}
	c := *base
	c.Transport = t
	return &c, nil
}

func (t *Transport) state(key string) *serverState {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.servers[key]
	if st == nil {
		st = &serverState{}
		t.servers[key] = st
	}
	return st
}

// current returns the grant to use for the server, loading it from the
// store the first time and refreshing it when it has expired.
func (t *Transport) current(ctx context.Context, key string, st *serverState) (*Grant, uint64, error) {
	st.mu.Lock()
	if !st.loaded {
		g, err := t.cfg.Store.Load(ctx, key)
		if err != nil {
			st.mu.Unlock()
			return nil, 0, err
		}
		st.grant, st.loaded = g, true
	}
	g, gen := st.grant, st.gen
	st.mu.Unlock()
	if g == nil || g.AccessToken == "" || !g.expired(t.now()) || g.RefreshToken == "" {
		return g, gen, nil
	}
	v, err, _ := t.flight.Do(key+"\x00refresh", func() (any, error) {
		st.mu.Lock()
		if st.gen != gen { // refreshed meanwhile
			g, gen := st.grant, st.gen
			st.mu.Unlock()
			return installed{g, gen}, nil
		}
		st.mu.Unlock()
		ng, err := t.refreshGrant(ctx, g)
		if err != nil {
			// Fall back to the server's 401 and a new authorization.
			ng = g.clone()
			ng.AccessToken, ng.RefreshToken = "", ""
		}
		return t.install(ctx, key, st, ng)
	})
	if err != nil {
		return nil, 0, err
	}
	r := v.(installed)
	return r.grant, r.gen, nil
}

func (t *Transport) refreshGrant(ctx context.Context, g *Grant) (*Grant, error) {
	m, err := fetchServerMetadata(ctx, t.client, g.Issuer)
	if err != nil {
		return nil, err
	}
	return t.refresh(ctx, m, g)
}

// install saves g and makes it the server's grant; the lock keeps the
// store and the memory in the same order when a refresh and an
// authorization finish together.
func (t *Transport) install(ctx context.Context, key string, st *serverState, g *Grant) (installed, error) {
	g.Server = key
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := t.cfg.Store.Save(ctx, key, g); err != nil {
		return installed{}, err
	}
	st.grant = g
	st.gen++
	return installed{g, st.gen}, nil
}

// Authorized reports whether the transport holds a usable access token for
// the MCP server at serverURL: one it obtained, or one kept in its
// TokenStore, refreshed first if it has expired and can be. A program that
// wants the user's consent before it starts talking to a server (outside
// the deadlines of its protocol requests) can send one request of its own
// first, under a deadline of its choosing, when Authorized is false.
func (t *Transport) Authorized(ctx context.Context, serverURL string) (bool, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false, fmt.Errorf("oauth: unsupported URL %q", redactURL(serverURL))
	}
	key := canonicalResource(u)
	g, _, err := t.current(ctx, key, t.state(key))
	if err != nil {
		return false, err
	}
	return g != nil && g.AccessToken != "" && !g.expired(t.now()), nil
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") {
		closeBody(req)
		return nil, fmt.Errorf("oauth: unsupported URL %q", redactURL(req.URL.String()))
	}
	ctx := req.Context()
	key := canonicalResource(req.URL)
	st := t.state(key)
	g, gen, err := t.current(ctx, key, st)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.base.RoundTrip(withToken(req, g, req.Body))
	if err != nil {
		return nil, err
	}
	ch, again := t.needsAuthorization(resp, g)
	if !again {
		return resp, nil
	}
	st.mu.Lock()
	refused := g != nil && st.refused == g
	st.mu.Unlock()
	if refused && resp.StatusCode == http.StatusUnauthorized {
		return resp, nil
	}
	keep(resp)

	v, err, _ := t.flight.Do(key+"\x00authorize", func() (any, error) {
		st.mu.Lock()
		if st.gen != gen { // another request obtained a grant meanwhile
			g, gen := st.grant, st.gen
			st.mu.Unlock()
			return installed{g, gen}, nil
		}
		st.mu.Unlock()
		ng, err := t.authorize(ctx, key, req.URL, ch, g)
		if err != nil {
			return nil, err
		}
		return t.install(ctx, key, st, ng)
	})
	if errors.Is(err, ErrNoMetadata) && ch["resource_metadata"] == "" {
		// The server does not do OAuth (no metadata anywhere): its own
		// answer says more than the failed discovery.
		return resp, nil
	}
	if err != nil {
		return nil, err
	}
	ng := v.(installed).grant

	body := req.Body
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return nil, fmt.Errorf("%w: %s %s", ErrBodyNotReplayable, req.Method, redactURL(req.URL.String()))
		}
		if body, err = req.GetBody(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBodyNotReplayable, err)
		}
	}
	resp, err = t.base.RoundTrip(withToken(req, ng, body))
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		// A token refused as soon as it was obtained: asking the user again
		// would be refused too. Later requests with it get the 401 as is.
		st.mu.Lock()
		if st.grant == ng {
			st.refused = ng
		}
		st.mu.Unlock()
	}
	return resp, err
}

// needsAuthorization reports whether resp asks for a (new) authorization
// that may make the request succeed, and returns the Bearer challenge.
func (t *Transport) needsAuthorization(resp *http.Response, used *Grant) (map[string]string, bool) {
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		ch := bearerChallenge(resp.Header)
		if ch == nil {
			ch = map[string]string{}
		}
		return ch, true
	case http.StatusForbidden:
		ch := bearerChallenge(resp.Header)
		if ch == nil || !isStepUp(ch) {
			return nil, false
		}
		// Scope Challenge Handling: step up only when the challenge asks
		// for a scope not yet requested; asking again for the same scopes
		// would loop, so the 403 goes back to the caller.
		want := strings.Fields(ch["scope"])
		if len(want) == 0 || used == nil {
			return nil, false
		}
		for _, s := range want {
			if !slices.Contains(used.Scopes, s) {
				return ch, true
			}
		}
		return nil, false
	}
	return nil, false
}

// withToken returns a copy of req with body and, if g has an access token,
// the Authorization header (MCP authorization, "Token Requirements").
func withToken(req *http.Request, g *Grant, body io.ReadCloser) *http.Request {
	r := req.Clone(req.Context())
	r.Body = body
	if g != nil && g.AccessToken != "" {
		r.Header.Set("Authorization", "Bearer "+g.AccessToken)
	}
	return r
}

// maxKeptBody bounds the body of a 401 or 403 kept in case it is returned.
const maxKeptBody = 4 << 10

// keep replaces resp's body with its first maxKeptBody bytes in memory and
// closes the original, so that the connection is free during the flow and
// the response can still be returned.
func keep(resp *http.Response) {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxKeptBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Del("Content-Length")
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
