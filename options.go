package snodo

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"time"

	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/internal/clienthook"
	"github.com/snodo/snodo/transport"
)

// Defaults of the Options, given in their docs.
const (
	defaultTimeout      = 60 * time.Second
	defaultProbeTimeout = 5 * time.Second
	defaultMaxRounds    = 10
)

// The elicitation modes, as MCP spells them.
const (
	elicitForm = "form"
	elicitURL  = "url"
)

// Options configure Connect. A nil *Options, and the zero value of any
// field, mean the default given in the field's doc. Connect copies what it
// needs: the caller may change or reuse the struct afterwards.
type Options struct {
	// Era forces the protocol era instead of probing for it. EraModern
	// never falls back to initialize; EraLegacy never sends
	// server/discover. EraAuto (the zero value) probes.
	Era Era

	// ProtocolVersion forces one protocol version, and with it its era: a
	// modern version is requested in every request's _meta; a legacy one
	// is offered in initialize, and the server must accept it. "" lets
	// the client negotiate.
	ProtocolVersion string

	// ProbeTimeout is how long the server/discover probe waits before the
	// server is taken to be legacy (default 5 s).
	ProbeTimeout time.Duration

	// DefaultTimeout is the timeout of calls without WithTimeout (default
	// 60 s).
	DefaultTimeout time.Duration

	// ClientInfo is the name and version the client reports; the zero
	// value means "snodo" and Version.
	ClientInfo Implementation

	// Handlers answer the server's methods (abi.MethodElicitationCreate,
	// abi.MethodSamplingCreate, abi.MethodRootsList), in both eras: as a
	// server-to-client request (legacy) and as an input request of an
	// input_required result (2026-07-28). A nil handler counts as none.
	// The client advertises the corresponding capability only when it has
	// a handler for it. The client answers ping itself.
	Handlers map[string]Handler

	// ElicitationModes says which elicitation modes the elicitation
	// handler answers, as MCP spells them ("form", "url"); nil means form
	// only. The client advertises exactly these modes (and url when
	// URLElicitation gives a handler of its own) and refuses requests in
	// others.
	ElicitationModes []string

	// URLElicitation answers URL-mode elicitation requests, and declares
	// the url elicitation mode (2025-11-25 and later), whatever
	// ElicitationModes says; form-mode requests still go to the
	// Handlers[abi.MethodElicitationCreate] handler. It receives the
	// request as sent (see ParseElicitRequest: mode "url", message, url,
	// and in 2025-11-25 the elicitationId) after the client has checked
	// that url is an absolute URL and, in 2025-11-25, that elicitationId
	// is present; it must not open the URL without the user's consent. Its
	// result is an ElicitResult without content: {"action":"accept"} once
	// the user consented to open the URL (which says nothing of the
	// outcome), "decline" or "cancel". In 2026-07-28 the client then
	// retries the request and the server says whether the interaction is
	// done; in 2025-11-25 the server may send
	// notifications/elicitation/complete (see OnElicitationComplete).
	URLElicitation Handler

	// SamplingTools declares that the sampling handler supports tool use:
	// the client advertises sampling.tools (2025-11-25 and later). Without
	// it, a sampling/createMessage request with tools is refused (-32602
	// to a legacy server request; an input request fails its call) and the
	// handler does not run.
	SamplingTools bool

	// MaxServerRequests bounds how many handlers run at once, for
	// server-to-client requests and input requests together (default 16).
	// A server-to-client request over the limit is answered -32603 at
	// once; the input requests of an input_required result wait for a
	// free slot.
	MaxServerRequests int

	// MaxRounds bounds the input rounds of one multi round-trip request
	// (default 10). A server that asks again after that many rounds fails
	// the call with an error wrapping ErrTooManyRounds.
	MaxRounds int

	// NoResultCache turns the result cache off (it is on by default). See
	// WithoutCache for one call.
	NoResultCache bool

	// ResultCacheMaxEntries and ResultCacheMaxBytes bound the result
	// cache: at most that many results and bytes of them (defaults 512
	// and 8 MiB).
	ResultCacheMaxEntries int
	ResultCacheMaxBytes   int64

	// OnLog receives the server's log messages (notifications/message) in
	// both eras. It runs in the transport's reader: it must not block.
	OnLog func(LogMessage)

	// OnNotification receives the server's other notifications that no
	// request or subscription claims, such as
	// notifications/tools/list_changed on a legacy connection. It runs in
	// the transport's reader: it must not block.
	OnNotification func(method string, params json.RawMessage)

	// OnElicitationComplete receives the elicitationId of each
	// notifications/elicitation/complete (2025-11-25) that completes a
	// URL-mode elicitation the client was asked on this connection; a
	// notification naming an unknown or already completed elicitation is
	// ignored, as the specification requires. It runs in the transport's
	// reader: it must not block. The 2026-07-28 revision has neither the
	// notification nor elicitationId: there a client learns the outcome by
	// retrying the request, which the client does by itself.
	OnElicitationComplete func(elicitationID string)

	// OnWarning receives the client's warnings, such as a tool left out of
	// a tools/list result over HTTP because its x-mcp-header annotations
	// are invalid: a message and slog-style key-value pairs, with the
	// server's text escaped. nil sends them to log/slog's default logger.
	OnWarning func(msg string, args ...any)

	// Keepalive makes the client check, every Keepalive while the
	// connection is open, that the server still answers: it sends ping
	// (legacy era) or server/discover (2026-07-28, which has no ping) and
	// waits at most Keepalive for the answer, one ping at a time. Any
	// answer, even an error response, keeps the connection. A ping that
	// gets no answer within Keepalive, or that the transport fails, ends
	// the connection: the handlers of server requests are cancelled,
	// subscriptions end, the transport is closed, and every call in flight
	// and every later call fails with a -32000 connection error wrapping
	// ErrKeepalive, whose message says why the ping failed. Pings stop at
	// Close. Zero (the default) sends no pings: a dead server is then found
	// only by a call's timeout. A server that cannot answer a ping while it
	// handles a call (one that reads its stdin only between requests)
	// needs Keepalive longer than its longest call.
	Keepalive time.Duration

	// Extensions declares client extensions, by identifier, with their
	// settings (a JSON object; nil is {}), in both eras: in
	// capabilities.extensions of initialize, and in the client capabilities
	// of every 2026-07-28 request. For MCP Apps:
	//
	//	Extensions: map[string]json.RawMessage{
	//		snodo.UIExtensionID: json.RawMessage(`{"mimeTypes":["` + snodo.UIMIMEType + `"]}`),
	//	}
	//
	// The tasks extension cannot be declared this way: the client declares
	// it itself on the calls that take a task. A name that is empty, too
	// long or holds spaces or control characters, or settings that are not
	// a JSON object, make Connect fail with an error saying which.
	Extensions map[string]json.RawMessage

	// Interceptors see every request the client sends the server, in
	// both eras — the typed calls, Request, each round of a multi
	// round-trip request, task polling — and the server's answer to it
	// (package intercept). Requests go through them in the order given,
	// each seeing the previous one's rewrite; results go through them in
	// the reverse order. Each call of an interceptor runs under its own
	// deadline (its Timeout, such as a Wasm module's, or
	// intercept.DefaultTimeout).
	//
	// A request an interceptor denies is not sent: the call fails with an
	// *Error of code intercept.CodeDenied (-32030), which errors.Is
	// matches with intercept.ErrDenied. An answer an interceptor denies is
	// withheld the same way. An interceptor that fails — returns an error,
	// overruns its deadline, answers an invalid decision — fails the call
	// (-32603, matching intercept.ErrFailed): nothing is sent, or the
	// answer is withheld. With interceptors, params and results whose
	// objects have keys a decoder could take for one another are refused
	// (intercept.CheckUnambiguous).
	//
	// The connection's handshake (initialize, and server/discover while
	// connecting) is not intercepted; nor are notifications. The
	// 2026-07-28 result cache serves no result of an intercepted method:
	// every call of it passes the interceptors. nil entries are ignored.
	Interceptors []intercept.Interceptor

	// Logger receives the client's notes on what it does on its own, at
	// debug level, such as starting a new HTTP session after the server
	// ended the last one. nil discards them.
	Logger *slog.Logger

	// The consumers of package runtime, set through internal/clienthook.
	onProgress func(ctx context.Context, params json.RawMessage) error
	onEvent    func(ctx context.Context, method string, params json.RawMessage) (stop bool, err error)
	// onDeprecated is told of each use of a feature 2026-07-28 deprecates
	// (clienthook.SetDeprecatedUse).
	onDeprecated func(feature, method string)
	// keepaliveTimeout is the wait for a ping's answer, 0: Keepalive
	// (tests set it apart).
	keepaliveTimeout time.Duration
}

