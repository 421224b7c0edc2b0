package http

import (
	"errors"
	"fmt"
	"net"
	nethttp "net/http"
	"net/url"
	"strings"

	"github.com/snodo/snodo/internal/redact"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// DefaultMaxMessageBytes is the default of Config.MaxMessageBytes: 16 MiB,
// as stdio's line limit.
const DefaultMaxMessageBytes = jsonrpc.DefaultMaxLineBytes

// maxIdleConnsPerHost is how many idle connections the transport's own
// client (Config.HTTPClient nil) keeps to the endpoint: up to this many
// callers with requests in flight at once each reuse a connection (HTTP/1.1
// carries one request at a time per connection). More concurrent callers
// still work; the connections beyond the bound are closed after their
// response instead of being kept, and opened anew. Idle connections close
// after 90 seconds unused, and all of them at Close. It is 256: well above
// the 16 server requests answered at once by default
// (snodo.Options.MaxServerRequests), whose answers are POSTs too, and the
// dozens of callers a client usually has.
const maxIdleConnsPerHost = 256

// The buffers of each connection of the transport's own client.
const (
	ownReadBufferSize  = 1 << 10
	ownWriteBufferSize = 2 << 10
)

// ErrClosed is the cause of the error of requests that fail because the
// transport was closed.
var ErrClosed = errors.New("http: transport closed")

// ErrSessionExpired is the cause of the error of a request that carried an
// Mcp-Session-Id and was answered 404: the server has ended the session,
// and a new one starts with initialize (snodo.Client does so, and sends a
// request refused so once more). It is transport.ErrSessionExpired; the
// error of a POST refused so also wraps transport.ErrNotDelivered.
var ErrSessionExpired = transport.ErrSessionExpired

// ErrTooLarge is the cause of the error of a response body or an SSE event
// larger than Config.MaxMessageBytes.
var ErrTooLarge = errors.New("http: message larger than the bound")

// ErrCrossOriginRedirect is the cause of the error of a request the server
// redirected to another origin (scheme, host or port), from https to plain
// http among them: such a redirect is not followed (see CheckRedirect).
var ErrCrossOriginRedirect = errors.New("http: redirect to another origin not followed")

// Config says where the server is and how to reach it.
type Config struct {
	// URL is the MCP endpoint, http or https.
	URL string
	// HTTPClient sends the requests. nil means a client of Snodo's own:
	// proxies from the environment (HTTP_PROXY, HTTPS_PROXY, NO_PROXY),
	// HTTP/2 when the server offers it over TLS, no overall timeout, since
	// response streams are long, the redirect policy CheckRedirect, and up
	// to 256 idle connections kept to the endpoint, so that as many
	// concurrent callers each reuse a connection instead of opening one
	// per request. Its idle connections are closed with the transport.
	// A client given here keeps its own limits: net/http's default keeps
	// only 2 idle connections per host. An authorizing
	// http.RoundTripper goes here. Whatever the given client's own
	// CheckRedirect, the transport sends it a copy that follows no
	// redirect to another origin; its policy applies to the others.
	HTTPClient *nethttp.Client
	// Header is added to every request (e.g. Authorization: Bearer …).
	// The headers of the protocol (MCP-Protocol-Version, Mcp-Session-Id,
	// Mcp-Method, …) take precedence over it.
	Header nethttp.Header
	// OnServerRequest answers server requests when the transport is used
	// without snodo.Client (initialize era: the server's requests on SSE
	// streams), at most 16 at once: a request over that limit, or a
	// function that panics, is answered with -32603. nil answers -32601.
	// The client replaces it with its own admission (SetInbound), under
	// its one limit (snodo.Options.MaxServerRequests).
	OnServerRequest transport.ServerRequestFunc
	// OnNotification receives the server's notifications that are not
	// routed to a request (progress) or a subscription, when the transport
	// is used without snodo.Client. It must not block.
	OnNotification transport.NotificationFunc
	// MaxMessageBytes bounds one JSON response body or one SSE event; 0
	// means DefaultMaxMessageBytes (16 MiB). A larger one fails the
	// request it belongs to with a -32000 error wrapping ErrTooLarge.
	MaxMessageBytes int
}

// Transport is a client's connection to a Streamable HTTP MCP endpoint. It
// is safe for concurrent use.
type Transport struct {
	base
	url *url.URL // Config.URL, parsed once; each request gets a copy

	// Guarded by core.Mu:
	get    *getStream      // the standalone GET stream's loop, while it runs
	onLost func(err error) // transport.StreamWatcher's hook, or nil
}

// Compile-time checks of the capabilities Transport offers.
var (
	_ transport.Transport      = (*Transport)(nil)
	_ transport.Notifier       = (*Transport)(nil)
	_ transport.SessionDeleter = (*Transport)(nil)
	_ transport.Listener       = (*Transport)(nil)
	_ transport.Inbound        = (*Transport)(nil)
	_ transport.HeaderCarrier  = (*Transport)(nil)
	_ transport.StreamWatcher  = (*Transport)(nil)
)

// New returns a transport for cfg. It validates cfg and makes no request.
func New(cfg Config) (*Transport, error) {
	u, err := cfg.check()
	if err != nil {
		return nil, err
	}
	// As nethttp.NewRequest does with the URL it parses: "host:" is "host".
	u.Host = strings.TrimSuffix(u.Host, ":")
	t := &Transport{url: u}
	t.init(cfg)
	return t, nil
}

// check validates cfg and returns its URL, parsed.
func (cfg Config) check() (*url.URL, error) {
	if cfg.URL == "" {
		return nil, errors.New("http: Config.URL is empty")
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("http: Config.URL: %w", redact.Error(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("http: Config.URL must be http or https, not %q", u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("http: Config.URL %q has no host", redact.URL(cfg.URL))
	}
	if cfg.MaxMessageBytes < 0 {
		return nil, fmt.Errorf("http: Config.MaxMessageBytes must not be negative, not %d", cfg.MaxMessageBytes)
	}
	for name, values := range cfg.Header {
		for _, v := range values {
			if !validHeaderValue(v) {
				return nil, fmt.Errorf("http: Config.Header %s has a value with control characters", name)
			}
		}
	}
	return u, nil
}

// clientFor returns the client that sends a transport's requests, given
// Config.HTTPClient: a copy of it whose redirects stay within the origin,
// or when nil a client of Snodo's own, with its transport (own), whose
// idle connections are closed with the transport; plain says the endpoint
// is http, not https.
func clientFor(given *nethttp.Client, plain bool) (client *nethttp.Client, own *nethttp.Transport) {
	if given == nil {
		own = nethttp.DefaultTransport.(*nethttp.Transport).Clone()
		// HTTP/2 is negotiated over TLS only; to a plain http endpoint
		// (which redirects cannot leave, see CheckRedirect) its set-up
		// would be a cost each transport pays for nothing.
		own.ForceAttemptHTTP2 = !plain
		// Each kept connection holds a read and a write buffer for its
		// whole life: 1 and 2 KiB instead of net/http's 4 and 4 hold an
		// MCP request's headers and a small message, and larger bodies
		// go around the buffers, so an idle session costs 5 KiB less.
		own.ReadBufferSize = ownReadBufferSize
		own.WriteBufferSize = ownWriteBufferSize
		// Concurrent requests to one endpoint keep their connections: one
		// endpoint is one host, so the total is the per-host bound.
		own.MaxIdleConnsPerHost = maxIdleConnsPerHost
		own.MaxIdleConns = maxIdleConnsPerHost
		return &nethttp.Client{Transport: own, CheckRedirect: CheckRedirect}, own
	}
	c := *given
	policy := c.CheckRedirect
	c.CheckRedirect = func(req *nethttp.Request, via []*nethttp.Request) error {
		if err := checkOrigin(req, via); err != nil {
			return err
		}
		if policy == nil { // net/http's default policy
			return maxRedirects(via)
		}
		return policy(req, via)
	}
	return &c, nil
}

// CheckRedirect is the redirect policy of the transport's own client, for
// an http.Client that carries MCP requests (one with an authorizing
// RoundTripper, say). It follows a redirect only within the origin of the
// request (scheme, host and port: the configured URL's), at most 10, and
// only one that keeps the request's method and body (307, 308): a 301,
// 302 or 303 would turn a POST into a GET without its message, so that
// response is returned as it is (a failure status) instead.
//
// A redirect to another origin, from https to plain http among them, is
// not followed: the request fails with an error wrapping
// ErrCrossOriginRedirect that names the target, redacted. net/http would
// carry the request's headers there, a configured X-Api-Key as well as an
// Authorization header (which it drops only for another host name, not
// for another port or for http), and an authorizing RoundTripper would add
// its token. Following without them is not done either: the other origin
// is a server the user never named, whose 401 would start an OAuth
// authorization with a server the redirect chose. A server that has moved
// is to be given by its new URL, knowingly.
func CheckRedirect(req *nethttp.Request, via []*nethttp.Request) error {
	if err := checkOrigin(req, via); err != nil {
		return err
	}
	if err := maxRedirects(via); err != nil {
		return err
	}
	if req.Method != via[0].Method {
		return nethttp.ErrUseLastResponse
	}
	return nil
}

// maxRedirects is net/http's default bound: 10 redirects.
func maxRedirects(via []*nethttp.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// checkOrigin fails when req, a redirect, leaves the origin of the first
// request of via.
func checkOrigin(req *nethttp.Request, via []*nethttp.Request) error {
	if len(via) == 0 || sameOrigin(via[0].URL, req.URL) {
		return nil
	}
	from, to := via[0].URL, req.URL
	if from.Scheme == "https" && to.Scheme != "https" {
		return fmt.Errorf("%w: %s redirected from https to %s, %s: nothing is sent there unencrypted; if the server is to be reached that way, give that URL", ErrCrossOriginRedirect, origin(from), to.Scheme, redact.URL(to.String()))
	}
	return fmt.Errorf("%w: %s redirected to %s: the configured headers and credentials stay with the origin (scheme, host and port) they were given for; if the server has moved, give its new URL", ErrCrossOriginRedirect, origin(from), redact.URL(to.String()))
}

// sameOrigin reports whether a and b have the same scheme, host and port
// (a default port made explicit).
func sameOrigin(a, b *url.URL) bool {
	return origin(a) == origin(b)
}

// origin returns u's scheme://host:port, lower case, with the scheme's
// default port made explicit.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// CarriesHeaders implements transport.HeaderCarrier: it reports true.
func (t *Transport) CarriesHeaders() bool { return true }

// SetInbound implements transport.Inbound: onRequest receives every server
// request that arrives on any stream (the standalone GET stream and the
// response streams of requests), instead of Config.OnServerRequest;
// onNotification receives the
// notifications not routed to a request or a subscription.
func (t *Transport) SetInbound(onRequest transport.DispatchFunc, onNotification transport.NotificationFunc) {
	t.core.SetInbound(onRequest, onNotification)
}

// Close stops the transport: requests in flight and later ones fail with a
// -32000 connection error wrapping ErrClosed, the standalone GET stream
// and every response stream are closed, subscriptions end with that error,
// and Close waits for the transport's goroutines — so it must not be called
// from a NotificationFunc or DispatchFunc, which run in them. It does not
// delete the session: snodo.Client.Close does that first (DeleteSession).
func (t *Transport) Close() error {
	t.stop(transport.ConnectionError("transport closed", ErrClosed))
	return nil
}

func (t *Transport) stop(err *jsonrpc.Error) {
	t.halt(err, func() {
		t.wg.Wait()
		t.closeIdle()
	})
}
