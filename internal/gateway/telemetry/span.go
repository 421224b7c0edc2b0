package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/jsonrpc"
)

// The conventions' attribute names.
const (
	attrMethod          = "mcp.method.name"
	attrProtocolVersion = "mcp.protocol.version"
	attrSessionID       = "mcp.session.id"
	attrResourceURI     = "mcp.resource.uri"
	attrRequestID       = "jsonrpc.request.id"
	attrToolName        = "gen_ai.tool.name"
	attrPromptName      = "gen_ai.prompt.name"
	attrOperationName   = "gen_ai.operation.name"
	attrErrorType       = "error.type"
	attrStatusCode      = "rpc.response.status_code"
	attrTransport       = "network.transport"
	attrProtocolName    = "network.protocol.name"
	// attrServer names the gateway's backend server of a client span (its
	// name in the config file); the conventions have no attribute for it.
	attrServer = "snodo.gateway.server"
)

// Network transports (network.transport) for SetRequest.
const (
	TransportTCP  = "tcp"  // Streamable HTTP
	TransportPipe = "pipe" // stdio
)

// knownMethods are the conventions' well-known mcp.method.name values and
// the 2026-07-28 methods; any other is "_OTHER" in metrics.
var knownMethods = map[string]bool{
	"completion/complete": true, "elicitation/create": true, "initialize": true,
	"logging/setLevel": true, "notifications/cancelled": true, "notifications/initialized": true,
	"notifications/message": true, "notifications/progress": true,
	"notifications/prompts/list_changed": true, "notifications/resources/list_changed": true,
	"notifications/resources/updated": true, "notifications/roots/list_changed": true,
	"notifications/tools/list_changed": true, "ping": true, "prompts/get": true,
	"prompts/list": true, "resources/list": true, "resources/read": true,
	"resources/subscribe": true, "resources/templates/list": true, "resources/unsubscribe": true,
	"roots/list": true, "sampling/createMessage": true, "tools/call": true, "tools/list": true,
	"server/discover": true, "subscriptions/listen": true,
}

// W3C Trace Context bounds: a traceparent of a later version may be
// longer than version 00's 55 characters; a tracestate is at most 32
// members of at most 256 characters (W3C recommends propagating 512).
const (
	maxTraceparent = 256
	maxTracestate  = 32 * 257
)

// op is one operation's span and what its measurement is attributed with.
type op struct {
	span   trace.Span
	start  time.Time
	hist   metric.Float64Histogram
	method string // as recorded on the span
	mu     sync.Mutex
	attrs  []attribute.KeyValue // of the measurement
	done   bool
}

type opKey struct{}

// ServerSpan starts the span of a host request (see gateway.Telemetry).
func (t *Telemetry) ServerSpan(ctx context.Context, method, target string, meta map[string]json.RawMessage, h http.Header) (context.Context, func(error)) {
	if t == nil {
		return ctx, func(error) {}
	}
	parent := ctx
	var link trace.SpanContext
	prop := propagation.TraceContext{}
	if tp := metaString(meta, "traceparent", maxTraceparent); tp != "" {
		carrier := propagation.MapCarrier{"traceparent": tp}
		if ts := metaString(meta, "tracestate", maxTracestate); ts != "" {
			carrier["tracestate"] = ts
		}
		if c := prop.Extract(ctx, carrier); trace.SpanContextFromContext(c).IsRemote() {
			parent = c
		}
	}
	if h != nil {
		hc := prop.Extract(ctx, propagation.HeaderCarrier(h))
		if sc := trace.SpanContextFromContext(hc); sc.IsRemote() {
			if parent == ctx {
				parent = hc
			} else if !sc.Equal(trace.SpanContextFromContext(parent)) {
				link = sc
			}
		}
	}
	return t.start(parent, trace.SpanKindServer, t.serverDur, method, target, "", link)
}

// ClientSpan starts the span of a request to a backend server (see
// gateway.Telemetry).
func (t *Telemetry) ClientSpan(ctx context.Context, method, target, server string) (context.Context, func(error)) {
	if t == nil {
		return ctx, func(error) {}
	}
	return t.start(ctx, trace.SpanKindClient, t.clientDur, method, target, server, trace.SpanContext{})
}

func (t *Telemetry) start(parent context.Context, kind trace.SpanKind, hist metric.Float64Histogram, method, target, server string, link trace.SpanContext) (context.Context, func(error)) {
	method = clean(method)
	target = clean(target)
	metricMethod := method
	if !knownMethods[method] {
		metricMethod = "_OTHER"
	}
	name := method
	spanAttrs := make([]attribute.KeyValue, 0, 8)
	spanAttrs = append(spanAttrs, attribute.String(attrMethod, method))
	o := &op{start: time.Now(), hist: hist, method: method}
	o.attrs = append(o.attrs, attribute.String(attrMethod, metricMethod))
	if target != "" {
		switch method {
		case "tools/call":
			name += " " + target
			kv := []attribute.KeyValue{attribute.String(attrToolName, target), attribute.String(attrOperationName, "execute_tool")}
			spanAttrs = append(spanAttrs, kv...)
			o.attrs = append(o.attrs, kv...)
		case "prompts/get":
			name += " " + target
			kv := attribute.String(attrPromptName, target)
			spanAttrs = append(spanAttrs, kv)
			o.attrs = append(o.attrs, kv)
		case "resources/read", "resources/subscribe", "resources/unsubscribe", "notifications/resources/updated":
			spanAttrs = append(spanAttrs, attribute.String(attrResourceURI, target))
		}
	}
	if server != "" {
		kv := attribute.String(attrServer, clean(server))
		spanAttrs = append(spanAttrs, kv)
		o.attrs = append(o.attrs, kv)
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(kind), trace.WithAttributes(spanAttrs...)}
	if link.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: link}))
	}
	sctx, span := t.tracer.Start(parent, name, opts...)
	o.span = span
	sctx = context.WithValue(sctx, opKey{}, o)
	return sctx, func(err error) { o.end(err) }
}

