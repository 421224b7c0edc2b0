package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo/internal/interop/gosdkserver"
)

// oauthServers is an MCP server protected with OAuth and its authorization
// server, which approves every request and checks PKCE.
type oauthServers struct {
	as, mcp *httptest.Server

	mu         sync.Mutex
	challenges map[string]string // code → code_challenge
	authorized int
}

func newOAuthServers(t *testing.T) *oauthServers {
	o := &oauthServers{challenges: map[string]string{}}
	o.as = httptest.NewUnstartedServer(http.HandlerFunc(o.authServer))
	o.as.Start()
	t.Cleanup(o.as.Close)
	h := gosdkserver.HTTPHandler(nil)
	// Unstarted until o.mcp is set: the handler reads o.mcp.URL.
	o.mcp = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/.well-known/oauth-protected-resource/mcp":
			writeTestJSON(w, map[string]any{"resource": o.mcp.URL + "/mcp", "authorization_servers": []string{o.as.URL}})
		case r.Header.Get("Authorization") != "Bearer tok-1":
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, o.mcp.URL))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		default:
			h.ServeHTTP(w, r)
		}
	}))
	o.mcp.Start()
	t.Cleanup(o.mcp.Close)
	return o
}

func writeTestJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (o *oauthServers) authServer(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		writeTestJSON(w, map[string]any{"issuer": o.as.URL, "authorization_endpoint": o.as.URL + "/authorize",
			"token_endpoint": o.as.URL + "/token", "registration_endpoint": o.as.URL + "/register",
			"code_challenge_methods_supported": []string{"S256"}})
	case "/register":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"client_id": "cli-client"})
	case "/authorize":
		q := r.URL.Query()
		o.authorized++
		code := fmt.Sprint("code-", o.authorized)
		o.challenges[code] = q.Get("code_challenge")
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+q.Get("state"), http.StatusFound)
	case "/token":
		r.ParseForm()
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if o.challenges[r.PostForm.Get("code")] != base64.RawURLEncoding.EncodeToString(sum[:]) {
			w.WriteHeader(http.StatusBadRequest)
			writeTestJSON(w, map[string]any{"error": "invalid_grant"})
			return
		}
		writeTestJSON(w, map[string]any{"access_token": "tok-1", "token_type": "Bearer", "expires_in": 3600})
	default:
		http.NotFound(w, r)
	}
}

// runWithBrowser runs snodo-run with args, and opens the authorization URL
// it prints on stderr, as a person at a browser would; it returns stdout,
// stderr and whether a URL was printed. cacheHome is the run's
// XDG_CACHE_HOME; "" leaves TestMain's.
func runWithBrowser(t *testing.T, cacheHome string, args ...string) (stdout, stderr string, prompted bool) {
	t.Helper()
	return runWithSlowBrowser(t, cacheHome, nil, args...)
}

