package snodo

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/internal/clienthook"
	"github.com/snodo/snodo/transport"
)

// DefaultTimeout is the timeout of a call without WithTimeout, unless
// WithDefaultTimeout says otherwise.
const DefaultTimeout = 60 * time.Second

// Defaults of the other options, given in their docs.
const (
	defaultProbeTimeout = 5 * time.Second
	defaultMaxRounds    = 10
)

// Elicitation modes, for WithElicitationModes.
const (
	ElicitForm = "form"
	ElicitURL  = "url"
)

// Option configures Connect.
type Option func(*config)

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
	logger            *slog.Logger

	samplingTools    bool
	urlElicit        Handler
	onElicitComplete func(elicitationID string)
	cache            cacheConfig
	interceptors     []intercept.Interceptor // WithInterceptor
}

func newConfig(opts []Option) *config {
	c := &config{
		probeTimeout: defaultProbeTimeout,
		timeout:      DefaultTimeout,
		clientInfo:   Implementation{Name: "snodo", Version: Version},
		handlers:     map[string]Handler{},
		elicitModes:  []string{ElicitForm},
		maxRounds:    defaultMaxRounds,
		cache:        defaultCacheConfig,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// WithEra forces the protocol era instead of probing for it. EraModern
// never falls back to initialize; EraLegacy never sends server/discover.
func WithEra(era Era) Option { return func(c *config) { c.era = era } }

// WithProtocolVersion forces one protocol version, and with it its era: a
// modern version is requested in every request's _meta; a legacy one is
// offered in initialize, and the server must accept it.
func WithProtocolVersion(version string) Option {
	return func(c *config) { c.version = version }
}

// WithProbeTimeout sets how long the server/discover probe waits before
// the server is taken to be legacy (default 5 s).
func WithProbeTimeout(d time.Duration) Option { return func(c *config) { c.probeTimeout = d } }

// WithDefaultTimeout sets the timeout of calls without WithTimeout
// (default 60 s).
func WithDefaultTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithClientInfo sets the name and version the client reports.
func WithClientInfo(info Implementation) Option { return func(c *config) { c.clientInfo = info } }

// WithHandler answers the server's method (abi.MethodElicitationCreate,
// abi.MethodSamplingCreate, abi.MethodRootsList) with h, in both eras: as a
// server-to-client request (legacy) and as an input request of an
// input_required result (2026-07-28). The client advertises the
// corresponding capability only when it has a handler for it. The client
// answers ping itself.
func WithHandler(method string, h Handler) Option {
	return func(c *config) {
		if h == nil {
			delete(c.handlers, method)
			return
		}
		c.handlers[method] = h
	}
}

// WithElicitationModes says which elicitation modes the elicitation
// handler answers (ElicitForm, ElicitURL); the default is form only. The
// client advertises exactly these modes (and url when WithURLElicitation
// gives a handler of its own) and refuses requests in others.
func WithElicitationModes(modes ...string) Option {
	return func(c *config) { c.elicitModes = append([]string(nil), modes...) }
}

// WithMaxServerRequests bounds how many handlers run at once, for
// server-to-client requests and input requests together (default 16). A
// server-to-client request over the limit is answered -32603 at once; the
// input requests of an input_required result wait for a free slot.
func WithMaxServerRequests(n int) Option { return func(c *config) { c.maxServerRequests = n } }

// WithMaxRounds bounds the input rounds of one multi round-trip request
// (default 10). A server that asks again after that many rounds fails the
// call with an error wrapping ErrTooManyRounds.
func WithMaxRounds(n int) Option { return func(c *config) { c.maxRounds = n } }

// WithLogHook receives the server's log messages (notifications/message)
// in both eras. It runs in the transport's reader: it must not block.
func WithLogHook(f func(LogMessage)) Option { return func(c *config) { c.onLog = f } }

// WithNotificationHook receives the server's other notifications that no
// request or subscription claims, such as notifications/tools/list_changed
// on a legacy connection. It runs in the transport's reader: it must not
// block.
func WithNotificationHook(f func(method string, params json.RawMessage)) Option {
	return func(c *config) { c.onNotification = f }
}

func init() {
	// The consumers of package runner attach through internal/clienthook.
	clienthook.ProgressConsumer = func(f func(ctx context.Context, params json.RawMessage) error) any {
		return Option(func(c *config) { c.onProgress = f })
	}
	clienthook.EventConsumer = func(f func(ctx context.Context, method string, params json.RawMessage) (stop bool, err error)) any {
		return Option(func(c *config) { c.onEvent = f })
	}
}

// WithWarningHook receives the client's warnings, such as a tool left out
// of a tools/list result over HTTP because its x-mcp-header annotations
// are invalid: a message and slog-style key-value pairs, with the server's
// text escaped. Without it, warnings go to log/slog's default logger.
func WithWarningHook(f func(msg string, args ...any)) Option {
	return func(c *config) { c.onWarning = f }
}

// WithLogger receives the client's notes on what it does on its own, at
// debug level, such as starting a new HTTP session after the server ended
// the last one. nil (the default) discards them.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
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
// that is not one of the LogLevel constants fails the call (-32602).
func WithLogLevel(level LogLevel) CallOption { return func(c *callConfig) { c.logLevel = level } }

// WithBuffer sets a subscription's buffer size and what happens when it
// overflows (Listen only).
func WithBuffer(max int, overflow transport.OverflowPolicy) CallOption {
	return func(c *callConfig) { c.maxBuffer, c.overflow = max, overflow }
}
