package oauth

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeAS is an authorization server for tests. It checks what a correct
// client must send (PKCE S256 verifier against the challenge, resource,
// redirect URI, client authentication) and records every request.
type fakeAS struct {
	t   *testing.T
	srv *httptest.Server

	// Behaviour, set before use.
	prefix          string // issuer path, e.g. "/tenant1"
	metadataPath    string // where the metadata document is served
	issuerOverride  string
	noPKCE          bool
	noRegistration  bool
	issSupported    bool
	issInRedirect   string // "", "correct", "wrong"
	authMethods     []string
	scopesSupported []string
	cimd            bool
	preID, preSec   string // accepted pre-registered credentials
	regMethod       string // token_endpoint_auth_method returned by DCR
	regSecret       string
	expiresIn       int
	oversize        bool     // serve a metadata document larger than the bound
	deny            []string // scopes never granted
	origin          string   // if set, the AS is served by a fakeRS at this origin

	mu         sync.Mutex
	paths      []string // every path requested, in order
	regs       int
	regMethods []any // token_endpoint_auth_method of each registration request
	authReqs   []url.Values
	tokenReqs  []url.Values
	codes      map[string]codeGrant
	tokens     map[string][]string // access token → scopes
	refreshes  map[string][]string // refresh token → scopes
	n          int
}

type codeGrant struct {
	clientID, challenge, redirect, resource string
	scopes                                  []string
}

func newFakeAS(t *testing.T) *fakeAS {
	a := &fakeAS{t: t, metadataPath: "/.well-known/oauth-authorization-server", issSupported: true, issInRedirect: "correct",
		authMethods: []string{"none"}, codes: map[string]codeGrant{}, tokens: map[string][]string{}, refreshes: map[string][]string{}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *fakeAS) issuer() string {
	if a.origin != "" {
		return a.origin + a.prefix
	}
	return a.srv.URL + a.prefix
}

func (a *fakeAS) count(what string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch what {
	case "reg":
		return a.regs
	case "auth":
		return len(a.authReqs)
	case "token":
		return len(a.tokenReqs)
	}
	panic(what)
}

func (a *fakeAS) lastAuth() url.Values {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.authReqs) == 0 {
		return nil
	}
	return a.authReqs[len(a.authReqs)-1]
}

func (a *fakeAS) lastToken() url.Values {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.tokenReqs) == 0 {
		return nil
	}
	return a.tokenReqs[len(a.tokenReqs)-1]
}

// scopesOf returns the scopes of a valid access token, or false.
func (a *fakeAS) scopesOf(tok string) ([]string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.tokens[tok]
	return s, ok
}

func (a *fakeAS) revoke(tok string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.tokens, tok)
}

