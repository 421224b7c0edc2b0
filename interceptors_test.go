package snodo_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/jsonrpc"
)

// connectEra connects to the fake in either era.
func connectEra(t *testing.T, modern bool, next func(fc *fakeCall) *jsonrpc.Response, opts ...*snodo.Options) (*snodo.Client, *fake) {
	t.Helper()
	if modern {
		return connectModern(t, next, opts...)
	}
	return connectLegacy(t, next, opts...)
}

func toolResult(modern bool, body string) string {
	if modern {
		return `{"resultType":"complete",` + body[1:]
	}
	return body
}

// confine denies tools/call whose path argument is outside /srv.
var confine = intercept.Funcs{Name: "confine", OnRequest: func(_ context.Context, r *intercept.Request) (intercept.Decision, error) {
	var p struct {
		Arguments struct {
			Path string `json:"path"`
		} `json:"arguments"`
	}
	if err := json.Unmarshal(r.Params, &p); err != nil {
		return intercept.Decision{}, err
	}
	if !strings.HasPrefix(p.Arguments.Path, "/srv/") || strings.Contains(p.Arguments.Path, "..") {
		return intercept.Decision{Action: intercept.Deny, Error: &jsonrpc.Error{Message: p.Arguments.Path + " is outside /srv"}}, nil
	}
	return intercept.Decision{}, nil
}}

// Options.Interceptors: a denied request fails with -32030 naming the
// interceptor and is never sent, in both eras; an allowed one is sent.
func TestInterceptorDeniedRequestNeverReachesTheServer(t *testing.T) {
	eras(t, func(t *testing.T, modern bool) {
		c, f := connectEra(t, modern, func(fc *fakeCall) *jsonrpc.Response {
			return result(fc, toolResult(modern, `{"content":[{"type":"text","text":"ok"}]}`))
		}, &snodo.Options{Interceptors: []intercept.Interceptor{confine}})
		ctx := context.Background()
		for _, path := range []string{"/etc/passwd", "/srv/../etc/passwd"} {
			_, err := c.CallTool(ctx, "read_file", map[string]string{"path": path})
			var je *snodo.Error
			if !errors.As(err, &je) || je.Code != intercept.CodeDenied || !errors.Is(err, intercept.ErrDenied) ||
				!strings.Contains(je.Message, `denied by interceptor "confine"`) || !strings.Contains(je.Message, "outside /srv") {
				t.Fatalf("%s: %v", path, err)
			}
		}
		if n := len(f.sent("tools/call")); n != 0 {
			t.Fatalf("%d denied tools/call reached the server", n)
		}
		if _, err := c.CallTool(ctx, "read_file", map[string]string{"path": "/srv/a"}); err != nil {
			t.Fatal(err)
		}
		if n := len(f.sent("tools/call")); n != 1 {
			t.Fatalf("%d tools/call sent, want 1", n)
		}
	})
}

// A rewrite is what the server gets, in every round of a 2026-07-28 multi
// round-trip request; the interceptor runs once per call.
func TestInterceptorRewriteIsSentInEveryRound(t *testing.T) {
	var calls int
	var mu sync.Mutex
	rewrite := intercept.RequestFunc(func(_ context.Context, r *intercept.Request) (intercept.Decision, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		if r.Method != "tools/call" {
			return intercept.Decision{}, nil
		}
		return intercept.Decision{Action: intercept.Rewrite, Params: json.RawMessage(`{"name":"greet","arguments":{"who":"checked"}}`)}, nil
	})
	c, f := connectModern(t, func(fc *fakeCall) *jsonrpc.Response {
		if fc.param("inputResponses") == nil {
			return result(fc, `{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create","params":`+elicitParams+`}},"requestState":"s"}`)
		}
		return result(fc, `{"resultType":"complete","content":[{"type":"text","text":"hello"}]}`)
	}, &snodo.Options{Interceptors: []intercept.Interceptor{rewrite}, Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: nameHandler}})
	if _, err := c.CallTool(context.Background(), "greet", map[string]string{"who": "raw"}); err != nil {
		t.Fatal(err)
	}
	sent := f.sent("tools/call")
	if len(sent) != 2 {
		t.Fatalf("%d tools/call, want 2", len(sent))
	}
	for i, fc := range sent {
		if string(fc.param("arguments")) != `{"who":"checked"}` {
			t.Errorf("round %d sent %s", i, fc.Req.Params)
		}
	}
	if calls != 1 {
		t.Errorf("interceptor called %d times, want once", calls)
	}
}

// Results, and the server's errors, go through the result interceptors in
// both eras: a planted secret is redacted, an error can be replaced.
func TestInterceptorRedactsResultsAndSeesErrors(t *testing.T) {
	eras(t, func(t *testing.T, modern bool) {
		redact := intercept.ResultFunc(func(_ context.Context, r *intercept.Result) (intercept.Decision, error) {
			if r.Error != nil {
				return intercept.Decision{Action: intercept.Replace, Error: &jsonrpc.Error{Code: r.Error.Code, Message: "redacted error"}}, nil
			}
			if r.Method != "tools/call" {
				return intercept.Decision{}, nil
			}
			out := strings.ReplaceAll(string(r.Result), "sk-live-0123456789abcdef", "[REDACTED]")
			return intercept.Decision{Action: intercept.Replace, Result: json.RawMessage(out)}, nil
		})
		c, _ := connectEra(t, modern, func(fc *fakeCall) *jsonrpc.Response {
			var p struct{ Name string }
			_ = json.Unmarshal(fc.Req.Params, &p)
			if p.Name == "fail" {
				return errorResponse(fc, jsonrpc.CodeInvalidParams, "key sk-live-0123456789abcdef is bad", "")
			}
			return result(fc, toolResult(modern, `{"content":[{"type":"text","text":"key=sk-live-0123456789abcdef"}]}`))
		}, &snodo.Options{Interceptors: []intercept.Interceptor{redact}})
		ctx := context.Background()
		res, err := c.CallTool(ctx, "env", nil)
		if err != nil || res.Content[0].Text != "key=[REDACTED]" {
			t.Fatalf("%+v %v", res, err)
		}
		_, err = c.CallTool(ctx, "fail", nil)
		var je *snodo.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || je.Message != "redacted error" {
			t.Fatalf("%v", err)
		}
	})
}

