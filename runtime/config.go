package runtime

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/handlers/wasm"
	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/internal/admit"
	"github.com/snodo/snodo/transport/stdio"
)

// Defaults of Config.
const (
	// DefaultShutdownGrace is how long a server has to exit after its stdin
	// is closed, before SIGTERM; and again after SIGTERM, before SIGKILL.
	DefaultShutdownGrace = 2 * time.Second
	// DefaultMaxServerRequests is the default of Config.MaxServerRequests.
	DefaultMaxServerRequests = admit.DefaultLimit
	// DefaultStderrTail is how many bytes of the server's stderr are kept
	// for the error that reports a server that exited.
	DefaultStderrTail = 4096
	// DefaultConnectTimeout is the default of Config.ConnectTimeout.
	DefaultConnectTimeout = 30 * time.Second
	// DefaultRootsWait is the default of Config.RootsWait.
	DefaultRootsWait = 2 * time.Second
)

// ModuleConfig, Grants and Mount say which Wasm module to load and what its
// sandbox lets through (see package handlers/wasm).
type (
	ModuleConfig = wasm.ModuleConfig
	Grants       = wasm.Grants
	Mount        = wasm.Mount
)

// Config is everything a running client is made of. It is a plain value:
// the snodo-run command builds one from its flags, environment and config
// file; a Go program builds one directly.
type Config struct {
	// Server is the MCP server to start.
	Server Server

	// Handlers are the Wasm modules that answer what the server asks of
	// the client (elicitation/create, sampling/createMessage, roots/list).
	Handlers []HandlerModule

	// Native are Go handlers by method; they take precedence over Wasm
	// modules for the same method.
	Native map[string]snodo.Handler

	// WrapModule, when set, wraps the handler of each Wasm module of
	// Handlers for a method (module is the module's name), such as to
	// record what the modules answer; it must return a handler that calls
	// h.
	WrapModule func(method, module string, h snodo.Handler) snodo.Handler

	// Progress is a Wasm module that consumes the progress notifications of
	// calls made with progress; nil means none. Its "cancel" answer, or its
	// failure, cancels the call on the server.
	Progress *ModuleConfig

	// Subscriber is a Wasm module that consumes the events of a
	// subscription (Runner.Listen); nil means none. It can end the
	// subscription.
	Subscriber *ModuleConfig

	// Interceptors are Wasm modules (ABI version 2) that check, rewrite or
	// deny every request the client sends the server, and check, replace
	// or deny the answers (snodo.Options.Interceptors): requests go through
	// them in this order, results in the reverse order. A denial fails
	// the call with -32030; a module that fails fails the call (-32603),
	// and nothing is sent or the answer is withheld.
	Interceptors []ModuleConfig

	// OnIntercept, when set, receives each decision of an interceptor
	// other than letting things through — deny, rewrite, replace — and
	// each failure of one, such as for an audit log. It is called in the
	// goroutine of the call.
	OnIntercept func(intercept.Event)

	// MaxServerRequests is the one concurrency limit shared by the requests
	// a legacy server sends and the input requests of a 2026-07-28 server:
	// the most handler calls running at once, and the most instances of
	// each Wasm module (default 16).
	MaxServerRequests int

	// MaxLineBytes is the longest line accepted from the server (default
	// 16 MiB).
	MaxLineBytes int

	// Timeout is the default timeout of each request (default 60 s).
	Timeout time.Duration

	// ConnectTimeout bounds connecting: the server/discover probe and the
	// initialize handshake together (default DefaultConnectTimeout). A
	// server that does not answer in time fails Start with a -32001
	// timeout error that wraps ErrConnectTimeout.
	ConnectTimeout time.Duration

	// Keepalive, when positive, pings the server at that interval once
	// connected and ends the connection when a ping gets no answer within
	// it (snodo.Options.Keepalive): the calls then fail with a -32000 error
	// wrapping snodo.ErrKeepalive. 0: no pings.
	Keepalive time.Duration

	// RootsWait is how long Start waits, in the legacy era with a roots/list
	// handler, for the server's first roots/list request to be answered
	// before it returns (default DefaultRootsWait; negative: no wait). A
	// legacy server typically asks roots/list right after
	// notifications/initialized and applies the roots asynchronously: a
	// request sent at once would be handled before the roots apply.
	RootsWait time.Duration

	// Protocol is "auto" (or ""), "legacy", "modern", or one protocol
	// version such as "2025-06-18".
	Protocol string

	// ClientInfo is the name and version the client reports; the zero value
	// means Snodo's.
	ClientInfo snodo.Implementation

	// ServerStderr receives the server's stderr as it is written; nil
	// discards it. The last DefaultStderrTail bytes are kept either way,
	// for the error that reports a server that exited.
	ServerStderr io.Writer

	// OnLog receives the server's log messages; it must not block.
	OnLog func(snodo.LogMessage)

	// OnNotification receives the server's other notifications (such as
	// list changes on a legacy connection); it must not block.
	OnNotification func(method string, params json.RawMessage)

	// Logger receives the runtime's own structured logs; nil discards them.
	Logger *slog.Logger

	// ShutdownGrace is how long the server has to exit after its stdin is
	// closed before it is sent SIGTERM, and after SIGTERM before SIGKILL
	// (default 2 s each).
	ShutdownGrace time.Duration

	// ClientOptions are the options of snodo.Connect. Those the Runner
	// derives from this Config (MaxServerRequests, DefaultTimeout, Era or
	// ProtocolVersion, ClientInfo, Logger, OnLog, OnNotification, Handlers)
	// fill only the fields ClientOptions leaves unset; a handler in
	// ClientOptions.Handlers takes precedence over Native and Handlers.
	ClientOptions snodo.Options

	// CacheDir is where compiled Wasm modules are cached across runs; ""
	// means the user's cache directory (see wasm.DefaultCacheDir).
	CacheDir string

	// CompileIn, when set, compiles each Wasm module missing from the
	// cache in a child process within its bounds
	// (wasm.HostConfig.CompileIn): this program run again, which must call
	// Init first thing in main.
	CompileIn *wasm.ChildCompile

	// Subreaper (Linux only; Start fails elsewhere) makes this process a
	// child subreaper (prctl PR_SET_CHILD_SUBREAPER), for the rest of its
	// life: a server's descendant whose parent exits, even one that called
	// setsid, is reparented to this process instead of to init, and Close
	// ends it. Close takes as its server's every orphan of this process
	// that carries its server's SNODO_RUNNER_MARK, or no mark of a running
	// server: set it only in a program whose other child processes do not
	// outlive their parents, as snodo-run. Without it, Close still ends the
	// descendants it finds by their parent chain. See SECURITY.md,
	// "Server processes". It does not apply to a remote server (Server.URL).
	Subreaper bool

	// PIDNamespace, when set, runs the server in a PID namespace of its
	// own (Linux only; without Fallback, Start fails elsewhere), under an
	// init whose death, even when this process is SIGKILLed, kills every
	// process the server started. nil, the default, starts the server
	// directly. See PIDNamespace and docs/security-processes.md. It does
	// not apply to a remote server (Server.URL).
	PIDNamespace *PIDNamespace
}