type config struct {
	era               Era
	version           string // forced version, or ""
	probeTimeout      time.Duration
	timeout           time.Duration
	clientInfo        Implementation
	handlers          map[string]Handler
	elicitModes       []string
	maxServerRequests int
	maxRounds         int
	onLog             func(LogMessage)
	onNotification    func(method string, params json.RawMessage)
	onProgress        func(ctx context.Context, params json.RawMessage) error
	onEvent           func(ctx context.Context, method string, params json.RawMessage) (stop bool, err error)
	onWarning         func(msg string, args ...any)
	onDeprecated      func(feature, method string) // clienthook.SetDeprecatedUse
	logger            *slog.Logger

	samplingTools    bool
	urlElicit        Handler
	onElicitComplete func(elicitationID string)
	cache            cacheConfig

	keepalive        time.Duration              // Options.Keepalive; 0: no pings
	keepaliveTimeout time.Duration              // wait for a ping's answer; 0: keepalive
	extensions       map[string]json.RawMessage // Options.Extensions, checked and compacted
	err              error                      // the first invalid option
	interceptors     []intercept.Interceptor    // Options.Interceptors, nil ones left out
}

// newConfig copies o (nil: every default) into the client's own config:
// nothing of o, its map or its slice, is kept.
func newConfig(o *Options) *config {
	if o == nil {
		o = &Options{}
	}
	c := &config{
		era:               o.Era,
		version:           o.ProtocolVersion,
		probeTimeout:      o.ProbeTimeout,
		timeout:           o.DefaultTimeout,
		clientInfo:        o.ClientInfo,
		handlers:          map[string]Handler{},
		elicitModes:       []string{elicitForm},
		maxServerRequests: o.MaxServerRequests, // <= 0: admit.DefaultLimit
		maxRounds:         o.MaxRounds,
		onLog:             o.OnLog,
		onNotification:    o.OnNotification,
		onProgress:        o.onProgress,
		onEvent:           o.onEvent,
		onWarning:         o.OnWarning,
		onDeprecated:      o.onDeprecated,
		keepalive:         o.Keepalive,
		keepaliveTimeout:  o.keepaliveTimeout,
		logger:            o.Logger,
		samplingTools:     o.SamplingTools,
		urlElicit:         o.URLElicitation,
		onElicitComplete:  o.OnElicitationComplete,
		cache:             defaultCacheConfig,
	}
	if c.probeTimeout <= 0 {
		c.probeTimeout = defaultProbeTimeout
	}
	if c.timeout <= 0 {
		c.timeout = defaultTimeout
	}
	if c.clientInfo == (Implementation{}) {
		c.clientInfo = Implementation{Name: "snodo", Version: Version}
	}
	for method, h := range o.Handlers {
		if h != nil {
			c.handlers[method] = h
		}
	}
	if o.ElicitationModes != nil {
		c.elicitModes = slices.Clone(o.ElicitationModes)
	}
	if c.maxRounds <= 0 {
		c.maxRounds = defaultMaxRounds
	}
	c.cache.off = o.NoResultCache
	if o.ResultCacheMaxEntries > 0 {
		c.cache.maxEntries = o.ResultCacheMaxEntries
	}
	if o.ResultCacheMaxBytes > 0 {
		c.cache.maxBytes = o.ResultCacheMaxBytes
	}
	c.extensions, c.err = checkExtensions(o.Extensions)
	for _, i := range o.Interceptors {
		if i != nil {
			c.interceptors = append(c.interceptors, i)
		}
	}
	return c
}