func (a *fakeAS) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.paths = append(a.paths, r.URL.Path)
	switch {
	case r.Method == http.MethodGet && r.URL.Path == a.metadataPath:
		if a.oversize {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"issuer":%q,"x":"%s"}`, a.issuer(), strings.Repeat("a", MaxMetadataBytes))
			return
		}
		m := map[string]any{
			"issuer":                                         a.issuer(),
			"authorization_endpoint":                         a.issuer() + "/authorize",
			"token_endpoint":                                 a.issuer() + "/token",
			"response_types_supported":                       []string{"code"},
			"token_endpoint_auth_methods_supported":          a.authMethods,
			"authorization_response_iss_parameter_supported": a.issSupported,
		}
		if a.issuerOverride != "" {
			m["issuer"] = a.issuerOverride
		}
		if !a.noPKCE {
			m["code_challenge_methods_supported"] = []string{"S256"}
		}
		if !a.noRegistration {
			m["registration_endpoint"] = a.issuer() + "/register"
		}
		if a.scopesSupported != nil {
			m["scopes_supported"] = a.scopesSupported
		}
		if a.cimd {
			m["client_id_metadata_document_supported"] = true
		}
		writeJSON(w, 200, m)
	case r.Method == http.MethodPost && r.URL.Path == a.prefix+"/register" && !a.noRegistration:
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			writeJSON(w, 400, map[string]string{"error": "invalid_client_metadata"})
			return
		}
		a.regs++
		a.regMethods = append(a.regMethods, body["token_endpoint_auth_method"])
		if body["application_type"] != "native" || body["client_name"] == "" {
			a.t.Errorf("registration body %v: want application_type native and a client_name", body)
		}
		resp := map[string]any{"client_id": fmt.Sprintf("dcr-client-%d", a.regs), "redirect_uris": body["redirect_uris"]}
		if a.regSecret != "" {
			resp["client_secret"] = a.regSecret
		}
		if a.regMethod != "" {
			resp["token_endpoint_auth_method"] = a.regMethod
		}
		writeJSON(w, 201, resp)
	case r.Method == http.MethodGet && r.URL.Path == a.prefix+"/authorize":
		q := r.URL.Query()
		a.authReqs = append(a.authReqs, q)
		if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
			q.Get("resource") == "" || q.Get("state") == "" || q.Get("client_id") == "" {
			a.t.Errorf("bad authorization request %v", q)
			http.Error(w, "bad request", 400)
			return
		}
		a.n++
		code := fmt.Sprintf("code-%d", a.n)
		a.codes[code] = codeGrant{clientID: q.Get("client_id"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"),
			resource: q.Get("resource"), scopes: strings.Fields(q.Get("scope"))}
		red, err := url.Parse(q.Get("redirect_uri"))
		if err != nil {
			http.Error(w, "bad redirect", 400)
			return
		}
		rq := red.Query()
		rq.Set("code", code)
		rq.Set("state", q.Get("state"))
		switch a.issInRedirect {
		case "correct":
			rq.Set("iss", a.issuer())
		case "wrong":
			rq.Set("iss", "https://evil.example.com")
		}
		red.RawQuery = rq.Encode()
		http.Redirect(w, r, red.String(), http.StatusFound)
	case r.Method == http.MethodPost && r.URL.Path == a.prefix+"/token":
		if err := r.ParseForm(); err != nil {
			writeJSON(w, 400, map[string]string{"error": "invalid_request"})
			return
		}
		f := r.PostForm
		if u, p, ok := r.BasicAuth(); ok {
			// RFC 6749 §2.3.1: both are form-encoded before base64.
			u, _ = url.QueryUnescape(u)
			p, _ = url.QueryUnescape(p)
			f.Set("basic_user", u)
			f.Set("basic_pass", p)
		}
		a.tokenReqs = append(a.tokenReqs, f)
		a.token(w, f)
	default:
		http.NotFound(w, r)
	}
}

func (a *fakeAS) token(w http.ResponseWriter, f url.Values) {
	if a.preID != "" {
		if f.Get("basic_user") != a.preID || f.Get("basic_pass") != a.preSec {
			writeJSON(w, 401, map[string]string{"error": "invalid_client"})
			return
		}
	}
	var scopes []string
	switch f.Get("grant_type") {
	case "authorization_code":
		g, ok := a.codes[f.Get("code")]
		delete(a.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		switch {
		case !ok:
			writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
			writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "PKCE verification failed"})
			return
		case f.Get("redirect_uri") != g.redirect || f.Get("resource") != g.resource:
			writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "redirect_uri or resource differs"})
			return
		}
		if a.preID == "" && f.Get("client_id") != g.clientID {
			writeJSON(w, 401, map[string]string{"error": "invalid_client"})
			return
		}
		scopes = g.scopes
	case "refresh_token":
		s, ok := a.refreshes[f.Get("refresh_token")]
		if !ok || f.Get("resource") == "" {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(a.refreshes, f.Get("refresh_token"))
		scopes = s
	case "client_credentials":
		if f.Get("basic_user") == "" || f.Get("resource") == "" {
			writeJSON(w, 401, map[string]string{"error": "invalid_client"})
			return
		}
		scopes = strings.Fields(f.Get("scope"))
	default:
		writeJSON(w, 400, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	scopes = slices.DeleteFunc(slices.Clone(scopes), func(s string) bool { return slices.Contains(a.deny, s) })
	a.n++
	at, rt := fmt.Sprintf("at-%d", a.n), fmt.Sprintf("rt-%d", a.n)
	a.tokens[at] = scopes
	a.refreshes[rt] = scopes
	resp := map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt, "scope": strings.Join(scopes, " ")}
	if a.expiresIn > 0 {
		resp["expires_in"] = a.expiresIn
	}
	writeJSON(w, 200, resp)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// fakeRS is a protected MCP server. It accepts tokens the fakeAS issued
// and echoes the request body.
type fakeRS struct {
	as  *fakeAS
	srv *httptest.Server

	prmPath       string // "" = no PRM anywhere
	prmInHeader   bool
	prmHeaderPath string // if set, the header names this path instead of prmPath
	prmResource   string // override of the resource in PRM
	prmOversize   bool
	authServers   func() []string
	scopeInHeader string   // scope in the 401 challenge
	prmScopes     []string // scopes_supported in PRM
	// need returns the scopes the request needs.
	need func(r *http.Request) []string
	// hold, if set, is called with each /mcp request's body before it is
	// answered.
	hold func(body string)
	// mcp makes /mcp answer as an initialize-era MCP server instead of
	// echoing the body.
	mcp bool

	mu    sync.Mutex
	paths []string
	auths []string // Authorization header of each request but metadata
}

func newFakeRS(t *testing.T, as *fakeAS) *fakeRS {
	rs := &fakeRS{as: as, prmPath: "/.well-known/oauth-protected-resource/mcp", prmInHeader: true,
		authServers: func() []string { return []string{as.issuer()} }}
	rs.srv = httptest.NewServer(http.HandlerFunc(rs.serve))
	t.Cleanup(rs.srv.Close)
	return rs
}

func (rs *fakeRS) url() string { return rs.srv.URL + "/mcp" }

func (rs *fakeRS) requested(path string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Contains(rs.paths, path)
}

func (rs *fakeRS) serve(w http.ResponseWriter, r *http.Request) {
	rs.mu.Lock()
	rs.paths = append(rs.paths, r.URL.Path)
	if !strings.HasPrefix(r.URL.Path, "/.well-known/") {
		rs.auths = append(rs.auths, r.Header.Get("Authorization"))
	}
	rs.mu.Unlock()
	switch {
	case rs.prmPath != "" && r.URL.Path == rs.prmPath:
		if rs.prmOversize {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"resource":%q,"pad":"%s"}`, rs.url(), strings.Repeat("x", MaxMetadataBytes))
			return
		}
		res := rs.url()
		if rs.prmPath == "/.well-known/oauth-protected-resource" {
			res = rs.srv.URL
		}
		if rs.prmResource != "" {
			res = rs.prmResource
		}
		m := map[string]any{"resource": res, "authorization_servers": rs.authServers()}
		if rs.prmScopes != nil {
			m["scopes_supported"] = rs.prmScopes
		}
		writeJSON(w, 200, m)
	case r.URL.Path == "/mcp":
		body, _ := io.ReadAll(r.Body)
		if rs.hold != nil {
			rs.hold(string(body))
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		var granted []string
		if ok {
			granted, ok = rs.as.scopesOf(tok)
		}
		ch := `Bearer error="invalid_token"`
		if rs.prmInHeader {
			p := rs.prmPath
			if rs.prmHeaderPath != "" {
				p = rs.prmHeaderPath
			}
			ch += fmt.Sprintf(`, resource_metadata="%s%s"`, rs.srv.URL, p)
		}
		if rs.scopeInHeader != "" {
			ch += fmt.Sprintf(`, scope="%s"`, rs.scopeInHeader)
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", ch)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if rs.need != nil {
			need := rs.need(r)
			for _, s := range need {
				if !slices.Contains(granted, s) {
					w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s", resource_metadata="%s%s"`,
						strings.Join(need, " "), rs.srv.URL, rs.prmPath))
					http.Error(w, "forbidden", http.StatusForbidden)
					return
				}
			}
		}
		if rs.mcp {
			answerMCP(w, r, body)
			return
		}
		w.Write(body)
	case rs.as.origin != "":
		rs.as.serve(w, r) // the MCP server is its own authorization server
	default:
		http.NotFound(w, r)
	}
}

// answerMCP answers as a minimal initialize-era MCP server with one tool.
func answerMCP(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed) // no GET stream; DELETE not needed
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	json.Unmarshal(body, &msg)
	var result string
	switch msg.Method {
	case "server/discover":
		http.NotFound(w, r) // not a 2026-07-28 server
		return
	case "initialize":
		w.Header().Set("Mcp-Session-Id", "session-1")
		result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`
	case "tools/list":
		result = `{"tools":[{"name":"protected-tool","inputSchema":{"type":"object"}}]}`
	default:
		if len(msg.ID) == 0 { // a notification
			w.WriteHeader(http.StatusAccepted)
			return
		}
		result = `{}`
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
}
