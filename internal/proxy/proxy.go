// Package proxy serves MCP to a host on one newline-delimited JSON-RPC
// connection (snodo-run proxy: its own stdin and stdout) and forwards what
// the host asks to an MCP server through a Snodo client. It is the
// engine of `snodo-run proxy`.
//
// Both protocol eras are served to the host: the initialize handshake
// (2024-11-05 … 2025-11-25) and the stateless 2026-07-28 revision, chosen
// per request (a request whose _meta carries
// io.modelcontextprotocol/protocolVersion is modern). The server side is
// whatever the client negotiated.
//
// The proxy applies a tool guard (a denied tools/call is answered with a
// JSON-RPC error, denied tools are left out of tools/list) and writes an
// audit log of JSON lines. A 2026-07-28 host's subscriptions/listen is
// served with a subscription on the server (see listen.go).
//
// What the server asks of the client (elicitation/create,
// sampling/createMessage, roots/list) is answered by the client's
// handlers: the Wasm modules configured for a method, and for the other
// methods the proxy itself (Proxy implements snodo.Handler), which
// forwards the request to the host:
//
//   - to a host that opened with initialize, as a server-to-client request
//     on the host connection, with an ID of the proxy's own ("snodo-proxy-N");
//     the host's response is matched by that ID, and a server that cancels
//     its request makes the proxy send the host notifications/cancelled;
//   - to a 2026-07-28 host, as the input requests of an input_required
//     result to the host request that is being served (see exchange.go).
package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/internal/exchange"
	"github.com/snodo/snodo/internal/guard"
	"github.com/snodo/snodo/jsonrpc"
)

// The protocol versions the proxy serves to a host.
var (
	legacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
	modernVersions = []string{"2026-07-28"}
)

// Reserved _meta keys of the 2026-07-28 revision.
const (
	metaPrefix             = "io.modelcontextprotocol/"
	metaProtocolVersion    = metaPrefix + "protocolVersion"
	metaClientCapabilities = metaPrefix + "clientCapabilities"
	metaClientInfo         = metaPrefix + "clientInfo"
	metaServerInfo         = metaPrefix + "serverInfo"
	metaLogLevel           = metaPrefix + "logLevel"
	metaProgressToken      = "progressToken"
)

// Defaults of Config.
const (
	DefaultMaxInFlight   = 64
	DefaultResumeTimeout = exchange.DefaultResumeTimeout
)

// forwarded are the host methods passed through to the server.
var forwarded = map[string]bool{
	"tools/list": true, "tools/call": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"prompts/list": true, "prompts/get": true,
	"completion/complete": true, "logging/setLevel": true,
}

// multiRound are the methods whose 2026-07-28 result may be input_required.
var multiRound = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

// Config configures a Proxy.
type Config struct {
	// AllowTool is the guard: whether a tool may be listed and called. nil
	// allows every tool. When set, a tools/call whose tool name cannot be
	// told for sure, or holds a control or invisible character
	// (guard.CheckName), is refused, and such tools are not listed.
	AllowTool func(name string) bool

	// Audit receives one JSON line per request the proxy handles (see
	// AuditRecord); nil writes none. Writes are serialized.
	Audit io.Writer

	// Logger receives the proxy's own logs; nil discards them.
	Logger *slog.Logger

	// MaxLineBytes is the longest line accepted from the host (default
	// jsonrpc.DefaultMaxLineBytes). A longer line is answered with an
	// error and skipped.
	MaxLineBytes int

	// MaxInFlight is the most host requests served at once (default
	// DefaultMaxInFlight); a request over it is answered -32603 at once.
	MaxInFlight int

	// ResumeTimeout is how long a forwarded call that returned
	// input_required to a 2026-07-28 host waits for the host's retry
	// before it is cancelled on the server (default DefaultResumeTimeout).
	ResumeTimeout time.Duration
}

