// Package telemetry is the gateway's gateway.Telemetry: OpenTelemetry
// traces and metrics of the requests hosts send the gateway and of those
// the gateway sends backend servers, exported over OTLP/HTTP (protobuf)
// and served in the Prometheus text format by Handler.
//
// It follows the OpenTelemetry semantic conventions for the Model Context
// Protocol, docs/gen-ai/mcp.md of open-telemetry/semantic-conventions-genai
// (status Development, at commit 0393513c908bf895e7b3ec480a2c1eb073c584af),
// which moved there from open-telemetry/semantic-conventions:
//
//   - A span is named "{mcp.method.name} {target}", where target is the
//     gen_ai.tool.name of tools/call or the gen_ai.prompt.name of
//     prompts/get, else "{mcp.method.name}": the conventions keep a resource
//     URI out of span names by default (high cardinality) and record it as
//     mcp.resource.uri only. A host request's span is of kind server, a
//     backend request's of kind client.
//   - Attributes: mcp.method.name, gen_ai.tool.name, gen_ai.prompt.name,
//     gen_ai.operation.name ("execute_tool" for tools/call),
//     mcp.resource.uri, error.type (the JSON-RPC error code as a string,
//     "tool_error" for ErrToolError, "timeout" for a deadline, "_OTHER"
//     otherwise), rpc.response.status_code (the JSON-RPC error code), and,
//     given by SetRequest, mcp.protocol.version, mcp.session.id,
//     jsonrpc.request.id and network.transport. A failed span's status is
//     Error, its description the JSON-RPC error's message.
//   - Metrics: mcp.server.operation.duration and
//     mcp.client.operation.duration, histograms in seconds with the
//     conventions' boundaries [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10,
//     30, 60, 120, 300], attributed with mcp.method.name, gen_ai.tool.name,
//     gen_ai.prompt.name, gen_ai.operation.name, error.type,
//     rpc.response.status_code, mcp.protocol.version and network.transport
//     (never a session, request ID or URI: one series each);
//     mcp.server.session.duration and mcp.client.session.duration (same
//     boundaries, as the conventions give them), attributed with
//     mcp.protocol.version, network.transport and error.type, through
//     ServerSession and ClientSession. Streamable HTTP is also
//     network.protocol.name "http".
//
// A host's trace context is the parent of its request's span: the
// request's _meta traceparent and tracestate (MCP 2026-07-28
// basic/index.mdx, "OpenTelemetry trace context"), else the HTTP request's
// traceparent and tracestate headers (W3C Trace Context). When both are
// present the HTTP one is linked. A backend request's context carries its
// client span, which the Snodo client puts in the request's _meta and the
// Streamable HTTP transport in its headers.
//
// Everything a host sends is hostile: a name recorded in a span name or an
// attribute is cut to MaxNameBytes and made valid UTF-8 (an OTLP batch
// holding one invalid string is refused whole by the protobuf encoder, so
// one host could otherwise erase everyone's spans); a method outside the
// conventions' list is "_OTHER" in metrics; a _meta trace context member
// longer than W3C allows is ignored; every instrument keeps at most
// CardinalityLimit series, the rest folded into one overflow series; and
// the sampled flag of a host's traceparent is not obeyed (sampleRatio
// decides), so a host cannot keep its requests out of the traces.
package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/internal/redact"
)

// Config is the config file's telemetry section.
type Config struct {
	// OTLPEndpoint is the OTLP/HTTP collector's base URL,
	// "http(s)://host:port" with an optional path prefix; traces go to
	// {OTLPEndpoint}/v1/traces and metrics to {OTLPEndpoint}/v1/metrics.
	// Empty: the environment's OTEL_EXPORTER_OTLP_ENDPOINT, read the same
	// way; neither: no OTLP export (Handler still serves the metrics), and
	// the signal-specific OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
	// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT are not read.
	OTLPEndpoint string `json:"otlpEndpoint"`
	// ServiceName is the resource's service.name; "snodo-gateway" when
	// empty.
	ServiceName string `json:"serviceName"`
	// SampleRatio is the share of traces sampled, 0 to 1; 1 when absent.
	SampleRatio *float64 `json:"sampleRatio"`
	// Headers are sent with every OTLP request (a collector's credential);
	// when absent, those of OTEL_EXPORTER_OTLP_HEADERS.
	Headers map[string]string `json:"headers"`
	// ExportInterval is how often metrics are pushed over OTLP, as a Go
	// duration ("15s"); 60s when empty.
	ExportInterval string `json:"exportInterval"`
}

// Options are what the program, not the config file, decides.
type Options struct {
	// Version is the resource's service.version; when empty, the main
	// module's version from its build info, else snodo.Version.
	Version string
}

// Defaults and bounds.
const (
	DefaultServiceName    = "snodo-gateway"
	DefaultExportInterval = 60 * time.Second
	// MaxNameBytes bounds a name recorded in a span name or an attribute
	// (a tool, prompt or method name, a URI, an ID, an error message).
	MaxNameBytes = 256
	// CardinalityLimit is how many series an instrument keeps; the rest
	// are folded into one series with otel.metric.overflow=true.
	CardinalityLimit = 2000
)

