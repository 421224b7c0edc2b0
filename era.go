package snodo

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// Reserved _meta keys of the 2026-07-28 revision.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	metaProgressToken      = "progressToken"
)

// dialect is a protocol era as a value: everything that differs between
// the legacy era (the initialize handshake, 2024-11-05 … 2025-11-25) and
// the 2026-07-28 era lives behind it, and the client's methods read
// straight through it. The client picks one at Connect and keeps it for
// the connection; transports receive it with each request, as a
// transport.PolicySource (HTTP derives headers from it). Users see its era and
// version through Client.Server (Handshake.Era, Handshake.ProtocolVersion).
//
// The modern dialect puts the protocol version, client info and client
// capabilities (and a log level when asked) in every request's _meta, and
// reads results by their resultType; the legacy dialect adds nothing per
// request, since the initialize handshake carried it all.
type dialect interface {
	transport.PolicySource
	// Era is EraLegacy or EraModern.
	Era() Era
	// ProtocolVersion is the version the dialect speaks.
	ProtocolVersion() string

	// Building requests.

	// metaMembers appends the dialect's _meta members for one request;
	// metaSize is about how many bytes they take, 0 when it appends none.
	metaMembers(dst []byte, logLevel LogLevel) []byte
	metaSize() int
	// reservedMeta are the _meta keys the dialect writes itself, which a
	// caller's _meta may not set.
	reservedMeta() []string
	// lacks reports whether the era has no method of that name.
	lacks(method string) bool
	// applyLogLevel makes a call of method get the server's log messages
	// at level, before its first request; the modern era needs nothing
	// (metaMembers carries the level).
	applyLogLevel(ctx context.Context, c *Client, method string, level LogLevel) error

	// Headers, over a transport that carries them.

	// sessionHeaders are the headers of the session the server issued
	// with id ("" for none).
	sessionHeaders(id string) []transport.Header
	// mirrorsToolParams reports whether tools/call mirrors the arguments
	// a tool annotates with x-mcp-header into Mcp-Param-{Name} headers.
	mirrorsToolParams() bool
	// extension routes method beside the dialect's own headers, or is nil.
	extension(method string) transport.PolicySource

	// Results.

	// inputRounds reports whether results carry a resultType, with which
	// the server may ask for input (input_required) before it answers.
	inputRounds() bool
	// cache is the client's result cache where results carry caching
	// hints, and nil where they do not.
	cache(c *Client) *resultCache
	// tasks is how the era runs tasks.
	tasks() taskProtocol
	// listen opens a subscription (Listen).
	listen(ctx context.Context, c *Client, filter SubscriptionFilter, cc *callConfig) (SubscriptionFilter, *Subscription, error)
	// elicitationIDs reports whether URL-mode elicitations carry an
	// elicitationId, completed by notifications/elicitation/complete.
	elicitationIDs() bool
}

type legacyDialect struct{ version string }

func (d legacyDialect) Era() Era                { return EraLegacy }
func (d legacyDialect) ProtocolVersion() string { return d.version }

// TransportPolicy implements transport.PolicySource: after initialize, HTTP
// carries the negotiated version in MCP-Protocol-Version.
func (d legacyDialect) TransportPolicy(req *jsonrpc.Request) transport.Policy {
	if req.Method == "initialize" {
		return transport.Policy{}
	}
	return transport.Policy{Headers: []transport.Header{{Name: transport.HeaderProtocolVersion, Value: d.version}}}
}

func (d legacyDialect) metaMembers(dst []byte, _ LogLevel) []byte { return dst }
func (d legacyDialect) metaSize() int                             { return 0 }
func (d legacyDialect) reservedMeta() []string                    { return nil }

