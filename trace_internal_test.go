package snodo

import (
	"bytes"
	"context"
	"testing"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// propagatedMembers is what OpenTelemetry's W3C propagators inject for the
// same input, as _meta members, or ok false where WithTraceContext must
// fail: the reference traceMembers is held to.
func propagatedMembers(ctx context.Context, tc *TraceContext) (members []byte, ok bool) {
	w3c := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	carrier := propagation.MapCarrier{}
	if tc != nil {
		in := propagation.MapCarrier{metaTraceparent: tc.Traceparent}
		if tc.Tracestate != "" {
			in[metaTracestate] = tc.Tracestate
		}
		ectx := propagation.TraceContext{}.Extract(context.Background(), in)
		sc := trace.SpanContextFromContext(ectx)
		if !sc.IsValid() || tc.Tracestate != "" && sc.TraceState().Len() == 0 {
			return nil, false
		}
		if tc.Baggage != "" {
			b, err := baggage.Parse(tc.Baggage)
			if err != nil {
				return nil, false
			}
			ectx = baggage.ContextWithBaggage(ectx, b)
		}
		w3c.Inject(ectx, carrier)
	} else {
		w3c.Inject(ctx, carrier)
	}
	var b []byte
	for _, k := range []string{metaTraceparent, metaTracestate, metaBaggage} {
		if v := carrier[k]; v != "" {
			if len(b) > 0 {
				b = append(b, ',')
			}
			b = appendMember(b, k, mustMarshal(v))
		}
	}
	return b, true
}

// traceMembers formats and validates trace context exactly as
// OpenTelemetry's propagators do, for WithTraceContext's strings and for a
// span and baggage in the call's context.
func TestTraceMembersAsThePropagators(t *testing.T) {
	const tid, sid = "0af7651916cd43dd8448eb211c80319c", "00f067aa0ba902b7"
	var traceparents []string
	for _, v := range []string{"00", "01", "cc", "fe", "ff", "0", "000", "0A", "g0"} {
		for _, f := range []string{"00", "01", "02", "03", "04", "09", "ff", "FF", "1", "001"} {
			for _, tail := range []string{"", "-", "-extra", "-x-y"} {
				traceparents = append(traceparents, v+"-"+tid+"-"+sid+"-"+f+tail)
			}
		}
	}
	traceparents = append(traceparents,
		"", "nope", "00", "00-"+tid, "00-"+tid+"-"+sid,
		"00-00000000000000000000000000000000-"+sid+"-01",
		"00-"+tid+"-0000000000000000-01",
		"00-0AF7651916CD43DD8448EB211C80319C-"+sid+"-01",
		"00-"+tid[:31]+"-"+sid+"-01",
		"00-"+tid+"0-"+sid+"-01",
		"00-"+tid+"-"+sid[:15]+"g-01",
		"00_"+tid+"-"+sid+"-01",
		" 00-"+tid+"-"+sid+"-01",
		"00-"+tid+"-"+sid+"-01 ",
	)
	var cases []TraceContext
	for _, tp := range traceparents {
		cases = append(cases, TraceContext{Traceparent: tp})
	}
	valid := "00-" + tid + "-" + sid + "-01"
	for _, ts := range []string{"vendor=abc", "a=1,b=2", "=bad=", "a=1,a=2", " a = 1 ", ","} {
		cases = append(cases, TraceContext{Traceparent: valid, Tracestate: ts})
		cases = append(cases, TraceContext{Traceparent: "nope", Tracestate: ts})
	}
	// One member each where valid: Baggage.String follows map order.
	for _, bg := range []string{"k=v", "k2=v%202;p", " k = v ", "no value", " ", "k=v,,k2=v2"} {
		cases = append(cases, TraceContext{Traceparent: valid, Baggage: bg})
	}
	for _, tc := range cases {
		want, wantOK := propagatedMembers(context.Background(), &tc)
		cc := callConfig{trace: &tc}
		err := traceMembers(context.Background(), &cc)
		if (err == nil) != wantOK || !bytes.Equal(cc.traceMeta, want) {
			t.Errorf("%+v: members %s, error %v; the propagators: %s, valid %t", tc, cc.traceMeta, err, want, wantOK)
		}
	}

	ts, err := trace.ParseTraceState("vendor=abc,other=x")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := baggage.NewMember("user", "ada lovelace")
	bag, _ := baggage.New(m)
	id, _ := trace.TraceIDFromHex(tid)
	span, _ := trace.SpanIDFromHex(sid)
	for _, flags := range []trace.TraceFlags{0, trace.FlagsSampled, trace.FlagsRandom, 0xff} {
		for _, state := range []trace.TraceState{{}, ts} {
			for _, b := range []baggage.Baggage{{}, bag} {
				for _, remote := range []bool{false, true} {
					sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: id, SpanID: span, TraceFlags: flags, TraceState: state, Remote: remote})
					ctx := baggage.ContextWithBaggage(trace.ContextWithSpanContext(context.Background(), sc), b)
					want, _ := propagatedMembers(ctx, nil)
					var cc callConfig
					if err := traceMembers(ctx, &cc); err != nil || !bytes.Equal(cc.traceMeta, want) {
						t.Errorf("flags %v, state %q, baggage %q: members %s, error %v; the propagators: %s", flags, state, b, cc.traceMeta, err, want)
					}
				}
			}
		}
	}
	// Baggage without a span, and an invalid span with baggage.
	for _, sc := range []trace.SpanContext{{}, trace.NewSpanContext(trace.SpanContextConfig{SpanID: span})} {
		ctx := baggage.ContextWithBaggage(trace.ContextWithSpanContext(context.Background(), sc), bag)
		want, _ := propagatedMembers(ctx, nil)
		var cc callConfig
		if err := traceMembers(ctx, &cc); err != nil || !bytes.Equal(cc.traceMeta, want) {
			t.Errorf("baggage, span %v: members %s, error %v; the propagators: %s", sc, cc.traceMeta, err, want)
		}
	}
}