// ErrToolError is the error to end a tools/call span with when the call
// succeeded but its result is a tool error (isError true): error.type
// "tool_error", as the conventions ask.
var ErrToolError = errors.New("tool_error")

// The conventions' histogram boundaries for operation durations, seconds.
var durationBoundaries = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// Telemetry implements gateway.Telemetry. A nil *Telemetry records
// nothing.
type Telemetry struct {
	tp        *sdktrace.TracerProvider
	mp        *sdkmetric.MeterProvider
	tracer    trace.Tracer
	serverDur metric.Float64Histogram
	clientDur metric.Float64Histogram
	serverSes metric.Float64Histogram
	clientSes metric.Float64Histogram
	handler   http.Handler
	otlp      string // the OTLP base URL in use, or ""
}

var _ gateway.Telemetry = (*Telemetry)(nil)

// New reads the telemetry section and starts the providers. Shutdown
// flushes and stops them.
func New(ctx context.Context, sections gateway.Sections, opts Options) (*Telemetry, error) {
	c, err := readConfig(sections)
	if err != nil {
		return nil, err
	}
	version := opts.Version
	if version == "" {
		version = snodo.Version
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
	}
	res := resource.NewSchemaless(
		attribute.String("service.name", c.serviceName),
		attribute.String("service.version", version),
		attribute.String("telemetry.sdk.language", "go"),
		attribute.String("telemetry.sdk.name", "opentelemetry"),
	)

	reg := promclient.NewRegistry()
	promExp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	mopts := []sdkmetric.Option{
		sdkmetric.WithResource(res),
		sdkmetric.WithReader(promExp),
		sdkmetric.WithCardinalityLimit(CardinalityLimit),
	}
	topts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		// A host's sampled flag decides nothing: the ratio applies to every
		// trace a host starts or continues, so a host cannot keep its
		// requests out of the gateway's traces (flags 00) nor ask for
		// every one of them to be exported. (A host choosing its trace IDs
		// can still aim for the sampled share of a ratio below 1.) Spans
		// in the gateway's own traces follow their parent.
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.ratio),
			sdktrace.WithRemoteParentSampled(sdktrace.TraceIDRatioBased(c.ratio)),
			sdktrace.WithRemoteParentNotSampled(sdktrace.TraceIDRatioBased(c.ratio)))),
		sdktrace.WithRawSpanLimits(spanLimits()),
	}
	if c.endpoint != "" {
		texp, mexp, err := exporters(ctx, c)
		if err != nil {
			return nil, err
		}
		topts = append(topts, sdktrace.WithBatcher(texp))
		mopts = append(mopts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp, sdkmetric.WithInterval(c.interval))))
	}
	t := &Telemetry{
		tp:      sdktrace.NewTracerProvider(topts...),
		mp:      sdkmetric.NewMeterProvider(mopts...),
		handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		otlp:    c.endpoint,
	}
	const scope = "github.com/snodo/snodo/internal/gateway/telemetry"
	t.tracer = t.tp.Tracer(scope, trace.WithInstrumentationVersion(version))
	if err := t.instruments(t.mp.Meter(scope, metric.WithInstrumentationVersion(version))); err != nil {
		_ = t.Shutdown(ctx)
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	return t, nil
}

// settings are a checked telemetry section.
type settings struct {
	endpoint    string // OTLP base URL without a trailing slash, or ""
	serviceName string
	ratio       float64
	headers     map[string]string
	interval    time.Duration
}

// readConfig decodes and checks the telemetry section, with
// OTEL_EXPORTER_OTLP_ENDPOINT when it names no endpoint.
func readConfig(sections gateway.Sections) (settings, error) {
	var c Config
	if err := sections.Decode("telemetry", &c); err != nil {
		return settings{}, err
	}
	st := settings{serviceName: DefaultServiceName, ratio: 1, headers: c.Headers, interval: DefaultExportInterval}
	var err error
	if c.OTLPEndpoint != "" {
		if st.endpoint, err = endpoint(c.OTLPEndpoint); err != nil {
			return settings{}, fmt.Errorf("config telemetry.otlpEndpoint: %w", err)
		}
	} else if env := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); env != "" {
		if st.endpoint, err = endpoint(env); err != nil {
			return settings{}, fmt.Errorf("environment OTEL_EXPORTER_OTLP_ENDPOINT: %w", err)
		}
	}
	if c.ServiceName != "" {
		if err := checkText(c.ServiceName, 255); err != nil {
			return settings{}, fmt.Errorf("config telemetry.serviceName: %w", err)
		}
		st.serviceName = c.ServiceName
	}
	if c.SampleRatio != nil {
		st.ratio = *c.SampleRatio
		if math.IsNaN(st.ratio) || st.ratio < 0 || st.ratio > 1 {
			return settings{}, fmt.Errorf("config telemetry.sampleRatio: %v is out of range: give a share of traces from 0 (none) to 1 (all)", st.ratio)
		}
	}
	for k, v := range c.Headers {
		if !validHeaderName(k) {
			return settings{}, fmt.Errorf("config telemetry.headers: %q is not a valid HTTP header name (letters, digits and !#$%%&'*+-.^_`|~ only)", k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return settings{}, fmt.Errorf("config telemetry.headers: the value of %q holds a line break or NUL, which HTTP headers cannot carry", k)
		}
	}
	if c.ExportInterval != "" {
		d, err := time.ParseDuration(c.ExportInterval)
		if err != nil || d < time.Second || d > 24*time.Hour {
			return settings{}, fmt.Errorf("config telemetry.exportInterval: %q: give a Go duration from 1s to 24h, such as \"15s\"", c.ExportInterval)
		}
		st.interval = d
	}
	return st, nil
}

