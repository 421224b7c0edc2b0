// Package front serves MCP to hosts for the Snodo gateway: Streamable HTTP
// in both eras (legacy sessions with Mcp-Session-Id, 2026-07-28 stateless
// requests) and stdio for one local host. It authenticates each host with
// the gateway.Policy, refuses bad input before anything reaches the hub,
// answers what belongs to the connection itself (initialize,
// server/discover, ping, the host's answers to server-to-client requests)
// and hands every other request to the gateway.Hub.
package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/internal/gateway/telemetry"
	"github.com/snodo/snodo/internal/proxy"
	"github.com/snodo/snodo/jsonrpc"
)

// The reserved _meta keys of a 2026-07-28 request.
const (
	metaPrefix             = "io.modelcontextprotocol/"
	metaProtocolVersion    = metaPrefix + "protocolVersion"
	metaClientCapabilities = metaPrefix + "clientCapabilities"
	metaClientInfo         = metaPrefix + "clientInfo"
	metaServerInfo         = metaPrefix + "serverInfo"
)

// firstModern is the first protocol version of the stateless era.
const firstModern = "2026-07-28"

// modernVersions and legacyVersions are the versions the gateway speaks,
// newest first: Snodo's.
var modernVersions, legacyVersions = func() (m, l []string) {
	for _, v := range snodo.SupportedVersions() {
		if v >= firstModern {
			m = append(m, v)
		} else {
			l = append(l, v)
		}
	}
	return m, l
}()

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// core is what the HTTP and stdio fronts share: the hub, policy and
// telemetry, and the serving of one decoded host request.
type core struct {
	hub gateway.Hub
	pol gateway.Policy
	tel gateway.Telemetry
	log *slog.Logger
}

// call is one decoded host request.
type call struct {
	req     *jsonrpc.Request
	params  map[string]json.RawMessage // nil when absent
	meta    map[string]json.RawMessage // params._meta, nil when absent
	modern  bool
	version string // the _meta protocol version of a 2026-07-28 request
}

// decodeCall reads a request's params and _meta, and checks the protocol
// version of a 2026-07-28 request.
func decodeCall(req *jsonrpc.Request) (*call, *jsonrpc.Error) {
	c := &call{req: req}
	p := strings.TrimSpace(string(req.Params))
	if p != "" && p != "null" {
		if p[0] != '{' {
			return c, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params must be a JSON object"}
		}
		if err := json.Unmarshal(req.Params, &c.params); err != nil {
			return c, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + err.Error()}
		}
		if m, ok := c.params["_meta"]; ok && string(m) != "null" {
			if err := json.Unmarshal(m, &c.meta); err != nil {
				return c, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params._meta must be a JSON object"}
			}
		}
	}
	raw, modern := c.meta[metaProtocolVersion]
	if !modern {
		return c, nil
	}
	c.modern = true
	if err := json.Unmarshal(raw, &c.version); err != nil || !contains(modernVersions, c.version) {
		return c, unsupportedVersion(c.version, modernVersions)
	}
	return c, nil
}

func unsupportedVersion(requested string, supported []string) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"supported": supported, "requested": requested})
	return &jsonrpc.Error{Code: jsonrpc.CodeUnsupportedProtocolVersion,
		Message: fmt.Sprintf("unsupported protocol version %q (supported: %s)", requested, strings.Join(supported, ", ")), Data: data}
}