// Proxy serves one host connection. New makes one; Serve runs it.
type Proxy struct {
	cfg    Config
	log    *slog.Logger
	in     io.Reader
	out    io.Writer
	audit  *auditLog
	client *snodo.Client

	wmu sync.Mutex // serializes writes to out

	// lr reads the host's input; first holds its first line once
	// HostExtensions has read it (extensions.go).
	lr    *jsonrpc.LineReader
	first chan firstLine

	life    context.Context // ends when Serve returns
	endLife context.CancelCauseFunc
	// ready is closed once Serve has the client and has handled the
	// host's first message, or has ended: a server request is routed
	// knowing how the host opened (initialize or not).
	ready     chan struct{}
	readyOnce sync.Once
	// hostGone is closed when the host's input has ended: nothing more
	// can be asked of the host.
	hostGone chan struct{}
	wg       sync.WaitGroup
	slots    chan struct{}

	mu        sync.Mutex
	inflight  map[jsonrpc.ID]context.CancelCauseFunc // host requests being served
	pending   map[jsonrpc.ID]chan *jsonrpc.Response  // proxy requests to the host
	nextID    int64
	exchanges *exchange.Table
	hostInit  bool         // the host opened with initialize
	hostCaps  capabilities // from initialize
	hostVer   string
	hostName  string // the host's clientInfo.name from initialize
	// urlElicits are the elicitationIds of the URL-mode elicitations
	// forwarded to the host and not yet completed, oldest first.
	urlElicits []string
	closed     bool // Serve is ending: no more goroutines
}

// New returns a proxy that reads the host's messages from in and writes
// its own to out. Give it, as the client's handler, to the methods no Wasm
// module answers, and its OnLog and OnNotification to the client; then
// call Serve with the connected client.
func New(cfg Config, in io.Reader, out io.Writer) *Proxy {
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.ResumeTimeout <= 0 {
		cfg.ResumeTimeout = DefaultResumeTimeout
	}
	p := &Proxy{
		cfg: cfg, log: cfg.Logger, in: in, out: out,
		audit:    &auditLog{w: cfg.Audit},
		ready:    make(chan struct{}),
		hostGone: make(chan struct{}),
		slots:    make(chan struct{}, cfg.MaxInFlight),
		inflight: map[jsonrpc.ID]context.CancelCauseFunc{},
		pending:  map[jsonrpc.ID]chan *jsonrpc.Response{},
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.life, p.endLife = context.WithCancelCause(context.Background())
	p.exchanges = exchange.NewTable(exchange.Config{Prefix: "snodo-proxy:", ResumeTimeout: cfg.ResumeTimeout, Gone: p.hostGone})
	return p
}

// errHostGone ends the proxy's work when the host connection ends.
var errHostGone = errors.New("the host closed the connection")

// errShutdown is wrapped by the cause of the proxy's end when Serve's
// context ends (snodo-run proxy: SIGINT or SIGTERM): the requests in
// flight are answered with shutdownError.
var errShutdown = errors.New("the Snodo proxy is shutting down")

// shutdownError is the answer to a host request in flight when the proxy
// shuts down. -32000 is JSON-RPC's first implementation-defined server
// error, and the code MCP's SDKs give a request whose connection closed
// before its response (ConnectionClosed): MCP defines no code of its own
// for a server that stops. The host may send the request again to a new
// proxy.
func shutdownError(cause error) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeConnectionClosed,
		Message: fmt.Sprintf("%v: the request was cancelled on the server and has no result; send it again once the proxy is restarted", cause)}
}

// Serve serves the host until its input ends (EOF: nil), reading fails,
// a write to the host fails, or ctx ends.
//
// When the host is gone (its input ended or failed, or a write to it
// failed) nobody is left to read an answer: every request in flight is
// cancelled at once, on the server too (notifications/cancelled to a
// legacy server, the end of the request's stream to a 2026-07-28 one), and
// is not answered. When ctx ends (a signal), every request in flight is
// cancelled on the server too, and answered to the host with a -32000
// error (shutdownError). Serve returns once they have finished. client
// must be connected; Serve does not close it.
//
// Serve returns without waiting for a read of the host's input blocked in
// progress (ctx ended, or a write failed): close the input to end it.
func (p *Proxy) Serve(ctx context.Context, client *snodo.Client) error {
	p.client = client
	readErr := make(chan error, 1)
	go func() { readErr <- p.readLoop() }()
	var err error
	select {
	case err = <-readErr:
		p.endLife(errHostGone)
	case <-p.life.Done():
		// A write to the host failed.
	case <-ctx.Done():
		p.endLife(fmt.Errorf("%w (%w)", errShutdown, context.Cause(ctx)))
	}
	p.mu.Lock()
	p.closed = true
	close(p.hostGone)
	p.mu.Unlock()
	p.setReady()
	p.exchanges.DropDetached(errHostGone)
	p.wg.Wait()
	p.exchanges.Wait()
	p.endLife(errHostGone)
	p.exchanges.DropAll(errHostGone)
	return err
}

