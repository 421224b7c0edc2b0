package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"
	collmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/internal/gateway/telemetry"
	"github.com/snodo/snodo/jsonrpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// receiver is an OTLP/HTTP collector: it decodes what it is sent.
type receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.Span
	metrics []*metricpb.Metric
	headers []http.Header
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil || req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.headers = append(r.headers, req.Header.Clone())
		var resp proto.Message
		switch req.URL.Path {
		case "/v1/traces":
			var m colltrace.ExportTraceServiceRequest
			if err := proto.Unmarshal(body, &m); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			for _, rs := range m.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					r.spans = append(r.spans, ss.Spans...)
				}
			}
			resp = &colltrace.ExportTraceServiceResponse{}
		case "/v1/metrics":
			var m collmetric.ExportMetricsServiceRequest
			if err := proto.Unmarshal(body, &m); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			for _, rm := range m.ResourceMetrics {
				for _, sm := range rm.ScopeMetrics {
					r.metrics = append(r.metrics, sm.Metrics...)
				}
			}
			resp = &collmetric.ExportMetricsServiceResponse{}
		default:
			http.NotFound(w, req)
			return
		}
		b, _ := proto.Marshal(resp)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) span(t *testing.T, name string) *tracepb.Span {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.spans {
		if s.Name == name {
			return s
		}
	}
	var names []string
	for _, s := range r.spans {
		names = append(names, s.Name)
	}
	t.Fatalf("no span %q; got %q", name, names)
	return nil
}

func (r *receiver) metric(t *testing.T, name string) *metricpb.Metric {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var last *metricpb.Metric
	for _, m := range r.metrics {
		if m.Name == name {
			last = m
		}
	}
	if last == nil {
		t.Fatalf("no metric %q", name)
	}
	return last
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value.GetStringValue()
	}
	return m
}