// legacyOnly are the methods the 2026-07-28 era removed; modernOnly those
// it added.
var (
	legacyOnly = []string{"ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "tasks/list"}
	modernOnly = []string{"server/discover"}
)

func (d legacyDialect) lacks(method string) bool { return slices.Contains(modernOnly, method) }

// applyLogLevel sends logging/setLevel when level is not the last one sent:
// the legacy era has no per-request level.
func (d legacyDialect) applyLogLevel(ctx context.Context, c *Client, method string, level LogLevel) error {
	if method == "logging/setLevel" || method == "initialize" {
		return nil
	}
	return c.useLogLevel(ctx, level, false)
}

// sessionHeaders is the Mcp-Session-Id of an initialize-era session.
func (d legacyDialect) sessionHeaders(id string) []transport.Header {
	if id == "" {
		return nil
	}
	return []transport.Header{{Name: transport.HeaderSessionID, Value: id}}
}

func (d legacyDialect) mirrorsToolParams() bool                 { return false }
func (d legacyDialect) extension(string) transport.PolicySource { return nil }
func (d legacyDialect) inputRounds() bool                       { return false }
func (d legacyDialect) cache(*Client) *resultCache              { return nil }
func (d legacyDialect) tasks() taskProtocol                     { return legacyTasks{} }
func (d legacyDialect) elicitationIDs() bool                    { return true }

// listen emulates a subscription with the server's notifications.
func (d legacyDialect) listen(ctx context.Context, c *Client, filter SubscriptionFilter, cc *callConfig) (SubscriptionFilter, *Subscription, error) {
	return c.listenLegacy(ctx, filter, cc)
}

type modernDialect struct {
	version string
	// fixed is the _meta members every request carries: version, client
	// info and capabilities, encoded once.
	fixed []byte
}

func newModernDialect(version string, info Implementation, caps json.RawMessage) modernDialect {
	b := appendMember(nil, metaProtocolVersion, mustMarshal(version))
	b = append(b, ',')
	b = appendMember(b, metaClientInfo, mustMarshal(info))
	b = append(b, ',')
	b = appendMember(b, metaClientCapabilities, caps)
	return modernDialect{version: version, fixed: b}
}

func (d modernDialect) Era() Era                { return EraModern }
func (d modernDialect) ProtocolVersion() string { return d.version }

// TransportPolicy implements transport.PolicySource: HTTP carries the request's
// version in MCP-Protocol-Version, its method in Mcp-Method, and for
// tools/call, prompts/get and resources/read the name or URI in Mcp-Name
// (Base64-encoded when it is not a plain header value); the tasks
// extension adds its own (tasksExtension). Only a transport with headers
// calls it, so stdio never parses params for it.
//
// See the specification's basic/transports/streamable-http.mdx "Standard
// Request Headers".
func (d modernDialect) TransportPolicy(req *jsonrpc.Request) transport.Policy {
	hs := make([]transport.Header, 2, 3)
	hs[0] = transport.Header{Name: transport.HeaderProtocolVersion, Value: d.version}
	hs[1] = transport.Header{Name: transport.HeaderMethod, Value: transport.EncodeHeaderValue(req.Method)}
	switch req.Method {
	case "tools/call", "prompts/get", "resources/read":
		var p struct {
			Name *string `json:"name"`
			URI  *string `json:"uri"`
		}
		if unmarshal(req.Params, &p) == nil {
			name := p.Name
			if req.Method == "resources/read" {
				name = p.URI
			}
			if name != nil {
				hs = append(hs, transport.Header{Name: transport.HeaderName, Value: transport.EncodeHeaderValue(*name)})
			}
		}
	}
	return transport.Policy{Headers: hs}
}

func (d modernDialect) metaSize() int { return len(d.fixed) + 48 }

func (d modernDialect) metaMembers(dst []byte, logLevel LogLevel) []byte {
	dst = append(dst, d.fixed...)
	if logLevel != "" {
		dst = append(dst, ',')
		dst = appendMember(dst, metaLogLevel, mustMarshal(string(logLevel)))
	}
	return dst
}

func (d modernDialect) reservedMeta() []string {
	return []string{metaProtocolVersion, metaClientInfo, metaClientCapabilities}
}

func (d modernDialect) lacks(method string) bool { return slices.Contains(legacyOnly, method) }

func (d modernDialect) applyLogLevel(context.Context, *Client, string, LogLevel) error { return nil }

func (d modernDialect) sessionHeaders(string) []transport.Header { return nil }
func (d modernDialect) mirrorsToolParams() bool                  { return true }

// extension is the tasks extension's routing of the tasks/ methods.
func (d modernDialect) extension(method string) transport.PolicySource {
	if !strings.HasPrefix(method, "tasks/") {
		return nil
	}
	return tasksExtension{}
}

func (d modernDialect) inputRounds() bool            { return true }
func (d modernDialect) cache(c *Client) *resultCache { return c.cache }
func (d modernDialect) tasks() taskProtocol          { return modernTasks{} }
func (d modernDialect) elicitationIDs() bool         { return false }

// listen is a subscriptions/listen stream.
func (d modernDialect) listen(ctx context.Context, c *Client, filter SubscriptionFilter, cc *callConfig) (SubscriptionFilter, *Subscription, error) {
	return c.listenStream(ctx, filter, cc)
}

// require returns the error for a method the connection's era lacks.
func (c *Client) require(method string) error {
	if c.dialect.lacks(method) {
		return notInEra(method, c.dialect.Era())
	}
	return nil
}

// paramHeaders reports whether the connection mirrors tool arguments into
// headers: a transport with headers, in the 2026-07-28 era.
func (c *Client) paramHeaders() bool { return c.headers && c.dialect.mirrorsToolParams() }

// messageHeaders returns the headers the client adds to a request of
// method with params on a transport that carries headers: the session ID
// (initialize era) and the Mcp-Param-{Name} headers of a tools/call
// (2026-07-28).
func (c *Client) messageHeaders(method string, params []byte) []transport.Header {
	if !c.headers {
		return nil
	}
	hs := c.sessionHeaders()
	if method == "tools/call" && c.paramHeaders() && !c.toolHeaders.empty() {
		hs = append(hs, c.toolParamHeaders(params)...)
	}
	return hs
}

// sessionHeaders returns the Mcp-Session-Id header of an initialize-era
// session, if the server issued one.
func (c *Client) sessionHeaders() []transport.Header {
	if c.dialect == nil {
		return nil
	}
	return c.dialect.sessionHeaders(c.session.current())
}