func (p *Proxy) setReady() { p.readyOnce.Do(func() { close(p.ready) }) }

// readLoop reads and dispatches the host's messages until EOF.
func (p *Proxy) readLoop() error {
	defer p.setReady()
	if p.lr == nil {
		p.lr = jsonrpc.NewLineReader(p.in, p.cfg.MaxLineBytes)
	}
	for first := true; ; first = false {
		if !first {
			// The host's first message has been handled (the initialize
			// of a legacy host answered).
			p.setReady()
		}
		var line []byte
		var err error
		if p.first != nil {
			// The line HostExtensions read, or is reading.
			fl := <-p.first
			p.first = nil
			line, err = fl.line, fl.err
		} else {
			line, err = p.lr.ReadLine()
		}
		if err != nil {
			var tl *jsonrpc.LineTooLongError
			if errors.As(err, &tl) {
				p.log.Warn("host line too long", "bytes", tl.Bytes, "limit", tl.Limit)
				p.writeMsg(jsonrpc.NewErrorResponse(jsonrpc.ID{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
					Message: fmt.Sprintf("line of %d bytes is longer than the limit of %d bytes", tl.Bytes, tl.Limit)}))
				continue
			}
			if errors.Is(err, io.EOF) || p.life.Err() != nil {
				return nil
			}
			return err
		}
		msg, err := jsonrpc.Decode(line)
		if err != nil {
			je := &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "invalid JSON"}
			var de *jsonrpc.Error
			if errors.As(err, &de) {
				je = &jsonrpc.Error{Code: de.Code, Message: de.Message}
			}
			p.writeMsg(jsonrpc.NewErrorResponse(jsonrpc.ID{}, je))
			continue
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			p.onRequest(m)
		case *jsonrpc.Notification:
			p.onNotification(m)
		case *jsonrpc.Response:
			p.onResponse(m)
		}
	}
}