func sections(t testing.TB, telemetryJSON string) gateway.Sections {
	t.Helper()
	s, err := gateway.ParseConfig([]byte(`{"telemetry":`+telemetryJSON+`}`), ".json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func start(t testing.TB, telemetryJSON string) *telemetry.Telemetry {
	t.Helper()
	tel, err := telemetry.New(context.Background(), sections(t, telemetryJSON), telemetry.Options{Version: "1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	return tel
}

const hostTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// TestOTLPSpansAndMetrics drives a host request through ServerSpan and a
// backend request through ClientSpan, and checks what an OTLP collector
// receives: the spans' names, kinds, attributes and parents, the error on
// failure, the histograms' names, units and counts.
func TestOTLPSpansAndMetrics(t *testing.T) {
	rcv := newReceiver(t)
	tel := start(t, `{"otlpEndpoint":"`+rcv.srv.URL+`/","serviceName":"gw-test","headers":{"Authorization":"Bearer collector-secret"}}`)

	// A tools/call whose host sent a traceparent in _meta (and another in
	// its HTTP headers, which is linked).
	meta := map[string]json.RawMessage{
		"traceparent": json.RawMessage(`"` + hostTraceparent + `"`),
		"tracestate":  json.RawMessage(`"rojo=00f067aa0ba902b7"`),
	}
	h := http.Header{"Traceparent": {"00-11111111111111111111111111111111-2222222222222222-01"}}
	ctx, end := tel.ServerSpan(context.Background(), "tools/call", "fs__read", meta, h)
	telemetry.SetRequest(ctx, &gateway.Request{Method: "tools/call", ID: json.RawMessage(`"req-7"`), ProtocolVersion: "2025-11-25", Session: "sess-1"}, telemetry.TransportTCP)
	cctx, cend := tel.ClientSpan(ctx, "tools/call", "read", "fs")
	if !trace.SpanContextFromContext(cctx).IsValid() {
		t.Fatal("the client span's context carries no span context for the Snodo client to propagate")
	}
	cend(&jsonrpc.Error{Code: -32602, Message: "bad path"})
	end(&jsonrpc.Error{Code: -32602, Message: "bad path"})

	// A prompts/get parented by the HTTP headers only, succeeding.
	h2 := http.Header{"Traceparent": {"00-33333333333333333333333333333333-4444444444444444-01"}}
	_, end2 := tel.ServerSpan(context.Background(), "prompts/get", "fs__summary", nil, h2)
	end2(nil)

	// A resources/read: its URI is an attribute, not in the span name.
	_, end3 := tel.ServerSpan(context.Background(), "resources/read", "fs+file:///tmp/a", nil, nil)
	end3(telemetry.ErrToolError)

	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	srv := rcv.span(t, "tools/call fs__read")
	if srv.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("server span kind %v", srv.Kind)
	}
	if got := trace.TraceID(srv.TraceId).String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("server span trace %s, want the host's _meta traceparent's", got)
	}
	if got := trace.SpanID(srv.ParentSpanId).String(); got != "00f067aa0ba902b7" {
		t.Errorf("server span parent %s, want the host's span 00f067aa0ba902b7", got)
	}
	if srv.TraceState != "rojo=00f067aa0ba902b7" {
		t.Errorf("server span tracestate %q", srv.TraceState)
	}
	if len(srv.Links) != 1 || trace.TraceID(srv.Links[0].TraceId).String() != "11111111111111111111111111111111" {
		t.Errorf("server span links %v, want the HTTP traceparent", srv.Links)
	}
	a := attrs(srv.Attributes)
	for k, v := range map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "fs__read", "gen_ai.operation.name": "execute_tool",
		"mcp.protocol.version": "2025-11-25", "mcp.session.id": "sess-1", "jsonrpc.request.id": "req-7",
		"network.transport": "tcp", "error.type": "-32602", "rpc.response.status_code": "-32602",
	} {
		if a[k] != v {
			t.Errorf("server span %s = %q, want %q", k, a[k], v)
		}
	}
	if srv.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || srv.Status.GetMessage() != "bad path" {
		t.Errorf("server span status %v", srv.Status)
	}

	cli := rcv.span(t, "tools/call read")
	if cli.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("client span kind %v", cli.Kind)
	}
	if string(cli.ParentSpanId) != string(srv.SpanId) || string(cli.TraceId) != string(srv.TraceId) {
		t.Errorf("client span's parent %x/%x, want the server span %x/%x", cli.TraceId, cli.ParentSpanId, srv.TraceId, srv.SpanId)
	}
	if ca := attrs(cli.Attributes); ca["snodo.gateway.server"] != "fs" || ca["gen_ai.tool.name"] != "read" || ca["error.type"] != "-32602" {
		t.Errorf("client span attributes %v", ca)
	}

	p := rcv.span(t, "prompts/get fs__summary")
	if trace.SpanID(p.ParentSpanId).String() != "4444444444444444" || attrs(p.Attributes)["gen_ai.prompt.name"] != "fs__summary" {
		t.Errorf("prompt span parent %x attributes %v", p.ParentSpanId, attrs(p.Attributes))
	}
	if _, ok := attrs(p.Attributes)["error.type"]; ok || p.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("a successful span has error.type or an error status")
	}
	r := rcv.span(t, "resources/read")
	if ra := attrs(r.Attributes); ra["mcp.resource.uri"] != "fs+file:///tmp/a" || ra["error.type"] != "tool_error" {
		t.Errorf("resource span attributes %v", ra)
	}

	rcv.mu.Lock()
	for _, h := range rcv.headers {
		if h.Get("Authorization") != "Bearer collector-secret" {
			t.Errorf("OTLP request without the configured header: %v", h)
		}
	}
	rcv.mu.Unlock()

	for name, want := range map[string]uint64{"mcp.server.operation.duration": 3, "mcp.client.operation.duration": 1} {
		m := rcv.metric(t, name)
		if m.Unit != "s" {
			t.Errorf("%s unit %q", name, m.Unit)
		}
		hist := m.GetHistogram()
		if hist == nil {
			t.Fatalf("%s is not a histogram", name)
		}
		var n uint64
		for _, dp := range hist.DataPoints {
			n += dp.Count
			if len(dp.ExplicitBounds) != 14 || dp.ExplicitBounds[0] != 0.01 || dp.ExplicitBounds[13] != 300 {
				t.Errorf("%s bounds %v, want the conventions'", name, dp.ExplicitBounds)
			}
			da := attrs(dp.Attributes)
			if _, ok := da["mcp.session.id"]; ok {
				t.Errorf("%s attributed with a session ID", name)
			}
			if da["mcp.method.name"] == "tools/call" && name == "mcp.server.operation.duration" &&
				(da["error.type"] != "-32602" || da["mcp.protocol.version"] != "2025-11-25" || da["network.transport"] != "tcp") {
				t.Errorf("%s tools/call attributes %v", name, da)
			}
		}
		if n != want {
			t.Errorf("%s count %d, want %d", name, n, want)
		}
	}
}