// runWithSlowBrowser is runWithBrowser with a person who, having seen the
// URL, takes until before returns to open it.
func runWithSlowBrowser(t *testing.T, cacheHome string, before func(), args ...string) (stdout, stderr string, prompted bool) {
	t.Helper()
	mark := newMark()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "SNODO_CACHE_DIR="+cacheDir, markEnv+"="+mark)
	if cacheHome != "" { // else TestMain's
		cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+cacheHome)
	}
	var outb strings.Builder
	cmd.Stdout = &outb
	errp, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	sc := bufio.NewScanner(errp)
	for sc.Scan() {
		line := sc.Text()
		errb.WriteString(line + "\n")
		if u := strings.TrimSpace(line); strings.HasPrefix(u, "http://") && strings.Contains(u, "/authorize?") {
			prompted = true
			if before != nil {
				before()
			}
			base := &http.Transport{}
			resp, err := (&http.Client{Transport: base}).Get(u) // follows the redirect to 127.0.0.1
			if err != nil {
				t.Errorf("browser: %v", err)
			} else {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !strings.Contains(string(b), "You may close this window") {
					t.Errorf("browser got %d %q", resp.StatusCode, b)
				}
			}
			base.CloseIdleConnections()
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("snodo-run %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, outb.String(), errb.String())
	}
	assertNoneLeft(t, mark)
	return outb.String(), errb.String(), prompted
}

// "snodo-run --url URL" against a server that requires OAuth: the
// authorization URL is printed on stderr, so that stdout is the command's
// JSON alone; the browser's redirect comes back to 127.0.0.1, the command
// goes on; the grant is kept (0600, under the user's cache directory), so
// the next run asks for nothing.
func TestURLWithOAuth(t *testing.T) {
	o := newOAuthServers(t)
	cache := t.TempDir()
	stdout, stderr, prompted := runWithBrowser(t, cache, "--url", o.mcp.URL+"/mcp", "tools", "list", "-o", "json")
	if !prompted {
		t.Fatalf("no authorization URL printed on stderr:\n%s", stderr)
	}
	contains(t, "stderr", stderr, "Open this URL in a browser", "http://127.0.0.1:")
	var listed struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal([]byte(stdout), &listed); err != nil || len(listed.Tools) == 0 {
		t.Fatalf("stdout is not the tools list alone (%v):\n%s", err, stdout)
	}
	files, _ := filepath.Glob(filepath.Join(cache, "snodo", "oauth", "*.json"))
	if len(files) != 1 {
		t.Fatalf("grant files %q, want one", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("grant file mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}

	stdout, _, prompted = runWithBrowser(t, cache, "--url", o.mcp.URL+"/mcp", "tools", "list", "-o", "text")
	if prompted {
		t.Error("the second run asked for authorization again")
	}
	contains(t, "second tools list", stdout, "ask")
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.authorized != 1 {
		t.Errorf("%d authorizations, want 1", o.authorized)
	}
}

// The login in the browser does not count against --connect-timeout: the
// person opens the authorization URL only once a whole --connect-timeout
// has passed since it was printed, and the command succeeds all the same
// (with the login inside the handshake, the connection would have timed
// out before the browser opened).
func TestOAuthLoginOutlastsConnectTimeout(t *testing.T) {
	o := newOAuthServers(t)
	const connect = 3 * time.Second
	wait := func() {
		tm := time.NewTimer(connect)
		defer tm.Stop()
		<-tm.C
	}
	stdout, stderr, prompted := runWithSlowBrowser(t, t.TempDir(), wait,
		"--url", o.mcp.URL+"/mcp", "--connect-timeout", connect.String(), "tools", "list", "-o", "text")
	if !prompted {
		t.Fatalf("no authorization URL printed on stderr:\n%s", stderr)
	}
	contains(t, "tools list", stdout, "ask")
}

// Nobody opens the URL: --auth-timeout (here from SNODO_AUTH_TIMEOUT) ends
// the wait with a timeout that names the setting, and nothing is stored.
func TestOAuthAuthTimeout(t *testing.T) {
	o := newOAuthServers(t)
	cache := t.TempDir()
	r := cliWith(t, runOpts{env: []string{"XDG_CACHE_HOME=" + cache, "SNODO_AUTH_TIMEOUT=1s"}},
		"--url", o.mcp.URL+"/mcp", "tools", "list")
	e := exits(t, r, exitTimeout, "transport")
	contains(t, "error", e.Message, "--auth-timeout", "1s")
	contains(t, "stderr", r.stderr, "Open this URL in a browser")
	if r.stdout != "" {
		t.Errorf("stdout %q, want nothing", r.stdout)
	}
	if files, _ := filepath.Glob(filepath.Join(cache, "snodo", "oauth", "*.json")); len(files) != 0 {
		t.Errorf("grant files %q after a timed-out authorization", files)
	}
	exits(t, cli(t, "--url", o.mcp.URL+"/mcp", "--auth-timeout", "0", "tools", "list"), exitUsage, "usage")
}

// Every run of snodo-run sees the temporary home of TestMain, not the
// user's: a grant obtained by a run without a cache directory of its own
// lands under it.
func TestRunsUseTemporaryUserDirs(t *testing.T) {
	if userDirs == "" {
		t.Fatal("TestMain set no temporary user directories")
	}
	for _, f := range []func() (string, error){os.UserCacheDir, os.UserHomeDir, os.UserConfigDir} {
		if d, err := f(); err != nil || !strings.HasPrefix(d, userDirs+string(filepath.Separator)) {
			t.Errorf("user directory %q (%v) is not under %q", d, err, userDirs)
		}
	}
	o := newOAuthServers(t)
	before, _ := filepath.Glob(filepath.Join(userDirs, "cache", "snodo", "oauth", "*.json"))
	stdout, _, _ := runWithBrowser(t, "", "--url", o.mcp.URL+"/mcp", "tools", "list", "-o", "text")
	contains(t, "tools list", stdout, "ask")
	after, _ := filepath.Glob(filepath.Join(userDirs, "cache", "snodo", "oauth", "*.json"))
	if len(after) != len(before)+1 {
		t.Errorf("grant files under the temporary cache: %q before, %q after; want one more", before, after)
	}
}
