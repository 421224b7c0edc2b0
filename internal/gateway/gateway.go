// Package gateway holds what the parts of `snodo-run gateway` agree on:
// the fronts that speak MCP to hosts (package front: Streamable HTTP in
// both eras, and stdio for one local host), the hub that aggregates the
// backend servers behind one name space (package hub), host identities
// and policy (package policy) and telemetry (package telemetry).
//
// A front authenticates a host (Policy.Authenticate), decodes its
// JSON-RPC messages, answers what belongs to the connection itself
// (initialize, notifications/initialized, server/discover, ping, the
// responses to server-to-client requests) and hands every other request
// to the Hub as a Request. The Hub routes it to the backend server it
// names, under the identity's policy, and returns the result or a
// *jsonrpc.Error for the host.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// Request is one host request a front hands the Hub.
type Request struct {
	// Method is the JSON-RPC method.
	Method string

	// Params are the host's params as it sent them, _meta included. The
	// hub takes from _meta what is between the host and the gateway (the
	// 2026-07-28 reserved keys, the progress token) and passes the rest.
	Params json.RawMessage

	// ID is the host's JSON-RPC request ID, as sent (for the audit log and
	// the subscription ID of a 2026-07-28 listen).
	ID json.RawMessage

	// Modern reports a 2026-07-28 request (its _meta carries
	// io.modelcontextprotocol/protocolVersion); false for a request in a
	// legacy session.
	Modern bool

	// ProtocolVersion is the request's protocol version: the 2026-07-28
	// _meta value, or the version the legacy session negotiated.
	ProtocolVersion string

	// ClientCapabilities are the capabilities the host declared (the
	// legacy session's initialize, or the request's
	// io.modelcontextprotocol/clientCapabilities); nil when none.
	ClientCapabilities json.RawMessage

	// ClientInfo is the host's clientInfo, as it sent it; nil when none.
	ClientInfo json.RawMessage

	// Identity is the authenticated host; nil when the gateway has no
	// identities configured (every host is anonymous and allowed).
	Identity *Identity

	// Session names the legacy session the request came in (its
	// Mcp-Session-Id), or is empty.
	Session string

	// Notify sends the host a notification related to this request
	// (notifications/progress, notifications/message): over Streamable
	// HTTP on the request's SSE stream. Never nil.
	Notify func(method string, params json.RawMessage) error

	// Ask sends the host a server-to-client request related to this
	// request and waits for its answer: a legacy host that declared the
	// capability. nil when the host cannot be asked (a 2026-07-28 host,
	// to which the hub answers with an input_required result instead).
	Ask func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// Info is what a front tells hosts of the gateway in the initialize result
// and the server/discover result.
type Info struct {
	// ServerInfo is the gateway's Implementation (name, version, title).
	ServerInfo json.RawMessage
	// Capabilities are the server capabilities of the merged name space
	// (tools, prompts, resources with subscribe and listChanged,
	// completions, logging, extensions).
	Capabilities json.RawMessage
	// Instructions are the gateway's instructions for hosts, or empty.
	Instructions string
}

// Hub serves host requests from the backend servers. Its methods are safe
// for concurrent use.
type Hub interface {
	// Info returns what hosts are told of the gateway.
	Info() Info

	// Handle serves a host request: tools/list, tools/call, prompts/list,
	// prompts/get, resources/list, resources/templates/list,
	// resources/read, resources/subscribe, resources/unsubscribe,
	// completion/complete, logging/setLevel. Its result is the host's
	// response (for a 2026-07-28 request it may be an input_required
	// result, which the host answers by retrying the request on any
	// replica); an error is a *jsonrpc.Error for the host, or any other
	// error, answered -32603.
	Handle(ctx context.Context, r *Request) (json.RawMessage, error)

	// Listen serves a 2026-07-28 subscriptions/listen until the
	// subscription ends or ctx ends (the host went away or cancelled):
	// emit writes one notification on the request's stream
	// (notifications/subscriptions/acknowledged first, then each event,
	// with the host's request ID as the subscription ID). It returns the
	// terminal result, or the error to answer; nothing is answered once
	// ctx has ended.
	Listen(ctx context.Context, r *Request, emit func(method string, params json.RawMessage) error) (json.RawMessage, error)

	// Watch calls emit with each notification a legacy session receives
	// outside any request (notifications/tools/list_changed and the
	// other list changes, notifications/resources/updated of a URI the
	// session subscribed to), until ctx ends. session is the session's
	// Mcp-Session-Id (resources/subscribe is per session).
	Watch(ctx context.Context, session string, id *Identity, emit func(method string, params json.RawMessage) error)

	// EndSession forgets what the hub holds for a legacy session (its
	// resource subscriptions), when the session is deleted or expires.
	EndSession(session string)

	// Ready reports nil when the gateway can serve: every backend that is
	// not disabled has been connected at least once and none has failed
	// for good. Otherwise the error names the backends that are not.
	Ready() error
}

// Identity is an authenticated host.
type Identity struct {
	// Name is the identity's name in the config file (or a JWT's subject).
	Name string
}

// ErrUnauthorized is the error of Policy.Authenticate for a request with
// no credentials or wrong ones; the front answers 401 with a
// WWW-Authenticate: Bearer header and touches no backend.
var ErrUnauthorized = errors.New("unauthorized")

// Policy decides who may do what. A nil Policy allows every host
// everything, anonymously.
type Policy interface {
	// Authenticate returns the identity of an HTTP request (its
	// Authorization: Bearer token). An error that wraps ErrUnauthorized
	// is answered 401; any other error 403. Over stdio the front calls it
	// with nil (the one local host), and the policy returns its local
	// identity or nil.
	Authenticate(r *http.Request) (*Identity, error)

	// AllowServer reports whether id may see and use a backend server.
	AllowServer(id *Identity, server string) bool

	// AllowTool reports whether id may see and call a backend server's
	// tool (its name on that server).
	AllowTool(id *Identity, server, tool string) bool

	// Admit waits for, or refuses, one request of id to server under the
	// rate limits and concurrency caps of both; release must be called
	// once the request is done. A refusal is a *jsonrpc.Error the host
	// gets as is (code -32029, naming the limit and when to retry).
	Admit(ctx context.Context, id *Identity, server string) (release func(), err error)
}

// CodeRateLimited is the JSON-RPC error code of a request refused by a rate
// limit or a concurrency cap. It lies in the implementation-defined server
// error range.
const CodeRateLimited = -32029

// AuditRecord is one line of the gateway's audit log (JSON).
type AuditRecord struct {
	Time       time.Time `json:"time"`
	Identity   string    `json:"identity,omitempty"`
	Session    string    `json:"session,omitempty"`
	Direction  string    `json:"direction"` // host (a host request), server (a server request), interceptor, policy
	Server     string    `json:"server,omitempty"`
	Method     string    `json:"method"`
	Tool       string    `json:"tool,omitempty"`
	Module     string    `json:"module,omitempty"`
	Decision   string    `json:"decision"` // allow, deny, rate-limited, rewrite, replace, fail
	Reason     string    `json:"reason,omitempty"`
	DurationMS float64   `json:"durationMs"`
	ErrorCode  int64     `json:"errorCode,omitempty"`
}

// Auditor receives audit records; it must be safe for concurrent use.
type Auditor interface {
	Audit(AuditRecord)
}

// Telemetry traces and measures requests. A nil Telemetry records nothing.
type Telemetry interface {
	// ServerSpan starts the span of a host request as MCP's semantic
	// conventions name it ("{mcp.method.name} {target}", kind server),
	// its parent the trace context the host sent (the request's _meta
	// traceparent/tracestate, else the HTTP headers h, which may be
	// nil). end records mcp.server.operation.duration with err's
	// error.type.
	ServerSpan(ctx context.Context, method, target string, meta map[string]json.RawMessage, h http.Header) (_ context.Context, end func(err error))

	// ClientSpan starts the span of a request the gateway sends a backend
	// server (kind client); its context carries the span, so that the
	// Snodo client puts the trace context in the request's _meta (and
	// the HTTP transport in traceparent headers). end records
	// mcp.client.operation.duration.
	ClientSpan(ctx context.Context, method, target, server string) (_ context.Context, end func(err error))

	// Handler serves the Prometheus /metrics endpoint.
	Handler() http.Handler
}

// The merged name space. A backend server's name matches ServerNamePattern:
// lower-case letters, digits and '-', so it holds neither "_" nor "+".
//
//   - A tool or prompt is named "{server}__{name}": the first "__" of a
//     merged name ends the server's name, and the rest is the name on that
//     server, whatever it holds.
//   - A resource URI or URI template is "{server}+{uri}": the first "+"
//     ends the server's name. "fs+file:///tmp/a" is file:///tmp/a on fs;
//     it stays a valid URI (a scheme may hold '+'), and a template's
//     expressions are untouched.
const (
	NameSeparator     = "__"
	URISeparator      = "+"
	ServerNamePattern = `^[a-z0-9][a-z0-9-]{0,62}$`
)