// TestHostileNamesDoNotLoseBatch: a name that is not valid UTF-8, or is a
// megabyte long, does not make the OTLP batch it is in fail to encode
// (the protobuf encoder refuses invalid UTF-8), nor travel whole.
func TestHostileNamesDoNotLoseBatch(t *testing.T) {
	rcv := newReceiver(t)
	tel := start(t, `{"otlpEndpoint":"`+rcv.srv.URL+`"}`)
	_, end := tel.ServerSpan(context.Background(), "tools/call", "honest", nil, nil)
	end(nil)
	_, end = tel.ServerSpan(context.Background(), "tools/call", "evil\xff\xfe", nil, nil)
	end(&jsonrpc.Error{Code: -32602, Message: "bad \xff name"})
	_, end = tel.ServerSpan(context.Background(), "tools/\xffcall", strings.Repeat("é", 1<<19), map[string]json.RawMessage{
		"traceparent": json.RawMessage(`"` + strings.Repeat("0", 1<<20) + `"`),
		"tracestate":  json.RawMessage(`{"not":"a string"}`),
	}, nil)
	end(nil)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	rcv.span(t, "tools/call honest")
	rcv.span(t, "tools/call evil\uFFFD")
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.spans) != 3 {
		t.Fatalf("%d spans received, want 3", len(rcv.spans))
	}
	for _, s := range rcv.spans {
		if len(s.Name) > len("tools/call ")+telemetry.MaxNameBytes+3 {
			t.Errorf("span name of %d bytes", len(s.Name))
		}
		for _, kv := range s.Attributes {
			if v := kv.Value.GetStringValue(); len(v) > telemetry.MaxNameBytes {
				t.Errorf("attribute %s of %d bytes", kv.Key, len(v))
			}
		}
	}
}

// TestPrometheusHandler scrapes Handler for the conventions' metrics in
// Prometheus names, from a registry of the gateway's own.
func TestPrometheusHandler(t *testing.T) {
	tel := start(t, `{}`)
	defer tel.Shutdown(context.Background())
	if tel.OTLPEndpoint() != "" {
		t.Fatalf("OTLP endpoint %q without one configured", tel.OTLPEndpoint())
	}
	_, end := tel.ServerSpan(context.Background(), "tools/call", "fs__read", nil, nil)
	end(nil)
	_, end = tel.ClientSpan(context.Background(), "tools/call", "read", "fs")
	end(errors.New("broken pipe"))
	_, end = tel.ServerSpan(context.Background(), "x-unknown/method", "", nil, nil)
	end(nil)
	endSes := tel.ServerSession("2025-11-25", telemetry.TransportTCP)
	endSes(nil)
	endSes(errors.New("again")) // recorded once
	tel.ClientSession("fs", "2026-07-28", telemetry.TransportPipe)(context.DeadlineExceeded)
	body := scrape(t, tel)
	for _, want := range []string{
		`mcp_server_session_duration_seconds_count{mcp_protocol_version="2025-11-25",network_protocol_name="http",network_transport="tcp",otel_scope_name="github.com/snodo/snodo/internal/gateway/telemetry",otel_scope_schema_url="",otel_scope_version="1.2.3"} 1` + "\n",
		`mcp_client_session_duration_seconds_count{error_type="timeout",mcp_protocol_version="2026-07-28",network_transport="pipe",`,
		`# TYPE mcp_server_operation_duration_seconds histogram`,
		`# TYPE mcp_client_operation_duration_seconds histogram`,
		`mcp_server_operation_duration_seconds_bucket{gen_ai_operation_name="execute_tool",gen_ai_tool_name="fs__read",mcp_method_name="tools/call",`,
		`mcp_server_operation_duration_seconds_count{mcp_method_name="_OTHER",`,
		`le="300"`,
		`error_type="_OTHER"`,
		`snodo_gateway_server="fs"`,
		`target_info{service_name="snodo-gateway",service_version="1.2.3",`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, "go_goroutines") {
		t.Error("the scrape holds the global registry's metrics")
	}
}

// TestCardinalityBounded: a host naming a new tool in every request does
// not grow the metrics without bound.
func TestCardinalityBounded(t *testing.T) {
	tel := start(t, `{}`)
	defer tel.Shutdown(context.Background())
	for i := range telemetry.CardinalityLimit + 500 {
		_, end := tel.ServerSpan(context.Background(), "tools/call", "t"+strconv.Itoa(i), nil, nil)
		end(nil)
	}
	body := scrape(t, tel)
	n := strings.Count(body, "mcp_server_operation_duration_seconds_count{")
	if n > telemetry.CardinalityLimit {
		t.Fatalf("%d series, want at most %d", n, telemetry.CardinalityLimit)
	}
	if !strings.Contains(body, `otel_metric_overflow="true"`) {
		t.Error("no overflow series")
	}
}

func scrape(t *testing.T, tel *telemetry.Telemetry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	tel.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape status %d", rec.Code)
	}
	return rec.Body.String()
}