func init() {
	// The consumers of package runtime attach through internal/clienthook.
	clienthook.SetProgressConsumer = func(opts any, f func(ctx context.Context, params json.RawMessage) error) {
		opts.(*Options).onProgress = f
	}
	clienthook.SetEventConsumer = func(opts any, f func(ctx context.Context, method string, params json.RawMessage) (stop bool, err error)) {
		opts.(*Options).onEvent = f
	}
	clienthook.SetDeprecatedUse = func(opts any, f func(feature, method string)) {
		opts.(*Options).onDeprecated = f
	}
	clienthook.OneRound = func() any {
		return CallOption(func(c *callConfig) { c.oneRound = true })
	}
}

// CallOption configures one call.
type CallOption func(*callConfig)

type callConfig struct {
	timeout        time.Duration
	onProgress     func(Progress)
	resetOnProgess bool
	maxTotal       time.Duration
	logLevel       LogLevel
	maxBuffer      int
	overflow       transport.OverflowPolicy
	tasks          *taskCallConfig // tasks.go

	// onResponseHeaders receives the response headers (initialize reads
	// the session ID); transports without headers never call it.
	onResponseHeaders func([]transport.Header)

	trace     *TraceContext // WithTraceContext, or nil
	traceMeta []byte        // the trace members of _meta, or nil
	noCache   bool          // WithoutCache
	rounds    int           // input rounds the call took, set by call

	// handshake marks the connection's handshake, which the interceptors
	// do not see; answer is the server's error answer, set by send.
	handshake bool
	answer    *Error

	// oneRound sends one round and returns an input_required result as
	// it is (clienthook.OneRound); inputRequired is set by send when it
	// did so.
	oneRound      bool
	inputRequired bool
}