// writeMsg writes one message as one line; a failed write ends the proxy.
func (p *Proxy) writeMsg(m jsonrpc.Message) {
	b, err := jsonrpc.Append(make([]byte, 0, 256), m)
	if err != nil {
		p.log.Warn("cannot encode a message for the host", "error", err)
		if r, ok := m.(*jsonrpc.Response); ok {
			p.writeMsg(jsonrpc.NewErrorResponse(r.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server's answer could not be encoded"}))
		}
		return
	}
	b = append(b, '\n')
	p.wmu.Lock()
	_, err = p.out.Write(b)
	p.wmu.Unlock()
	if err != nil {
		p.endLife(fmt.Errorf("writing to the host: %w", err))
	}
}

func (p *Proxy) notify(method string, params any) {
	raw, err := json.Marshal(params)
	if err != nil {
		return
	}
	p.writeMsg(&jsonrpc.Notification{Method: method, Params: raw})
}

// onNotification handles the host's notifications.
func (p *Proxy) onNotification(n *jsonrpc.Notification) {
	switch n.Method {
	case "notifications/cancelled":
		var c struct {
			RequestID jsonrpc.ID `json:"requestId"`
			Reason    string     `json:"reason"`
		}
		if json.Unmarshal(n.Params, &c) != nil || !c.RequestID.IsValid() {
			return
		}
		p.mu.Lock()
		cancel := p.inflight[c.RequestID]
		p.mu.Unlock()
		if cancel != nil {
			reason := c.Reason
			if reason == "" {
				reason = "no reason given"
			}
			cancel(fmt.Errorf("cancelled by the host: %s", reason))
		}
	case "notifications/roots/list_changed":
		p.spawn(func() { _ = p.client.Notify(p.life, n.Method, n.Params) })
	}
	// notifications/initialized and the rest need nothing.
}

// onResponse hands the host's response to the proxy request waiting for it.
func (p *Proxy) onResponse(r *jsonrpc.Response) {
	p.mu.Lock()
	ch := p.pending[r.ID]
	delete(p.pending, r.ID)
	p.mu.Unlock()
	if ch != nil {
		ch <- r
	}
}

// hostRequest is one request of the host being served.
type hostRequest struct {
	req     *jsonrpc.Request
	params  map[string]json.RawMessage // nil when absent
	meta    map[string]json.RawMessage // params._meta, nil when absent
	modern  bool
	started time.Time
	rec     AuditRecord
}

// onRequest answers at once what needs no server, and serves the rest in
// a goroutine of its own, under the in-flight limit.
func (p *Proxy) onRequest(req *jsonrpc.Request) {
	hr := &hostRequest{req: req, started: time.Now()}
	hr.rec = AuditRecord{Direction: DirHostToServer, Method: req.Method, ID: req.ID.String(), Decision: DecisionAllow}
	if err := hr.decode(); err != nil {
		p.finish(hr, nil, err)
		return
	}
	if hr.modern {
		var v string
		_ = json.Unmarshal(hr.meta[metaProtocolVersion], &v)
		if !contains(modernVersions, v) {
			data, _ := json.Marshal(map[string]any{"supported": modernVersions, "requested": v})
			p.finish(hr, nil, &jsonrpc.Error{Code: jsonrpc.CodeUnsupportedProtocolVersion,
				Message: fmt.Sprintf("unsupported protocol version %q", v), Data: data})
			return
		}
	}
	switch req.Method {
	case "ping":
		p.finish(hr, json.RawMessage(`{}`), nil)
		return
	case "initialize":
		res, err := p.initialize(hr)
		p.finish(hr, res, err)
		return
	case "server/discover":
		res, err := p.discover()
		p.finish(hr, res, err)
		return
	}
	if !forwarded[req.Method] && !(req.Method == "subscriptions/listen" && hr.modern) {
		p.finish(hr, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q is not served by the Snodo proxy", req.Method)})
		return
	}
	select {
	case p.slots <- struct{}{}:
	default:
		p.finish(hr, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("too many requests in flight (limit %d)", p.cfg.MaxInFlight)})
		return
	}
	ctx, cancel := context.WithCancelCause(p.life)
	p.mu.Lock()
	if _, dup := p.inflight[req.ID]; dup {
		p.mu.Unlock()
		cancel(nil)
		<-p.slots
		p.finish(hr, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("request id %s is already in flight", req.ID)})
		return
	}
	p.inflight[req.ID] = cancel
	p.mu.Unlock()
	started := p.spawn(func() {
		defer func() { <-p.slots }()
		defer cancel(nil)
		res, err := p.serve(ctx, hr)
		p.mu.Lock()
		delete(p.inflight, req.ID)
		p.mu.Unlock()
		if ctx.Err() != nil {
			hr.rec.Cancelled = true
			if cause := context.Cause(ctx); errors.Is(cause, errShutdown) {
				p.finish(hr, nil, shutdownError(cause))
				return
			}
			// Cancelled by the host, or the host is gone: MCP's receiver
			// of a cancellation does not respond.
			p.audit.write(hr.rec, hr.started)
			return
		}
		p.finish(hr, res, err)
	})
	if !started {
		// Serve is ending: the request came after the host's end or the
		// shutdown began.
		cancel(nil)
		<-p.slots
		p.mu.Lock()
		delete(p.inflight, req.ID)
		p.mu.Unlock()
		if cause := context.Cause(p.life); errors.Is(cause, errShutdown) {
			hr.rec.Cancelled = true
			p.finish(hr, nil, shutdownError(cause))
		}
	}
}

// spawn runs fn in a goroutine that Serve waits for, unless Serve is
// ending; it reports whether fn runs.
func (p *Proxy) spawn(fn func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		fn()
	}()
	return true
}

// decode reads params and their _meta.
func (hr *hostRequest) decode() error {
	p := strings.TrimSpace(string(hr.req.Params))
	if p == "" || p == "null" {
		return nil
	}
	if p[0] != '{' {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params must be an object"}
	}
	if err := json.Unmarshal(hr.req.Params, &hr.params); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + err.Error()}
	}
	if m, ok := hr.params["_meta"]; ok && string(m) != "null" {
		if err := json.Unmarshal(m, &hr.meta); err != nil {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params._meta must be an object"}
		}
	}
	_, hr.modern = hr.meta[metaProtocolVersion]
	return nil
}

