package intercept

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
)

// Keys a decoder could take for one another are refused at any depth;
// distinct keys and valid JSON pass; invalid JSON is refused.
func TestCheckUnambiguous(t *testing.T) {
	for _, ok := range []string{
		`{}`, ` {"a":1,"b":[1,2,{"a":2}],"c":{"a":{"b":null}}} `, `{"path":"x","paths":"y"}`,
		`{"a":"\"}\"","b":-0.5e+3,"c":true,"d":false,"e":"\u00e9"}`, `{"k":{"k":{"k":1}}}`,
	} {
		if err := CheckUnambiguous([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for in, want := range map[string]string{
		`{"path":1,"path":2}`:             `top level has the key "path"`,
		`{"path":1,"Path":2}`:             `"Path"`,
		`{"a":{"path":1,"PATH":2}}`:       `object at a has`,
		`{"a":[{},{"pa_th":1,"path":2}]}`: `object at a[1] has`,
		`{"name":1,"na-me":2}`:            `"na-me"`,
		`{"s":1,"\u017f":2}`:              `more than once`, // ſ folds to s
		`{"k":1,"\u212a":2}`:              `more than once`, // Kelvin sign folds to k
		`{"path":1,"p\u0061th":2}`:        `more than once`,
		"{\"a\xff\":1,\"a\xfe\":2}":       `more than once`, // both U+FFFD
		`[1]`:                             `not a JSON object`,
		`{"a":1} {}`:                      `trailing data`,
		`{"a":01}`:                        `invalid JSON`,
		`{"a":"\x"}`:                      `bad escape`,
		`{"a":tru}`:                       `invalid JSON`,
		`{"a":1,}`:                        `want a key`,
		`{"a" 1}`:                         `want :`,
		`{"a":[1 2]}`:                     `want , or ]`,
		`{"a":"x`:                         `unexpected end`,
		strings.Repeat(`{"a":`, 10002) + `1` + strings.Repeat(`}`, 10002): `nested deeper`,
	} {
		err := CheckUnambiguous([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			if len(in) > 60 {
				in = in[:60]
			}
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

// FuzzCheckUnambiguous: never panics, and accepts only valid JSON objects.
func FuzzCheckUnambiguous(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"c"}]}`))
	f.Add([]byte(`{"a":1,"A":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if CheckUnambiguous(data) == nil {
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatalf("accepted %q: %v", data, err)
			}
		}
	})
}

type named struct {
	Funcs
	timeout time.Duration
}

func (n named) Name() string           { return n.Funcs.Name }
func (n named) Timeout() time.Duration { return n.timeout }

// Requests run in the order given, each seeing the previous rewrite;
// results run in the reverse order.
func TestChainOrder(t *testing.T) {
	var order []string
	mk := func(name string) Interceptor {
		return named{Funcs: Funcs{Name: name,
			OnRequest: func(_ context.Context, r *Request) (Decision, error) {
				order = append(order, "req "+name+" "+string(r.Params))
				var p map[string]any
				_ = json.Unmarshal(r.Params, &p)
				p["by"] = name
				b, _ := json.Marshal(p)
				return Decision{Action: Rewrite, Params: b}, nil
			},
			OnResult: func(_ context.Context, r *Result) (Decision, error) {
				order = append(order, "res "+name+" "+string(r.Result))
				return Decision{Action: Replace, Result: json.RawMessage(`{"by":"` + name + `"}`)}, nil
			}}}
	}
	c := NewChain(mk("a"), mk("b"))
	p, err := c.Request(context.Background(), &Request{Method: "tools/call", Params: json.RawMessage(`{"name":"t"}`)})
	if err != nil || string(p) != `{"by":"b","name":"t"}` {
		t.Fatalf("%s %v", p, err)
	}
	res, err := c.Result(context.Background(), &Result{Request: Request{Method: "tools/call", Params: p}, Result: json.RawMessage(`{}`)})
	if err != nil || string(res) != `{"by":"a"}` {
		t.Fatalf("%s %v", res, err)
	}
	want := []string{`req a {"name":"t"}`, `req b {"by":"a","name":"t"}`, `res b {}`, `res a {"by":"b"}`}
	if strings.Join(order, "|") != strings.Join(want, "|") {
		t.Fatalf("order %q, want %q", order, want)
	}
}

// A denial is -32030 naming the interceptor, with its reason; the chain
// stops there.
func TestChainDeny(t *testing.T) {
	later := false
	c := NewChain(
		named{Funcs: Funcs{Name: "policy", OnRequest: func(context.Context, *Request) (Decision, error) {
			return Decision{Action: Deny, Error: &jsonrpc.Error{Code: 1, Message: "outside /srv"}}, nil
		}}},
		RequestFunc(func(context.Context, *Request) (Decision, error) { later = true; return Decision{}, nil }),
	)
	_, err := c.Request(context.Background(), &Request{Method: "tools/call", Params: json.RawMessage(`{"name":"read_file"}`)})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != CodeDenied || !errors.Is(err, ErrDenied) ||
		!strings.Contains(je.Message, `denied by interceptor "policy"`) || !strings.Contains(je.Message, "outside /srv") {
		t.Fatalf("%v", err)
	}
	if later {
		t.Fatal("the chain went on after a denial")
	}
	if errors.Is(&jsonrpc.Error{Kind: jsonrpc.KindServer, Code: CodeDenied}, ErrDenied) {
		t.Fatal("a server's own -32030 passes for a denial")
	}
	_, err = NewChain(ResultFunc(func(context.Context, *Result) (Decision, error) { return Decision{Action: Deny}, nil })).
		Result(context.Background(), &Result{Request: Request{Method: "tools/call"}, Result: json.RawMessage(`{}`)})
	if !errors.As(err, &je) || je.Code != CodeDenied || !strings.Contains(je.Message, `interceptor "#1"`) || !strings.Contains(je.Message, "withheld") {
		t.Fatalf("%v", err)
	}
}

// Every failure fails closed: an error, a deadline overrun (a decision
// that came too late), an invalid action, an invalid rewrite or
// replacement, ambiguous params or result.
func TestChainFailsClosed(t *testing.T) {
	req := func(d Decision, err error) Interceptor {
		return RequestFunc(func(context.Context, *Request) (Decision, error) { return d, err })
	}
	// A Timeouter whose decision comes after its deadline and the grace.
	slow := named{timeout: 10 * time.Millisecond, Funcs: Funcs{Name: "slow", OnRequest: func(ctx context.Context, _ *Request) (Decision, error) {
		time.Sleep(10*time.Millisecond + timeoutGrace + 50*time.Millisecond)
		return Decision{}, nil
	}}}
	// Another interceptor runs under a context that ends with the
	// caller's (and at DefaultTimeout): a decision given after it ended is
	// not taken.
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	late := RequestFunc(func(ctx context.Context, _ *Request) (Decision, error) {
		<-ctx.Done()
		return Decision{}, nil
	})
	if _, err := NewChain(late).Request(cancelled, &Request{Method: "tools/call", Params: json.RawMessage(`{"name":"t"}`)}); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("late: %v", err)
	}
	for name, tc := range map[string]struct {
		i      Interceptor
		params string
		want   string
	}{
		"error":         {req(Decision{}, errors.New("boom")), `{"name":"t"}`, "boom"},
		"deadline":      {slow, `{"name":"t"}`, "deadline of 10ms exceeded"},
		"replace":       {req(Decision{Action: Replace, Result: json.RawMessage(`{}`)}, nil), `{"name":"t"}`, "invalid decision replace"},
		"not object":    {req(Decision{Action: Rewrite, Params: json.RawMessage(`[1]`)}, nil), `{"name":"t"}`, "not a JSON object"},
		"no params":     {req(Decision{Action: Rewrite}, nil), `{"name":"t"}`, "not a JSON object"},
		"renamed":       {req(Decision{Action: Rewrite, Params: json.RawMessage(`{"name":"rm"}`)}, nil), `{"name":"t"}`, `changes "name"`},
		"name dropped":  {req(Decision{Action: Rewrite, Params: json.RawMessage(`{"arguments":{}}`)}, nil), `{"name":"t"}`, `changes "name"`},
		"forged state":  {req(Decision{Action: Rewrite, Params: json.RawMessage(`{"name":"t","requestState":"x"}`)}, nil), `{"name":"t"}`, `changes "requestState"`},
		"ambiguous out": {req(Decision{Action: Rewrite, Params: json.RawMessage(`{"name":"t","a":1,"A":2}`)}, nil), `{"name":"t"}`, "more than once"},
		"ambiguous in":  {req(Decision{}, nil), `{"name":"t","arguments":{"path":"/ok","path":"/etc/passwd"}}`, `object at arguments has the key "path"`},
	} {
		_, err := NewChain(tc.i).Request(context.Background(), &Request{Method: "tools/call", Params: json.RawMessage(tc.params)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	res := func(d Decision) Interceptor {
		return ResultFunc(func(context.Context, *Result) (Decision, error) { return d, nil })
	}
	for name, tc := range map[string]struct {
		i      Interceptor
		result string
		want   string
	}{
		"rewrite":      {res(Decision{Action: Rewrite, Params: json.RawMessage(`{}`)}), `{}`, "invalid decision rewrite"},
		"both":         {res(Decision{Action: Replace, Result: json.RawMessage(`{}`), Error: &jsonrpc.Error{Code: 1}}), `{}`, "exactly one"},
		"bad result":   {res(Decision{Action: Replace, Result: json.RawMessage(`{"a":1,"a":2}`)}), `{}`, "more than once"},
		"ambiguous in": {res(Decision{}), `{"content":[{"type":"text","text":"ok","Text":"secret"}]}`, "withheld"},
	} {
		_, err := NewChain(tc.i).Result(context.Background(), &Result{Request: Request{Method: "tools/call"}, Result: json.RawMessage(tc.result)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

// A replacement error reaches the caller as if the server had answered it;
// interceptors that do not want a method are skipped, and an empty chain
// passes everything unchecked.
func TestChainReplaceErrorAndFilter(t *testing.T) {
	c := NewChain(ResultFunc(func(_ context.Context, r *Result) (Decision, error) {
		if r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("given %+v", r)
		}
		return Decision{Action: Replace, Error: &jsonrpc.Error{Code: -32000, Message: "hidden"}}, nil
	}))
	_, err := c.Result(context.Background(), &Result{Request: Request{Method: "x"}, Error: &jsonrpc.Error{Code: -32602, Message: "bad"}})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != -32000 || je.Kind != jsonrpc.KindServer {
		t.Fatalf("%v", err)
	}
	var nilChain *Chain
	if p, err := nilChain.Request(context.Background(), &Request{Method: "x", Params: json.RawMessage(`{"a":1,"a":2}`)}); err != nil || string(p) != `{"a":1,"a":2}` {
		t.Fatalf("%s %v", p, err)
	}
	only := NewChain(Funcs{OnResult: func(context.Context, *Result) (Decision, error) { return Decision{Action: Deny}, nil }})
	if only.Intercepts("x", false) || !only.Intercepts("x", true) {
		t.Fatal("Funcs filter")
	}
}

// Observe reports decisions other than continue, and failures.
func TestObserve(t *testing.T) {
	var got []Event
	i := Observe(named{Funcs: Funcs{Name: "n", OnRequest: func(_ context.Context, r *Request) (Decision, error) {
		if r.Method == "deny" {
			return Decision{Action: Deny, Error: &jsonrpc.Error{Message: "no"}}, nil
		}
		return Decision{}, nil
	}}}, func(e Event) { got = append(got, e) })
	c := NewChain(i)
	c.Request(context.Background(), &Request{Method: "ok", Params: json.RawMessage(`{}`)})
	c.Request(context.Background(), &Request{Method: "deny", Params: json.RawMessage(`{}`)})
	if len(got) != 1 || got[0].Interceptor != "n" || got[0].Action != Deny || got[0].Message != "no" || got[0].Method != "deny" {
		t.Fatalf("%+v", got)
	}
}