// TestBadConfig: each mistake gets an error naming the member and what to
// give instead.
func TestBadConfig(t *testing.T) {
	for _, c := range []struct{ cfg, want string }{
		{`{"otlpEndpoint":"collector:4318"}`, "scheme must be http or https"},
		{`{"otlpEndpoint":"http://"}`, "has no host"},
		{`{"otlpEndpoint":"http://exa mple:4318"}`, "not a URL"},
		{`{"otlpEndpoint":"http://u:p@collector:4318"}`, "telemetry.headers"},
		{`{"otlpEndpoint":"http://u:p@exa mple:4318"}`, "u:xxxxx@exa mple"},
		{`{"otlpEndpoint":"http://collector:4318/?k=p@"}`, "k=REDACTED"},
		{`{"otlpEndpoint":"http://collector:99999"}`, "out of range"},
		{`{"otlpEndpoint":"http://collector:4318/?x=1"}`, "query"},
		{`{"sampleRatio":1.5}`, "sampleRatio: 1.5 is out of range"},
		{`{"sampleRatio":-0.1}`, "out of range"},
		{`{"exportInterval":"soon"}`, "exportInterval"},
		{`{"exportInterval":"1ms"}`, "from 1s to 24h"},
		{`{"headers":{"Bad Name":"x"}}`, "not a valid HTTP header name"},
		{`{"headers":{"X-Key":"a\r\nInjected: 1"}}`, "line break"},
		{`{"serviceName":"a\u0000b"}`, "control character"},
		{`{"otlpEndpiont":"http://collector:4318"}`, "unknown field"},
	} {
		_, err := telemetry.New(context.Background(), sections(t, c.cfg), telemetry.Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.cfg, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), ":p@") {
			t.Errorf("%s: the error repeats the password: %v", c.cfg, err)
		}
	}
}

// TestEndpointFromEnvironment: OTEL_EXPORTER_OTLP_ENDPOINT is used when
// the file names none, and the file's wins over it.
func TestEndpointFromEnvironment(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env-collector:4318/")
	tel := start(t, `{}`)
	if got := tel.OTLPEndpoint(); got != "http://env-collector:4318" {
		t.Errorf("endpoint %q, want the environment's", got)
	}
	tel.Shutdown(context.Background())
	tel = start(t, `{"otlpEndpoint":"https://file-collector:4318/otlp"}`)
	if got := tel.OTLPEndpoint(); got != "https://file-collector:4318/otlp" {
		t.Errorf("endpoint %q, want the file's", got)
	}
	tel.Shutdown(context.Background())
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "collector")
	if _, err := telemetry.New(context.Background(), sections(t, `{}`), telemetry.Options{}); err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_ENDPOINT") {
		t.Errorf("a bad environment endpoint: %v", err)
	}
}

// TestNilTelemetry: a nil *Telemetry records nothing and fails nothing.
func TestNilTelemetry(t *testing.T) {
	var tel *telemetry.Telemetry
	ctx, end := tel.ServerSpan(context.Background(), "tools/call", "x", nil, nil)
	telemetry.SetRequest(ctx, &gateway.Request{}, telemetry.TransportTCP)
	end(nil)
	_, end = tel.ClientSpan(ctx, "tools/call", "x", "s")
	end(errors.New("x"))
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestHostCannotUnsample: a host whose traceparent says "not sampled"
// (flags 00) still has its request traced at the configured ratio (1),
// in its trace; and the backend request's span follows.
func TestHostCannotUnsample(t *testing.T) {
	rcv := newReceiver(t)
	tel := start(t, `{"otlpEndpoint":"`+rcv.srv.URL+`"}`)
	meta := map[string]json.RawMessage{"traceparent": json.RawMessage(`"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"`)}
	ctx, end := tel.ServerSpan(context.Background(), "tools/call", "hidden", meta, nil)
	cctx, cend := tel.ClientSpan(ctx, "tools/call", "x", "fs")
	if !trace.SpanContextFromContext(cctx).IsSampled() {
		t.Error("the backend request's trace context is not sampled")
	}
	cend(nil)
	end(nil)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := rcv.span(t, "tools/call hidden")
	if trace.TraceID(s.TraceId).String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("trace %x, want the host's", s.TraceId)
	}
	rcv.span(t, "tools/call x")
}

// TestHeadersFromEnvironment: without headers in the file, the collector
// gets those of OTEL_EXPORTER_OTLP_HEADERS.
func TestHeadersFromEnvironment(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "X-Collector-Key=from-env")
	rcv := newReceiver(t)
	tel := start(t, `{"otlpEndpoint":"`+rcv.srv.URL+`"}`)
	_, end := tel.ServerSpan(context.Background(), "tools/list", "", nil, nil)
	end(nil)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.headers) == 0 {
		t.Fatal("nothing exported")
	}
	for _, h := range rcv.headers {
		if h.Get("X-Collector-Key") != "from-env" {
			t.Errorf("OTLP request without the environment's header: %v", h)
		}
	}
}