// end ends the span and records the duration, once.
func (o *op) end(err error) {
	o.mu.Lock()
	if o.done {
		o.mu.Unlock()
		return
	}
	o.done = true
	attrs := o.attrs
	o.mu.Unlock()
	if err != nil {
		typ, code, msg := classify(err)
		kv := []attribute.KeyValue{attribute.String(attrErrorType, typ)}
		if code != "" {
			kv = append(kv, attribute.String(attrStatusCode, code))
		}
		attrs = append(attrs[:len(attrs):len(attrs)], kv...)
		o.span.SetAttributes(kv...)
		o.span.SetStatus(codes.Error, msg)
	}
	o.hist.Record(context.Background(), time.Since(o.start).Seconds(), metric.WithAttributes(attrs...))
	o.span.End()
}

// classify returns err's error.type, its JSON-RPC code as a string (or
// "") and the span status description.
func classify(err error) (typ, code, msg string) {
	var je *jsonrpc.Error
	switch {
	case errors.As(err, &je):
		c := strconv.FormatInt(je.Code, 10)
		return c, c, clean(je.Message)
	case errors.Is(err, ErrToolError):
		return "tool_error", "", "tool_error"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout", "", "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled", "", "cancelled"
	}
	return "_OTHER", "", clean(err.Error())
}

// SetRequest records on the span ServerSpan put in ctx what the front
// knows of the host's request: mcp.protocol.version, mcp.session.id (the
// legacy session), jsonrpc.request.id, and network.transport (TransportTCP
// for Streamable HTTP, TransportPipe for stdio; "" for none). The protocol
// version and transport also attribute the request's measurement. It does
// nothing when ctx holds no span of this package's, or after the span
// ended.
func SetRequest(ctx context.Context, r *gateway.Request, transport string) {
	o, _ := ctx.Value(opKey{}).(*op)
	if o == nil || r == nil {
		return
	}
	var span, meas []attribute.KeyValue
	if v := clean(r.ProtocolVersion); v != "" {
		kv := attribute.String(attrProtocolVersion, v)
		span = append(span, kv)
		meas = append(meas, kv)
	}
	if s := clean(r.Session); s != "" {
		span = append(span, attribute.String(attrSessionID, s))
	}
	if id := requestID(r.ID); id != "" {
		span = append(span, attribute.String(attrRequestID, id))
	}
	kv := transportAttrs(transport)
	span = append(span, kv...)
	meas = append(meas, kv...)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return
	}
	o.attrs = append(o.attrs, meas...)
	o.span.SetAttributes(span...)
}

// requestID is a JSON-RPC ID as the conventions record it: a string's
// value, a number's text; "" for null or none.
func requestID(raw json.RawMessage) string {
	if len(raw) == 0 || len(raw) > 4*MaxNameBytes || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return ""
		}
		return clean(s)
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return ""
	}
	return clean(n.String())
}

// clean makes s valid UTF-8 of at most MaxNameBytes, cut at a rune
// boundary: OTLP's protobuf encoding refuses a whole batch for one
// invalid string.
func clean(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= MaxNameBytes {
		return s
	}
	cut := MaxNameBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// transportAttrs are the network attributes of a transport as the
// conventions record MCP's: stdio is pipe, Streamable HTTP tcp and http.
func transportAttrs(transport string) []attribute.KeyValue {
	switch transport {
	case TransportTCP:
		return []attribute.KeyValue{attribute.String(attrTransport, TransportTCP), attribute.String(attrProtocolName, "http")}
	case TransportPipe:
		return []attribute.KeyValue{attribute.String(attrTransport, TransportPipe)}
	}
	return nil
}

// ServerSession starts measuring a host's session (a legacy session, the
// stdio host's connection): end records mcp.server.session.duration with
// the session's protocol version, its transport (TransportTCP,
// TransportPipe) and err's error.type (nil: ended normally). end records
// once, however often it is called.
func (t *Telemetry) ServerSession(protocolVersion, transport string) (end func(err error)) {
	if t == nil {
		return func(error) {}
	}
	return session(t.serverSes, protocolVersion, transport, nil)
}

// ClientSession starts measuring the gateway's session with a backend
// server (named as in the config file): end records
// mcp.client.session.duration, as ServerSession does.
func (t *Telemetry) ClientSession(server, protocolVersion, transport string) (end func(err error)) {
	if t == nil {
		return func(error) {}
	}
	return session(t.clientSes, protocolVersion, transport, []attribute.KeyValue{attribute.String(attrServer, clean(server))})
}

func session(hist metric.Float64Histogram, protocolVersion, transport string, attrs []attribute.KeyValue) func(error) {
	if v := clean(protocolVersion); v != "" {
		attrs = append(attrs, attribute.String(attrProtocolVersion, v))
	}
	attrs = append(attrs, transportAttrs(transport)...)
	start := time.Now()
	var once sync.Once
	return func(err error) {
		once.Do(func() {
			a := attrs
			if err != nil {
				typ, _, _ := classify(err)
				a = append(a[:len(a):len(a)], attribute.String(attrErrorType, typ))
			}
			hist.Record(context.Background(), time.Since(start).Seconds(), metric.WithAttributes(a...))
		})
	}
}