// exporters are the OTLP/HTTP trace and metric exporters to c.endpoint.
// They read the other OTEL_EXPORTER_OTLP_* variables (headers, timeout,
// certificates) themselves; what the file gives wins. Headers are given
// only when the file has some: an empty map would erase
// OTEL_EXPORTER_OTLP_HEADERS.
func exporters(ctx context.Context, c settings) (*otlptrace.Exporter, *otlpmetrichttp.Exporter, error) {
	topt := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(c.endpoint + "/v1/traces")}
	mopt := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpointURL(c.endpoint + "/v1/metrics")}
	if len(c.headers) > 0 {
		topt = append(topt, otlptracehttp.WithHeaders(c.headers))
		mopt = append(mopt, otlpmetrichttp.WithHeaders(c.headers))
	}
	texp, err := otlptracehttp.New(ctx, topt...)
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: OTLP trace exporter: %w", err)
	}
	mexp, err := otlpmetrichttp.New(ctx, mopt...)
	if err != nil {
		_ = texp.Shutdown(ctx)
		return nil, nil, fmt.Errorf("telemetry: OTLP metric exporter: %w", err)
	}
	return texp, mexp, nil
}

// instruments creates the conventions' four histograms.
func (t *Telemetry) instruments(meter metric.Meter) error {
	for _, h := range []struct {
		dst        *metric.Float64Histogram
		name, desc string
	}{
		{&t.serverDur, "mcp.server.operation.duration", "MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent."},
		{&t.clientDur, "mcp.client.operation.duration", "The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received."},
		{&t.serverSes, "mcp.server.session.duration", "The duration of the MCP session as observed on the MCP server."},
		{&t.clientSes, "mcp.client.session.duration", "The duration of the MCP session as observed on the MCP client."},
	} {
		var err error
		*h.dst, err = meter.Float64Histogram(h.name, metric.WithUnit("s"), metric.WithDescription(h.desc),
			metric.WithExplicitBucketBoundaries(durationBoundaries...))
		if err != nil {
			return err
		}
	}
	return nil
}

// spanLimits are the SDK's defaults with attribute values bounded.
func spanLimits() sdktrace.SpanLimits {
	l := sdktrace.NewSpanLimits()
	l.AttributeValueLengthLimit = MaxNameBytes
	return l
}

// OTLPEndpoint returns the OTLP base URL telemetry is exported to, or ""
// when there is none.
func (t *Telemetry) OTLPEndpoint() string {
	if t == nil {
		return ""
	}
	return t.otlp
}

// ForceFlush exports what is recorded so far over OTLP.
func (t *Telemetry) ForceFlush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return errors.Join(t.tp.ForceFlush(ctx), t.mp.ForceFlush(ctx))
}

// Shutdown flushes what is recorded and stops the exporters; the spans and
// measurements that follow are dropped.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return errors.Join(t.tp.Shutdown(ctx), t.mp.Shutdown(ctx))
}

// Handler serves the metrics in the Prometheus text format (the OTel
// names translated: mcp_server_operation_duration_seconds, …) from a
// registry of the gateway's own.
func (t *Telemetry) Handler() http.Handler {
	if t == nil {
		return http.NotFoundHandler()
	}
	return t.handler
}

// endpoint checks an OTLP base URL and returns it without a trailing
// slash. Its errors show the URL redacted (internal/redact).
func endpoint(s string) (string, error) {
	const want = `give the collector's OTLP/HTTP base URL, such as "http://otel-collector:4318"`
	shown := redact.URL(s)
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%q is not a URL: %s", shown, want)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%q: the scheme must be http or https: %s", shown, want)
	case u.Host == "" || u.Hostname() == "":
		return "", fmt.Errorf("%q has no host: %s", shown, want)
	case u.User != nil:
		return "", fmt.Errorf("%q holds credentials: put them in telemetry.headers (such as Authorization) instead", shown)
	case u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return "", fmt.Errorf("%q: a query or fragment is not allowed: %s", shown, want)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%q: port %q is out of range: %s", shown, p, want)
		}
	}
	return strings.TrimRight(u.String(), "/"), nil
}

func checkText(s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("longer than %d bytes", max)
	}
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%q holds a control character", s)
		}
	}
	return nil
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// metaString returns a _meta member that is a JSON string of at most max
// bytes, or "".
func metaString(meta map[string]json.RawMessage, key string, max int) string {
	raw := meta[key]
	if len(raw) < 2 || len(raw) > 2*max+2 || raw[0] != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil || len(s) > max {
		return ""
	}
	return s
}
