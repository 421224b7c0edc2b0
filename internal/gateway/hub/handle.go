package hub

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/internal/gateway/mrtr"
	"github.com/snodo/snodo/internal/guard"
	"github.com/snodo/snodo/internal/proxy"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/runtime"
)

const (
	metaPrefix        = "io.modelcontextprotocol/"
	metaLogLevel      = metaPrefix + "logLevel"
	metaProgressToken = "progressToken"
	// maxCursor bounds a host's cursor.
	maxCursor = 4096
	// maxInnerCursor bounds a server's cursor, so that the gateway's
	// cursor that holds it stays within maxCursor.
	maxInnerCursor = 2048
)

// lists are the list methods and the member of each item that is renamed.
var lists = map[string]struct{ items, key string }{
	"tools/list":               {"tools", "name"},
	"prompts/list":             {"prompts", "name"},
	"resources/list":           {"resources", "uri"},
	"resources/templates/list": {"resourceTemplates", "uriTemplate"},
}

// Handle serves a host request (see gateway.Hub).
func (h *Hub) Handle(ctx context.Context, r *gateway.Request) (res json.RawMessage, err error) {
	started := time.Now()
	rec := gateway.AuditRecord{Direction: "host", Identity: identityName(r.Identity), Session: r.Session, Method: r.Method, Decision: "allow"}
	defer func() { h.finishAudit(&rec, started, err) }()
	params, opts, err := h.decode(r)
	if err != nil {
		return nil, err
	}
	if l, ok := lists[r.Method]; ok {
		return h.list(ctx, r, params, l.items, l.key, opts)
	}
	switch r.Method {
	case "tools/call", "prompts/get":
		b, name, err := h.route(r, params, "name", gateway.NameSeparator, &rec)
		if err != nil {
			return nil, err
		}
		if r.Method == "tools/call" {
			rec.Tool = name
			if err := guard.CheckName(name); err != nil {
				rec.Decision = "deny"
				return nil, invalidParams("tool %q of server %q refused: %v", name, b.name, err)
			}
			if h.opts.Policy != nil && !h.opts.Policy.AllowTool(r.Identity, b.name, name) {
				rec.Decision = "deny"
				return nil, invalidParams("tool %q is not allowed by the gateway's policy for this identity", b.name+gateway.NameSeparator+name)
			}
		}
		return h.call(ctx, r, b, name, params, opts)
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		merged, _ := stringMember(params, "uri")
		b, uri, err := h.route(r, params, "uri", gateway.URISeparator, &rec)
		if err != nil {
			return nil, err
		}
		if r.Method == "resources/subscribe" && r.Session != "" && !h.maySubscribe(r.Session, merged) {
			rec.Decision = "deny"
			return nil, invalidParams("this session already holds %d resource subscriptions, the most the gateway keeps: unsubscribe from some first", maxSubscriptions)
		}
		var res json.RawMessage
		if r.Method == "resources/read" {
			res, err = h.call(ctx, r, b, uri, params, opts)
		} else {
			res, err = b.request(ctx, r, r.Method, uri, marshal(params), opts...)
		}
		if err == nil && r.Session != "" && r.Method != "resources/read" {
			h.subscribe(r.Session, merged, r.Method == "resources/subscribe")
		}
		return res, err
	case "completion/complete":
		return h.complete(ctx, r, params, &rec, opts)
	case "logging/setLevel":
		// Every allowed server that is up, at once: a slow one delays
		// the answer, not the others.
		var wg sync.WaitGroup
		for _, name := range h.names {
			b := h.backends[name]
			if _, err := b.runner(); err != nil || !h.allowServer(r, name) {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := b.request(ctx, r, r.Method, "", marshal(params), opts...); err != nil {
					h.log.Warn("logging/setLevel failed on a server", "server", b.name, "error", err)
				}
			}()
		}
		wg.Wait()
		return json.RawMessage(`{}`), nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q is not served by the Snodo gateway", r.Method)}
}

func (h *Hub) allowServer(r *gateway.Request, name string) bool {
	return h.opts.Policy == nil || h.opts.Policy.AllowServer(r.Identity, name)
}

// decode returns the params to send a backend (the host's, without what
// is between the host and the gateway: the io.modelcontextprotocol/ _meta
// keys and the progress token) and the call options those carry.
func (h *Hub) decode(r *gateway.Request) (map[string]json.RawMessage, []snodo.CallOption, error) {
	params := map[string]json.RawMessage{}
	if p := bytes.TrimSpace(r.Params); len(p) > 0 && string(p) != "null" {
		if p[0] != '{' || json.Unmarshal(p, &params) != nil {
			return nil, nil, invalidParams("params must be a JSON object")
		}
	}
	var opts []snodo.CallOption
	raw, ok := params["_meta"]
	if !ok {
		return params, nil, nil
	}
	delete(params, "_meta")
	var meta map[string]json.RawMessage
	if string(raw) != "null" && json.Unmarshal(raw, &meta) != nil {
		return nil, nil, invalidParams("params._meta must be an object")
	}
	out := map[string]json.RawMessage{}
	for k, v := range meta {
		switch {
		case k == metaProgressToken:
			if string(v) != "null" && r.Notify != nil {
				token := v
				opts = append(opts, snodo.WithProgress(func(p snodo.Progress) {
					b, err := json.Marshal(struct {
						Token json.RawMessage `json:"progressToken"`
						snodo.Progress
					}{token, p})
					if err == nil {
						_ = r.Notify("notifications/progress", b)
					}
				}))
			}
		case k == metaLogLevel:
			var level string
			if json.Unmarshal(v, &level) == nil && level != "" {
				opts = append(opts, snodo.WithLogLevel(snodo.LogLevel(level)))
			}
		case strings.HasPrefix(k, metaPrefix):
		default:
			out[k] = v
		}
	}
	if len(out) > 0 {
		params["_meta"], _ = json.Marshal(out)
	}
	return params, opts, nil
}

func stringMember(params map[string]json.RawMessage, key string) (string, bool) {
	var s string
	if json.Unmarshal(params[key], &s) != nil {
		return "", false
	}
	return s, true
}

// split splits a merged name at sep into the server and its own name.
func split(merged, sep string) (server, name string, ok bool) {
	server, name, ok = strings.Cut(merged, sep)
	return server, name, ok && serverName.MatchString(server)
}

// route finds the backend a merged name or URI in params[key] names, and
// rewrites it to the backend's own.
func (h *Hub) route(r *gateway.Request, params map[string]json.RawMessage, key, sep string, rec *gateway.AuditRecord) (*backend, string, error) {
	merged, ok := stringMember(params, key)
	if !ok {
		return nil, "", invalidParams("params.%s must be a string", key)
	}
	server, name, ok := split(merged, sep)
	b := h.backends[server]
	if !ok || b == nil {
		return nil, "", invalidParams("%s %q names no server of the gateway: it must be {server}%s{%s}", key, merged, sep, key)
	}
	rec.Server = server
	if !h.allowServer(r, server) {
		rec.Decision = "deny"
		return nil, "", invalidParams("server %q is not allowed by the gateway's policy for this identity", server)
	}
	params[key], _ = json.Marshal(name)
	return b, name, nil
}

// complete routes completion/complete by its ref.
func (h *Hub) complete(ctx context.Context, r *gateway.Request, params map[string]json.RawMessage, rec *gateway.AuditRecord, opts []snodo.CallOption) (json.RawMessage, error) {
	var ref map[string]json.RawMessage
	if json.Unmarshal(params["ref"], &ref) != nil || ref == nil {
		return nil, invalidParams("params.ref must be an object")
	}
	var typ string
	_ = json.Unmarshal(ref["type"], &typ)
	var b *backend
	var err error
	switch typ {
	case "ref/prompt":
		b, _, err = h.route(r, ref, "name", gateway.NameSeparator, rec)
	case "ref/resource":
		b, _, err = h.route(r, ref, "uri", gateway.URISeparator, rec)
	default:
		return nil, invalidParams("params.ref.type must be ref/prompt or ref/resource, not %q", typ)
	}
	if err != nil {
		return nil, err
	}
	params["ref"], _ = json.Marshal(ref)
	return b.request(ctx, r, r.Method, "", marshal(params), opts...)
}

// cursor is what a merged list's cursor names.
type cursor struct {
	Server string `json:"s"`
	Cursor string `json:"c,omitempty"`
}

func encodeCursor(c cursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (h *Hub) decodeCursor(r *gateway.Request, s string) (cursor, error) {
	var c cursor
	bad := func(why string) (cursor, error) {
		return c, invalidParams("invalid cursor: %s; use the nextCursor of a previous page, or none for the first page", why)
	}
	if len(s) > maxCursor {
		return bad(fmt.Sprintf("longer than %d bytes", maxCursor))
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return bad("not one the gateway made")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if dec.Decode(&c) != nil || dec.More() {
		return bad("not one the gateway made")
	}
	if b, ok := h.backends[c.Server]; !ok || b.disabled || !h.allowServer(r, c.Server) {
		return bad("it names no server of the gateway")
	}
	return c, nil
}

// maxEmptyPages bounds the empty pages a list skips in one request.
const maxEmptyPages = 16

// list serves one page of a merged list: one page of one server.
func (h *Hub) list(ctx context.Context, r *gateway.Request, params map[string]json.RawMessage, items, key string, opts []snodo.CallOption) (json.RawMessage, error) {
	var servers []string
	for _, name := range h.names {
		if h.allowServer(r, name) && !h.backends[name].disabled {
			servers = append(servers, name)
		}
	}
	pos, cur := 0, ""
	if raw, ok := params["cursor"]; ok && string(raw) != "null" {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, invalidParams("params.cursor must be a string")
		}
		if s != "" {
			c, err := h.decodeCursor(r, s)
			if err != nil {
				return nil, err
			}
			for i, name := range servers {
				if name == c.Server {
					pos = i
				}
			}
			cur = c.Cursor
		}
	}
	out := []json.RawMessage{}
	next := ""
	for empty := 0; pos < len(servers); {
		b := h.backends[servers[pos]]
		p := map[string]json.RawMessage{}
		for k, v := range params {
			p[k] = v
		}
		delete(p, "cursor")
		if cur != "" {
			p["cursor"], _ = json.Marshal(cur)
		}
		var page map[string]json.RawMessage
		res, err := h.listPage(ctx, r, b, p, opts)
		if err == nil && json.Unmarshal(res, &page) != nil {
			err = fmt.Errorf("server %q answered a list that is not a JSON object", b.name)
		}
		var got []json.RawMessage
		var sc string
		if err != nil {
			if je, ok := err.(*jsonrpc.Error); ok && je.Code == gateway.CodeRateLimited {
				return nil, err
			}
			h.log.Warn("list skips a server", "server", b.name, "method", r.Method, "error", err)
		} else {
			_ = json.Unmarshal(page[items], &got)
			_ = json.Unmarshal(page["nextCursor"], &sc)
		}
		out = append(out, h.rename(r, b.name, got, key, r.Method == "tools/list")...)
		if len(sc) > maxInnerCursor {
			h.log.Warn("list skips the rest of a server's list: its cursor is too long", "server", b.name, "method", r.Method, "bytes", len(sc))
			sc = ""
		}
		switch {
		case sc != "":
			cur = sc
			next = encodeCursor(cursor{Server: b.name, Cursor: sc})
		case pos+1 < len(servers):
			pos, cur = pos+1, ""
			next = encodeCursor(cursor{Server: servers[pos]})
		default:
			next, pos = "", len(servers)
		}
		if len(out) > 0 || next == "" {
			break
		}
		if empty++; empty >= maxEmptyPages {
			break
		}
	}
	res := map[string]any{items: out}
	if next != "" {
		res["nextCursor"] = next
	}
	return json.Marshal(res)
}

func (h *Hub) listPage(ctx context.Context, r *gateway.Request, b *backend, p map[string]json.RawMessage, opts []snodo.CallOption) (json.RawMessage, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return b.request(ctx, r, r.Method, "", raw, opts...)
}

// rename rewrites each item's key to the merged name space, leaving out
// the tools the policy denies and items that are not objects.
func (h *Hub) rename(r *gateway.Request, server string, items []json.RawMessage, key string, tools bool) []json.RawMessage {
	sep := gateway.URISeparator
	if key == "name" {
		sep = gateway.NameSeparator
	}
	out := make([]json.RawMessage, 0, len(items))
	for _, it := range items {
		var obj map[string]json.RawMessage
		if json.Unmarshal(it, &obj) != nil || obj == nil {
			continue
		}
		name, ok := stringMember(obj, key)
		if !ok {
			continue
		}
		if tools {
			if guard.CheckName(name) != nil {
				continue
			}
			if h.opts.Policy != nil && !h.opts.Policy.AllowTool(r.Identity, server, name) {
				continue
			}
		}
		obj[key], _ = json.Marshal(server + sep + name)
		b, err := json.Marshal(obj)
		if err == nil {
			out = append(out, b)
		}
	}
	return out
}

// marshal encodes params (a map of raw values, which cannot fail).
func marshal(params map[string]json.RawMessage) json.RawMessage {
	b, _ := json.Marshal(params)
	return b
}

// call sends a tools/call, prompts/get or resources/read to b: for a
// 2026-07-28 host, a request that may take several rounds (heldCall for a
// legacy server, multiRound for a 2026-07-28 one).
func (h *Hub) call(ctx context.Context, r *gateway.Request, b *backend, target string, params map[string]json.RawMessage, opts []snodo.CallOption) (json.RawMessage, error) {
	if r.Modern && b.legacyServer() {
		return h.heldCall(ctx, r, b, target, params)
	}
	if r.Modern {
		return h.multiRound(ctx, r, b, target, params, opts)
	}
	return b.request(ctx, r, r.Method, target, marshal(params), opts...)
}

// multiRound serves a 2026-07-28 host's request: to a 2026-07-28 backend,
// a multi round-trip request (package mrtr, sealed under the hub's
// stateKey) whose input requests are answered by the server's Wasm modules
// for the methods they answer, the others going back to the host in an
// input_required result, which the host answers by retrying on any
// replica with the same stateKey; to a legacy backend, one call.
func (h *Hub) multiRound(ctx context.Context, r *gateway.Request, b *backend, target string, params map[string]json.RawMessage, opts []snodo.CallOption) (json.RawMessage, error) {
	return b.admitted(ctx, r, r.Method, target, func(ctx context.Context, rt *runtime.Runner, modules map[string]snodo.Handler) (json.RawMessage, error) {
		c := rt.Client()
		if c.Server().Era != snodo.EraModern {
			return c.Request(ctx, r.Method, marshal(params), opts...)
		}
		rest, responses, state, err := mrtr.Split(marshal(params))
		if err != nil {
			return nil, err
		}
		res, err := h.rounds.Call(ctx, optsClient{c, opts}, mrtr.CallRequest{
			Server: b.name, Method: r.Method, Params: rest,
			InputResponses: responses, RequestState: state,
			Identity: identityName(r.Identity),
			Answer: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, bool, error) {
				m := modules[method]
				if m == nil {
					return nil, false, nil
				}
				res, err := m.HandleRequest(ctx, method, params)
				return res, err == nil, err
			},
		})
		if err != nil {
			return nil, err
		}
		return res, undeclaredInput(b.name, r, res)
	})
}

// undeclaredInput refuses an input_required result that would ask the
// host for a capability it did not declare (-32601, as a legacy host
// is refused a server request it did not declare), or returns nil.
func undeclaredInput(server string, r *gateway.Request, res json.RawMessage) error {
	var ir struct {
		ResultType    string `json:"resultType"`
		InputRequests map[string]struct {
			Method string `json:"method"`
		} `json:"inputRequests"`
	}
	// Most results are complete: no need to decode them whole to see so.
	if !bytes.Contains(res, []byte(`"input_required"`)) || json.Unmarshal(res, &ir) != nil || ir.ResultType != "input_required" {
		return nil
	}
	for _, in := range ir.InputRequests {
		if !proxy.Declares(r.ClientCapabilities, in.Method) {
			return noHandler(server, in.Method, fmt.Sprintf("and the host did not declare the %s capability", proxy.CapabilityName(in.Method)))
		}
	}
	return nil
}

// optsClient is a backend's client that sends every request with the host
// request's call options (progress, log level) too.
type optsClient struct {
	c    *snodo.Client
	opts []snodo.CallOption
}

func (o optsClient) Request(ctx context.Context, method string, params json.RawMessage, opts ...snodo.CallOption) (json.RawMessage, error) {
	return o.c.Request(ctx, method, params, append(slices.Clip(o.opts), opts...)...)
}