// WithTimeout sets how long the call waits for each response (default: the
// client's default timeout, 60 s). When it passes, the call fails with a
// -32001 error and the server is told the request is cancelled. In the
// 2026-07-28 era it bounds each round trip of a multi round-trip call, and
// each round's input handlers: handlers still running when it passes are
// cancelled and the call fails with -32001, as a legacy call whose server
// request's handler outlives the call's timeout.
func WithTimeout(d time.Duration) CallOption { return func(c *callConfig) { c.timeout = d } }

// WithProgress asks the server for progress notifications and calls f with
// each, in the goroutine that made the call.
func WithProgress(f func(Progress)) CallOption { return func(c *callConfig) { c.onProgress = f } }

// WithResetTimeoutOnProgress restarts the call's timeout at each progress
// notification, up to the maximum total timeout (WithMaxTotalTimeout).
func WithResetTimeoutOnProgress() CallOption {
	return func(c *callConfig) { c.resetOnProgess = true }
}

// WithMaxTotalTimeout bounds a call whose timeout is reset by progress,
// and the whole of a multi round-trip call: its input handlers are
// cancelled at that deadline and the call fails with an error wrapping
// transport.ErrMaxTotalTimeout (and matching ErrTimeout).
func WithMaxTotalTimeout(d time.Duration) CallOption { return func(c *callConfig) { c.maxTotal = d } }

// WithLogLevel asks the server for log messages at or above level for this
// request: io.modelcontextprotocol/logLevel in _meta in the 2026-07-28 era.
// The legacy era has no per-request level: there the client sends
// logging/setLevel before the call when level differs from the last level
// it sent (never per call when unchanged, and one at a time), which sets the
// level for the whole connection — every later request, from any
// goroutine, gets messages at that level until another level is sent. A
// legacy server without the logging capability is sent nothing. A level
// that is not one of the eight LogLevel values fails the call (-32602).
func WithLogLevel(level LogLevel) CallOption { return func(c *callConfig) { c.logLevel = level } }

// WithBuffer sets a subscription's buffer size and what happens when it
// overflows (Listen only).
func WithBuffer(max int, overflow transport.OverflowPolicy) CallOption {
	return func(c *callConfig) { c.maxBuffer, c.overflow = max, overflow }
}