// Task polling goes through the interceptors (tasks/get, tasks/result);
// the handshake does not.
func TestInterceptorSeesTaskPollingNotTheHandshake(t *testing.T) {
	eras(t, func(t *testing.T, modern bool) {
		recordPolls(t)
		var mu sync.Mutex
		seen := map[string]int{}
		rec := intercept.Funcs{
			OnRequest: func(_ context.Context, r *intercept.Request) (intercept.Decision, error) {
				mu.Lock()
				seen["req "+r.Method]++
				mu.Unlock()
				if r.Era != map[bool]string{true: "modern", false: "legacy"}[modern] || r.ProtocolVersion == "" {
					t.Errorf("era %q version %q", r.Era, r.ProtocolVersion)
				}
				return intercept.Decision{}, nil
			},
			OnResult: func(_ context.Context, r *intercept.Result) (intercept.Decision, error) {
				mu.Lock()
				seen["res "+r.Method]++
				mu.Unlock()
				return intercept.Decision{}, nil
			},
		}
		c, _ := connectTasks(t, modern, fullTaskCaps, func(fc *fakeCall) *jsonrpc.Response {
			switch fc.Req.Method {
			case "tools/list":
				return result(fc, `{"tools":[{"name":"slow","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]}`)
			case "tools/call":
				return result(fc, created(modern, "t-1", poll(modern, 250)))
			case "tasks/get":
				extra := poll(modern, 400)
				if modern {
					extra += `,"result":` + doneResult
				}
				return result(fc, task(modern, "t-1", "completed", extra))
			case "tasks/result":
				return result(fc, `{"content":[{"type":"text","text":"done"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-1"}}}`)
			}
			return noMore(fc)
		}, &snodo.Options{Interceptors: []intercept.Interceptor{rec}})
		ctx := context.Background()
		for _, err := range c.Tools(ctx) {
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.CallTool(ctx, "slow", nil); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, m := range []string{"req tools/call", "res tools/call", "req tasks/get", "res tasks/get"} {
			if seen[m] == 0 {
				t.Errorf("interceptors did not see %s: %v", m, seen)
			}
		}
		if !modern && seen["res tasks/result"] == 0 {
			t.Errorf("interceptors did not see tasks/result: %v", seen)
		}
		for _, m := range []string{"req initialize", "req server/discover"} {
			if seen[m] != 0 {
				t.Errorf("the handshake was intercepted: %v", seen)
			}
		}
	})
}

// With interceptors, arguments a decoder could read two ways are refused
// and not sent; an interceptor that fails keeps the request from the
// server too (fail closed).
func TestInterceptorAmbiguousOrFailingNeverReachesTheServer(t *testing.T) {
	eras(t, func(t *testing.T, modern bool) {
		failing := intercept.RequestFunc(func(_ context.Context, r *intercept.Request) (intercept.Decision, error) {
			if strings.Contains(string(r.Params), "boom") {
				return intercept.Decision{}, errors.New("policy store unreachable")
			}
			return intercept.Decision{}, nil
		})
		c, f := connectEra(t, modern, func(fc *fakeCall) *jsonrpc.Response {
			return result(fc, toolResult(modern, `{"content":[]}`))
		}, &snodo.Options{Interceptors: []intercept.Interceptor{failing}})
		ctx := context.Background()
		_, err := c.Request(ctx, "tools/call", json.RawMessage(`{"name":"read_file","arguments":{"path":"/srv/a","path":"/etc/passwd"}}`))
		var je *snodo.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, `the key "path"`) {
			t.Fatalf("%v", err)
		}
		_, err = c.CallTool(ctx, "boom", nil)
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError || !errors.Is(err, intercept.ErrFailed) ||
			!strings.Contains(je.Message, "policy store unreachable") || !strings.Contains(je.Message, "the request was not sent") {
			t.Fatalf("%v", err)
		}
		if n := len(f.sent("tools/call")); n != 0 {
			t.Fatalf("%d refused tools/call reached the server", n)
		}
	})
}

// With an interceptor of a method, the 2026-07-28 result cache serves no
// result of it: every call passes the interceptors, which may decide
// differently each time (another caller, another policy).
func TestInterceptorBypassesTheResultCache(t *testing.T) {
	var seen atomic.Int64
	deny := false
	i := intercept.RequestFunc(func(context.Context, *intercept.Request) (intercept.Decision, error) {
		seen.Add(1)
		if deny {
			return intercept.Decision{Action: intercept.Deny}, nil
		}
		return intercept.Decision{}, nil
	})
	c, _, _, served, _ := cacheClient(t, false, `"ttlMs":60000,"cacheScope":"public"`, &snodo.Options{Interceptors: []intercept.Interceptor{i}})
	firstTool(t, c, "")
	deny = true
	if _, err := snodo.ListTools(c, context.Background(), ""); !errors.Is(err, intercept.ErrDenied) {
		t.Fatalf("a cached result was served past the interceptor: %v", err)
	}
	if seen.Load() != 2 || served.Load() != 1 {
		t.Fatalf("interceptor saw %d requests, server %d; want 2 and 1", seen.Load(), served.Load())
	}
}