// target is what a request names (a tool, prompt or resource), for spans.
func (c *call) target() string {
	for _, k := range []string{"name", "uri"} {
		var s string
		if json.Unmarshal(c.params[k], &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// served reports whether a method is answered by the front or the hub.
var hubMethods = map[string]bool{
	"tools/list": true, "tools/call": true, "prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"completion/complete": true, "logging/setLevel": true,
}

// stream is where the front writes what relates to one host request.
type stream struct {
	notify func(method string, params json.RawMessage) error
	// ask is nil when the host cannot be asked.
	ask func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// header holds the HTTP request's headers, or nil.
	header http.Header
}

// serve answers one host request that is not initialize: ping,
// server/discover and subscriptions/listen of a 2026-07-28 host, and the
// hub's methods. sess is the legacy session (nil for a 2026-07-28
// request). A nil result with a nil error means nothing is to be answered
// (the request was cancelled).
func (co *core) serve(ctx context.Context, c *call, sess *session, id *gateway.Identity, st stream) (res json.RawMessage, err error) {
	switch c.req.Method {
	case "ping":
		return json.RawMessage(`{}`), nil
	case "server/discover":
		return co.discover()
	}
	listen := c.req.Method == "subscriptions/listen" && c.modern
	if !hubMethods[c.req.Method] && !listen {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q is not served by the Snodo gateway", c.req.Method)}
	}
	r := &gateway.Request{
		Method:     c.req.Method,
		Params:     c.req.Params,
		ID:         c.req.ID.AppendJSON(nil),
		Modern:     c.modern,
		Identity:   id,
		Notify:     st.notify,
		Ask:        st.ask,
		ClientInfo: c.meta[metaClientInfo],
	}
	if c.modern {
		r.ProtocolVersion = c.version
		r.ClientCapabilities = c.meta[metaClientCapabilities]
		r.Ask = nil
	} else if sess != nil {
		r.ProtocolVersion, r.ClientCapabilities, r.ClientInfo, r.Session = sess.version, sess.caps, sess.clientInfo, sess.id
	}
	if co.tel != nil {
		var end func(error)
		ctx, end = co.tel.ServerSpan(ctx, c.req.Method, c.target(), c.meta, st.header)
		defer func() { end(err) }()
		transport := telemetry.TransportTCP
		if st.header == nil {
			transport = telemetry.TransportPipe // the stdio front has no headers
		}
		telemetry.SetRequest(ctx, r, transport)
	}
	if listen {
		res, err = co.hub.Listen(ctx, r, st.notify)
	} else {
		res, err = co.hub.Handle(ctx, r)
	}
	if ctx.Err() != nil {
		return nil, nil
	}
	if err == nil && len(res) == 0 {
		res = json.RawMessage(`{}`)
	}
	return res, err
}

// discover answers server/discover.
func (co *core) discover() (json.RawMessage, error) {
	info := co.hub.Info()
	caps := info.Capabilities
	if len(caps) == 0 {
		caps = json.RawMessage(`{}`)
	}
	out := map[string]any{
		"supportedVersions": modernVersions,
		"capabilities":      caps,
		"ttlMs":             0,
		"cacheScope":        "private",
	}
	if info.Instructions != "" {
		out["instructions"] = info.Instructions
	}
	if len(info.ServerInfo) > 0 {
		out["_meta"] = map[string]any{metaServerInfo: info.ServerInfo}
	}
	return json.Marshal(out)
}

// initialize answers a legacy host's initialize: the version it asked for
// when the gateway speaks it, else the newest legacy version.
func (co *core) initialize(c *call) (version string, caps, clientInfo, res json.RawMessage, err error) {
	var in struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      json.RawMessage `json:"clientInfo"`
	}
	if err := json.Unmarshal(c.req.Params, &in); err != nil {
		return "", nil, nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid initialize params: " + err.Error()}
	}
	version = legacyVersions[0]
	if contains(legacyVersions, in.ProtocolVersion) {
		version = in.ProtocolVersion
	}
	info := co.hub.Info()
	serverInfo := info.ServerInfo
	if len(serverInfo) == 0 {
		serverInfo = json.RawMessage(`{"name":"snodo-gateway","version":"` + snodo.Version + `"}`)
	}
	capsOut := info.Capabilities
	if len(capsOut) == 0 {
		capsOut = json.RawMessage(`{}`)
	}
	out := map[string]any{"protocolVersion": version, "capabilities": capsOut, "serverInfo": serverInfo}
	if info.Instructions != "" {
		out["instructions"] = info.Instructions
	}
	res, err = json.Marshal(out)
	return version, in.Capabilities, in.ClientInfo, res, err
}

// toWire is the error object the host gets for err.
var toWire = proxy.ToWire

// decodeError is the error object of a message jsonrpc.Decode refused.
func decodeError(err error) *jsonrpc.Error {
	var de *jsonrpc.Error
	if errors.As(err, &de) {
		return &jsonrpc.Error{Code: de.Code, Message: de.Message}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "invalid JSON"}
}

// declares reports whether a legacy host's capabilities allow the gateway
// to send it method.
var declares = proxy.Declares

// sameIdentity reports whether two identities are the same host.
func sameIdentity(a, b *gateway.Identity) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Name == b.Name
}
