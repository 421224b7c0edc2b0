package oauth

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// browser reads the line the LoopbackAuthorizer prints and follows the URL
// as a browser would, redirects included.
// On failure it cancels the authorization, which would otherwise wait for
// a redirect that never comes.
func browser(out io.Reader, cancel context.CancelFunc, done chan<- error) {
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "http") {
			continue
		}
		base := &http.Transport{}
		defer base.CloseIdleConnections()
		resp, err := (&http.Client{Transport: base}).Get(line)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), "You may close this window") {
				err = errors.New("unexpected page: " + resp.Status + " " + string(b))
			}
		}
		if err != nil {
			cancel()
		}
		done <- err
		io.Copy(io.Discard, out)
		return
	}
	cancel()
	done <- errors.New("no URL printed")
}

// The whole flow with a real redirect through the loopback listener.
func TestLoopbackAuthorizerEndToEnd(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	pr, pw := io.Pipe()
	defer pr.Close()
	la, err := NewLoopbackAuthorizer(LoopbackOptions{Out: pw})
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close()
	if !strings.HasPrefix(la.RedirectURL(), "http://127.0.0.1:") || !strings.HasSuffix(la.RedirectURL(), "/callback") {
		t.Fatalf("redirect URL %q", la.RedirectURL())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go browser(pr, cancel, done)
	c, _ := newTestClient(t, Config{Authorizer: la, RedirectURL: la.RedirectURL()})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rs.url(), strings.NewReader("x"))
	resp, err := c.Do(req)
	pw.Close()
	if berr := <-done; berr != nil {
		t.Fatal("browser: ", berr)
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if as.lastAuth().Get("redirect_uri") != la.RedirectURL() {
		t.Errorf("redirect_uri %q", as.lastAuth().Get("redirect_uri"))
	}
	// The listener is shut down once the authorization is over.
	host := strings.TrimPrefix(strings.TrimSuffix(la.RedirectURL(), "/callback"), "http://")
	if conn, err := net.Dial("tcp", host); err == nil {
		conn.Close()
		t.Error("the redirect listener is still open")
	}
}

// A response with the wrong state is answered with an error page and
// ignored; the right one is accepted.
func TestLoopbackAuthorizerIgnoresForeignState(t *testing.T) {
	la, err := NewLoopbackAuthorizer(LoopbackOptions{Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	hc := &http.Client{Transport: base}
	type result struct {
		r   *AuthorizationResponse
		err error
	}
	res := make(chan result, 1)
	go func() {
		r, err := la.Authorize(context.Background(), AuthorizationRequest{URL: "https://as.example/authorize", RedirectURL: la.RedirectURL(), State: "good"})
		res <- result{r, err}
	}()
	resp, err := hc.Get(la.RedirectURL() + "?code=evil&state=bad")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("foreign state: status %d, want 400", resp.StatusCode)
	}
	resp, err = hc.Get(la.RedirectURL() + "?code=c1&state=good&iss=https%3A%2F%2Fas.example")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := <-res
	if got.err != nil || got.r.Code != "c1" || got.r.Iss != "https://as.example" {
		t.Fatalf("Authorize = %+v, %v", got.r, got.err)
	}
}

func TestLoopbackAuthorizerCancel(t *testing.T) {
	la, err := NewLoopbackAuthorizer(LoopbackOptions{Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = la.Authorize(ctx, AuthorizationRequest{URL: "https://as.example/authorize", RedirectURL: la.RedirectURL(), State: "s"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestLoopbackAuthorizerRefusesBadInput(t *testing.T) {
	if _, err := NewLoopbackAuthorizer(LoopbackOptions{}); err == nil {
		t.Error("no Out accepted")
	}
	if _, err := NewLoopbackAuthorizer(LoopbackOptions{Out: io.Discard, Path: "cb"}); err == nil {
		t.Error("relative path accepted")
	}
	la, err := NewLoopbackAuthorizer(LoopbackOptions{Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close()
	if _, err := la.Authorize(context.Background(), AuthorizationRequest{URL: "javascript:alert(1)", RedirectURL: la.RedirectURL()}); err == nil {
		t.Error("non-http authorization URL accepted")
	}
}

func TestPrintableURL(t *testing.T) {
	if got := printableURL("https://a.example/x?q=\x1b[2J\u202e"); strings.ContainsAny(got, "\x1b\u202e") {
		t.Errorf("printableURL kept control characters: %q", got)
	}
}
