package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LoopbackOptions configures a LoopbackAuthorizer.
type LoopbackOptions struct {
	// Port is the TCP port on 127.0.0.1 to receive the redirect on; 0 picks
	// a free one when the authorizer is created.
	Port int
	// Path is the redirect URI's path (default "/callback").
	Path string
	// Out receives the line asking the user to open the authorization URL.
	// Required.
	Out io.Writer
	// OpenBrowser also tries to open the URL with the desktop's browser
	// (xdg-open on Linux and BSD, open on macOS).
	OpenBrowser bool
	// Timeout bounds the wait for the user (default 5 minutes).
	Timeout time.Duration
}

// LoopbackAuthorizer is an Authorizer for a person at a browser on this
// machine (RFC 8252 §7.3): it prints the authorization URL, listens on
// 127.0.0.1 for the redirect, answers it with a page saying the window can
// be closed, and stops listening.
//
// Only a response carrying the state of the authorization in progress is
// accepted; anything else that reaches the port is answered with an error
// page and ignored.
//
// Note: it serves one authorization at a time; give each Transport its own.
type LoopbackAuthorizer struct {
	opts     LoopbackOptions
	redirect string
	addr     string

	mu sync.Mutex
	ln net.Listener // bound between creation and the first Authorize
}

// NewLoopbackAuthorizer creates a LoopbackAuthorizer. With Port 0 it binds a
// free port now, so that RedirectURL is known; Close releases it if
// Authorize is never called.
func NewLoopbackAuthorizer(opts LoopbackOptions) (*LoopbackAuthorizer, error) {
	if opts.Out == nil {
		return nil, errors.New("oauth: LoopbackOptions.Out is required")
	}
	if opts.Port < 0 || opts.Port > 65535 {
		return nil, fmt.Errorf("oauth: invalid port %d", opts.Port)
	}
	if opts.Path == "" {
		opts.Path = "/callback"
	}
	if !strings.HasPrefix(opts.Path, "/") || strings.ContainsAny(opts.Path, "?#") {
		return nil, fmt.Errorf("oauth: invalid redirect path %q", opts.Path)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Minute
	}
	a := &LoopbackAuthorizer{opts: opts}
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.Port)))
	if err != nil {
		return nil, fmt.Errorf("oauth: listening for the authorization redirect: %w", err)
	}
	a.ln = ln
	a.addr = ln.Addr().String()
	a.redirect = (&url.URL{Scheme: "http", Host: a.addr, Path: opts.Path}).String()
	return a, nil
}

// RedirectURL returns the redirect URI to put in Config.RedirectURL.
func (a *LoopbackAuthorizer) RedirectURL() string { return a.redirect }

// Close releases the port if it is still bound.
func (a *LoopbackAuthorizer) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ln == nil {
		return nil
	}
	err := a.ln.Close()
	a.ln = nil
	return err
}

// listener returns the bound listener, binding the same address again for
// a second authorization.
func (a *LoopbackAuthorizer) listener(ctx context.Context) (net.Listener, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ln := a.ln; ln != nil {
		a.ln = nil
		return ln, nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp4", a.addr)
	if err != nil {
		return nil, fmt.Errorf("oauth: listening for the authorization redirect: %w", err)
	}
	return ln, nil
}

// Authorize implements Authorizer.
func (a *LoopbackAuthorizer) Authorize(ctx context.Context, req AuthorizationRequest) (*AuthorizationResponse, error) {
	if req.RedirectURL != a.redirect {
		return nil, fmt.Errorf("oauth: the redirect URL %q is not this authorizer's %q", req.RedirectURL, a.redirect)
	}
	if _, err := checkEndpoint("authorization URL", req.URL); err != nil {
		return nil, err
	}
	ln, err := a.listener(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()

	got := make(chan *AuthorizationResponse, 1)
	mux := http.NewServeMux()
	mux.HandleFunc(a.opts.Path, func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'none'")
		resp := ResponseFromQuery(r.URL.Query())
		if r.Method != http.MethodGet || resp.State != req.State {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, page("This is not the authorization Snodo is waiting for."))
			return
		}
		select {
		case got <- resp:
		default:
		}
		if resp.Error != "" {
			io.WriteString(w, page("Authorization was not granted. You may close this window and return to the terminal."))
			return
		}
		io.WriteString(w, page("Authorization received. You may close this window and return to the terminal."))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	defer func() {
		// Let the page reach the browser, then stop listening.
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer scancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
		<-served
	}()

	fmt.Fprintf(a.opts.Out, "Open this URL in a browser to authorize Snodo:\n\n  %s\n\n", printableURL(req.URL))
	if a.opts.OpenBrowser {
		openBrowser(ctx, req.URL)
	}
	select {
	case r := <-got:
		return r, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("oauth: waiting for the authorization redirect: %w", context.Cause(ctx))
	}
}

// page returns the small HTML page shown after the redirect. It contains no
// text from the request.
func page(msg string) string {
	return "<!doctype html><meta charset=utf-8><title>Snodo</title><p>" + msg + "</p>\n"
}

// printableURL percent-encodes every byte outside printable ASCII so that a
// URL built from server metadata cannot carry terminal control sequences.
func printableURL(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= 0x20 || c >= 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// browserCommand names the program that opens a URL on this platform.
func browserCommand() string {
	switch runtime.GOOS {
	case "darwin":
		return "open"
	case "windows", "android", "ios", "js", "wasip1":
		return ""
	}
	return "xdg-open"
}

// openBrowser starts the desktop's URL opener and waits for it (it returns
// at once, having handed the URL over). Failure is not an error: the URL
// has been printed.
func openBrowser(ctx context.Context, u string) {
	name := browserCommand()
	if name == "" {
		return
	}
	if _, err := exec.LookPath(name); err != nil {
		return
	}
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(octx, name, u) // no shell: u is one argument
	cmd.Run()
}