// finish answers a host request and writes its audit record.
func (p *Proxy) finish(hr *hostRequest, res json.RawMessage, err error) {
	if err != nil {
		je := toWire(err)
		hr.rec.ErrorCode = je.Code
		p.writeMsg(jsonrpc.NewErrorResponse(hr.req.ID, je))
	} else {
		if len(res) == 0 {
			res = json.RawMessage(`{}`)
		}
		p.writeMsg(jsonrpc.NewResult(hr.req.ID, res))
	}
	p.audit.write(hr.rec, hr.started)
}

// ToWire is the error object a host is sent for err: a *jsonrpc.Error's
// code (-32603 when it has none), message and data, with its cause's text
// unless that is a cancellation; any other error is -32603 with its text.
func ToWire(err error) *jsonrpc.Error { return toWire(err) }

func toWire(err error) *jsonrpc.Error {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		msg := je.Message
		if je.Cause != nil && !errors.Is(je.Cause, context.Canceled) {
			msg = je.Detail()
		}
		code := je.Code
		if code == 0 {
			code = jsonrpc.CodeInternalError
		}
		return &jsonrpc.Error{Code: code, Message: msg, Data: je.Data}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// initialize answers a legacy host's handshake with the server's identity
// and capabilities, in the version the host asked for when the proxy
// speaks it.
func (p *Proxy) initialize(hr *hostRequest) (json.RawMessage, error) {
	var in struct {
		ProtocolVersion string       `json:"protocolVersion"`
		Capabilities    capabilities `json:"capabilities"`
		ClientInfo      struct {
			Name string `json:"name"`
		} `json:"clientInfo"`
	}
	if err := json.Unmarshal(hr.req.Params, &in); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid initialize params: " + err.Error()}
	}
	version := legacyVersions[0]
	if contains(legacyVersions, in.ProtocolVersion) {
		version = in.ProtocolVersion
	}
	p.mu.Lock()
	p.hostInit, p.hostCaps, p.hostVer, p.hostName = true, in.Capabilities, version, in.ClientInfo.Name
	p.mu.Unlock()
	return json.Marshal(map[string]any{
		"protocolVersion": version,
		"capabilities":    p.serverCapabilities(),
		"serverInfo":      p.client.Server().Implementation,
		"instructions":    p.client.Server().Instructions,
	})
}

// callerOf is the name the host gave itself: in a 2026-07-28 request's
// _meta clientInfo, or in its initialize.
func (p *Proxy) callerOf(hr *hostRequest) string {
	var info struct {
		Name string `json:"name"`
	}
	if raw, ok := hr.meta[metaClientInfo]; ok && json.Unmarshal(raw, &info) == nil && info.Name != "" {
		return info.Name
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hostName
}

// discover answers a 2026-07-28 host's server/discover.
func (p *Proxy) discover() (json.RawMessage, error) {
	return json.Marshal(map[string]any{
		"supportedVersions": modernVersions,
		"capabilities":      p.serverCapabilities(),
		"instructions":      p.client.Server().Instructions,
		"_meta":             map[string]any{metaServerInfo: p.client.Server().Implementation},
	})
}

// serverCapabilities are the server's, as the proxy serves them: tools,
// prompts, resources, logging and completions, and the extensions the
// proxy passes through (extensions.go), without the capabilities the
// proxy does not carry.
func (p *Proxy) serverCapabilities() map[string]any {
	c := p.client.Server().Capabilities
	out := map[string]any{}
	if c.Tools != nil {
		out["tools"] = c.Tools
	}
	if c.Prompts != nil {
		out["prompts"] = c.Prompts
	}
	if c.Resources != nil {
		out["resources"] = c.Resources
	}
	if len(c.Logging) > 0 {
		out["logging"] = c.Logging
	}
	if len(c.Completions) > 0 {
		out["completions"] = c.Completions
	}
	if ext := serverExtensions(c.Extensions); len(ext) > 0 {
		out["extensions"] = ext
	}
	return out
}

// serve forwards one host request to the server.
func (p *Proxy) serve(ctx context.Context, hr *hostRequest) (json.RawMessage, error) {
	if name := p.callerOf(hr); name != "" {
		// The client's interceptors see who asked: the host's own name
		// for itself (its word, not a proof).
		ctx = intercept.WithCaller(ctx, name)
	}
	method := hr.req.Method
	if method == "tools/call" {
		name, err := guard.ToolName(hr.req.Params)
		hr.rec.Tool = name
		if p.cfg.AllowTool != nil {
			if err == nil {
				err = guard.CheckName(name)
			}
			if err != nil {
				hr.rec.Decision = DecisionDeny
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "refused by the guard: " + err.Error()}
			}
			if !p.cfg.AllowTool(name) {
				hr.rec.Decision = DecisionDeny
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tool %q is not allowed by the guard", name)}
			}
		}
	}
	if method == "subscriptions/listen" {
		return p.listen(ctx, hr)
	}
	params, token, level, state, responses := forwardParams(hr)
	if hr.modern && multiRound[method] {
		return p.serveExchange(ctx, hr, params, token, level, state, responses)
	}
	if state != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState is only valid on a 2026-07-28 tools/call, prompts/get or resources/read"}
	}
	var opts []snodo.CallOption
	if token != nil {
		opts = append(opts, snodo.WithProgress(func(pr snodo.Progress) { p.progress(token, pr) }))
	}
	if level != "" {
		opts = append(opts, snodo.WithLogLevel(snodo.LogLevel(level)))
	}
	res, err := p.client.Request(ctx, method, params, opts...)
	if err != nil {
		return nil, err
	}
	if method == "tools/list" && p.cfg.AllowTool != nil {
		res = guard.FilterTools(res, p.cfg.AllowTool)
	}
	return res, nil
}

