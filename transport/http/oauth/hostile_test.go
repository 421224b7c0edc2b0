package oauth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
)

// The headless authorizer reads the redirect only when it goes to the
// redirect URI; a redirect elsewhere is an error, not a code.
func TestHeadlessAuthorizerRefusesForeignRedirect(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:1/elsewhere?code=c&state=s", http.StatusFound)
	}))
	defer srv.Close()
	_, err := HeadlessAuthorizer{Client: srv.Client()}.Authorize(context.Background(),
		AuthorizationRequest{URL: srv.URL + "/authorize", RedirectURL: testRedirect, State: "s"})
	if err == nil || !strings.Contains(err.Error(), "not to the redirect URI") {
		t.Fatalf("err = %v", err)
	}
	_, err = HeadlessAuthorizer{Client: srv.Client()}.Authorize(context.Background(),
		AuthorizationRequest{URL: "http://auth.example.com/authorize", RedirectURL: testRedirect})
	if !errors.Is(err, ErrInsecureURL) {
		t.Fatalf("http authorization URL off loopback: err = %v", err)
	}
}

// Metadata fetched over https is not followed to http.
func TestMetadataRedirectDowngradeRefused(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"resource": "x"})
	}))
	defer plain.Close()
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/meta", http.StatusFound)
	}))
	defer tls.Close()
	var v map[string]any
	err := getJSON(context.Background(), tls.Client(), "test", tls.URL+"/meta", &v)
	if !errors.Is(err, ErrInsecureURL) {
		t.Fatalf("err = %v, want ErrInsecureURL", err)
	}
}

// A token request redirected to another origin (another port of the same
// host here) is not followed, whatever the status: its body and its Basic
// authorization carry the client secret and the refresh token, which
// net/http would send there.
func TestTokenRequestRedirectToAnotherOriginRefused(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		leaked = append(leaked, r.Method+" "+r.Header.Get("Authorization")+" "+string(body))
		mu.Unlock()
		writeJSON(w, 200, map[string]any{"access_token": "a", "token_type": "Bearer"})
	}))
	defer other.Close()
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
		as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			http.Redirect(w, r, other.URL+"/token", status)
		}))
		for _, method := range []string{authBasic, authPost} {
			form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"s3cr3t-refresh"}}
			_, err := postToken(context.Background(), &http.Client{}, as.URL+"/token", form, "id", "s3cr3t-secret", method)
			if err == nil || !strings.Contains(err.Error(), "another origin") {
				t.Errorf("%d, %s: err = %v, want a refused redirect", status, method, err)
			}
		}
		as.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range leaked {
		t.Errorf("the other origin got: %s", l)
	}
}

// Metadata that is not JSON, or not an object of the expected shape, is an
// error naming the document, not a crash or a guess.
func TestMalformedMetadataRefused(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"html": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html>"))
		},
		"bad json": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"resource":`))
		},
		"wrong types": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"resource":1,"authorization_servers":"x"}`))
		},
		"server error": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) },
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(h)
			defer srv.Close()
			var v protectedResource
			var e *Error
			if err := getJSON(context.Background(), srv.Client(), "protected resource metadata", srv.URL+"/m", &v); !errors.As(err, &e) {
				t.Fatalf("err = %v, want *Error", err)
			}
		})
	}
}

func TestFileStoreRefusesOversizeFile(t *testing.T) {
	s, err := NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const key = "https://mcp.example.com/mcp"
	if err := os.WriteFile(s.path(key), make([]byte, maxGrantFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(context.Background(), key); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Fatalf("err = %v", err)
	}
}