// Server is the MCP server: a child process, run directly (never through a
// shell), as the leader of its own process group; or a remote server
// reached over Streamable HTTP, or HTTP+SSE (URL, Transport).
type Server struct {
	Command string
	Args    []string
	// Env changes the inherited environment, in order.
	Env []EnvVar
	// Dir is the working directory; "" means the current one.
	Dir string

	// URL, when set, is a remote server's MCP endpoint (http or https),
	// reached over Streamable HTTP or HTTP+SSE (package transport/http,
	// see Transport) instead of a
	// process: Command, Args, Env and Dir must then be empty. There is no
	// process to contain or stop: Pid is 0, the stderr tail is empty,
	// ExitState is nil, and ShutdownGrace, Subreaper and PIDNamespace do
	// not apply. Close ends the server's session (HTTP DELETE), if it
	// issued one. See CheckURL for the URLs accepted.
	URL string
	// Header holds the HTTP headers sent with every request to URL, such as
	// Authorization. Names are checked by CheckHeader: those the transport
	// sets itself are refused.
	Header http.Header
	// HTTPClient sends the requests to URL; nil means a client of Snodo's
	// own. An OAuth-capable client is given here.
	HTTPClient *http.Client
	// Transport picks how URL is reached: TransportAuto (""), the default,
	// tries Streamable HTTP and falls back to the HTTP+SSE transport of
	// 2024-11-05 when the server answers the initialize POST with 400,
	// 404 or 405 (basic/transports, "Backwards Compatibility");
	// TransportHTTP is Streamable HTTP only; TransportSSE is HTTP+SSE
	// only (URL is then the SSE endpoint). HTTP+SSE carries the legacy
	// era only: with Config.Protocol modern (or a 2026-07-28 version)
	// there is no fallback, and TransportSSE is refused.
	Transport string
}

// The values of Server.Transport.
const (
	TransportAuto = ""
	TransportHTTP = "http"
	TransportSSE  = "sse"
)

// Remote reports whether the server is reached over HTTP (URL is set).
func (s Server) Remote() bool { return s.URL != "" }

// EnvVar is one change to the server's environment: Name set to Value, or
// removed when Unset. It is the stdio transport's.
type EnvVar = stdio.EnvVar

// HandlerModule is a Wasm module that answers server requests.
type HandlerModule struct {
	ModuleConfig
	// Methods are the methods the module answers for this client; empty
	// means every method the module declares.
	Methods []string
}