// forwardParams returns the params to send the server: the host's,
// without what is between the host and the proxy (the 2026-07-28 _meta
// keys, the progress token, inputResponses and requestState). The
// progress token, the log level, requestState and inputResponses are
// returned apart.
func forwardParams(hr *hostRequest) (params, token json.RawMessage, level string, state *string, responses map[string]json.RawMessage) {
	if hr.params == nil {
		return nil, nil, "", nil, nil
	}
	out := make(map[string]json.RawMessage, len(hr.params))
	for k, v := range hr.params {
		out[k] = v
	}
	delete(out, "_meta")
	if raw, ok := out["requestState"]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			state = &s
		}
		delete(out, "requestState")
	}
	if raw, ok := out["inputResponses"]; ok {
		_ = json.Unmarshal(raw, &responses)
		delete(out, "inputResponses")
	}
	if len(hr.meta) > 0 {
		meta := map[string]json.RawMessage{}
		for k, v := range hr.meta {
			switch {
			case k == metaProgressToken:
				if string(v) != "null" {
					token = v
				}
			case k == metaLogLevel:
				_ = json.Unmarshal(v, &level)
			case strings.HasPrefix(k, metaPrefix):
			default:
				meta[k] = v
			}
		}
		if len(meta) > 0 {
			out["_meta"], _ = json.Marshal(meta)
		}
	}
	params, _ = json.Marshal(out)
	return params, token, level, state, responses
}

// progress sends the host a progress notification with its own token.
func (p *Proxy) progress(token json.RawMessage, pr snodo.Progress) {
	p.notify("notifications/progress", struct {
		Token json.RawMessage `json:"progressToken"`
		snodo.Progress
	}{token, pr})
}

// OnLog forwards the server's log messages to the host; give it to the
// client (runtime.Config.OnLog, snodo.Options.OnLog).
func (p *Proxy) OnLog(m snodo.LogMessage) { p.notify("notifications/message", m) }

// OnNotification forwards the server's list changes and resource updates
// to a host that opened with initialize; give it to the client
// (runtime.Config.OnNotification, snodo.Options.OnNotification). A
// 2026-07-28 host receives them only on the subscriptions it opened with
// subscriptions/listen.
func (p *Proxy) OnNotification(method string, params json.RawMessage) {
	p.mu.Lock()
	legacy := p.hostInit
	p.mu.Unlock()
	if !legacy {
		return
	}
	switch method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed",
		"notifications/resources/list_changed", "notifications/resources/updated":
		if len(params) == 0 {
			params = json.RawMessage(`{}`)
		}
		p.writeMsg(&jsonrpc.Notification{Method: method, Params: params})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
