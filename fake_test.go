package snodo_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo/internal/schemacheck"
	"github.com/snodo/snodo/internal/subbuf"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

var (
	checkerOnce sync.Once
	checker     *schemacheck.Checker
	checkerErr  error
)

func loadChecker(t testing.TB) *schemacheck.Checker {
	checkerOnce.Do(func() { checker, checkerErr = schemacheck.Load() })
	if checkerErr != nil {
		t.Fatal(checkerErr)
	}
	return checker
}

// fakeCall is one request as the fake server sees it.
type fakeCall struct {
	Req  *jsonrpc.Request
	Opts transport.RequestOptions
	f    *fake
}

// param decodes one member of the request's params.
func (fc *fakeCall) param(name string) json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(fc.Req.Params, &m)
	return m[name]
}

// meta decodes one member of the request's _meta.
func (fc *fakeCall) meta(name string) json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(fc.param("_meta"), &m)
	return m[name]
}

// progress delivers a progress notification to the caller, as a transport
// does, in the caller's goroutine.
func (fc *fakeCall) progress(params string) error {
	if fc.Opts.OnProgress == nil {
		return nil
	}
	return fc.Opts.OnProgress(json.RawMessage(params))
}

// fake is an in-memory transport with a scripted server. It validates
// every message the client writes against the JSON Schema of the version
// in use, and records it.
type fake struct {
	t      testing.TB
	handle func(fc *fakeCall) *jsonrpc.Response // nil response: no answer
	listen func(req *jsonrpc.Request, sub *subbuf.Buffer[transport.Event]) (json.RawMessage, error)

	mu            sync.Mutex
	nextID        int64
	legacyVersion string
	calls         []*fakeCall
	notifications []*jsonrpc.Notification
	onRequest     transport.DispatchFunc
	onNotif       transport.NotificationFunc
	closed        bool
}

// newFake returns a fake server answering with handle.
func newFake(t testing.TB, handle func(fc *fakeCall) *jsonrpc.Response) *fake {
	loadChecker(t)
	return &fake{t: t, handle: handle, legacyVersion: schemacheck.Legacy}
}

func result(fc *fakeCall, v string) *jsonrpc.Response {
	return jsonrpc.NewResult(fc.Req.ID, json.RawMessage(v))
}

func errorResponse(fc *fakeCall, code int64, msg, data string) *jsonrpc.Response {
	e := &jsonrpc.Error{Kind: jsonrpc.KindServer, Code: code, Message: msg}
	if data != "" {
		e.Data = json.RawMessage(data)
	}
	return jsonrpc.NewErrorResponse(fc.Req.ID, e)
}

// schemaFor picks the schema of a client message: 2026-07-28 when its
// _meta names a modern version, 2025-11-25 otherwise.
func schemaFor(params json.RawMessage) string {
	var p struct {
		Meta struct {
			Version string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p)
	if p.Meta.Version != "" {
		return schemacheck.SchemaFor(p.Meta.Version)
	}
	return schemacheck.Legacy
}

func (f *fake) Request(ctx context.Context, req *jsonrpc.Request, opts transport.RequestOptions) (*jsonrpc.Response, error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, transport.ConnectionError("closed", nil)
	}
	r := *req
	if !r.ID.IsValid() {
		f.nextID++
		r.ID = jsonrpc.Int64ID(f.nextID)
	}
	fc := &fakeCall{Req: &r, Opts: opts, f: f}
	f.calls = append(f.calls, fc)
	f.mu.Unlock()

	wire, err := jsonrpc.Encode(&r)
	if err != nil {
		f.t.Errorf("client request does not encode: %v", err)
		return nil, err
	}
	check := loadChecker(f.t).ClientRequest
	if strings.HasPrefix(r.Method, "x/") || (strings.HasPrefix(r.Method, "tasks/") && schemaFor(r.Params) == schemacheck.Modern) {
		// An extension method (the 2026-07-28 tasks extension's among
		// them): only the JSON-RPC envelope is in the schema.
		check = func(v string, b []byte) error { return loadChecker(f.t).Validate(v, "JSONRPCRequest", b) }
	}
	if err := check(schemaFor(r.Params), wire); err != nil {
		f.t.Errorf("client request is not schema-valid: %v\n%s", err, wire)
	}
	resp := f.handle(fc)
	if resp != nil {
		return resp, nil
	}
	var timer <-chan time.Time
	if opts.Timeout > 0 {
		tm := time.NewTimer(opts.Timeout)
		defer tm.Stop()
		timer = tm.C
	}
	select {
	case <-ctx.Done():
		return nil, transport.ConnectionError("request abandoned", ctx.Err())
	case <-timer:
		return nil, transport.TimeoutError(opts.Timeout)
	}
}

func (f *fake) Notify(ctx context.Context, n *jsonrpc.Notification, opts transport.NotifyOptions) error {
	wire, err := jsonrpc.Encode(n)
	if err != nil {
		return err
	}
	if err := loadChecker(f.t).ClientNotification(f.legacyVersion, wire); err != nil {
		f.t.Errorf("client notification is not schema-valid: %v\n%s", err, wire)
	}
	f.mu.Lock()
	f.notifications = append(f.notifications, n)
	f.mu.Unlock()
	return nil
}

var _ transport.Inbound = (*fake)(nil)

func (f *fake) SetInbound(onRequest transport.DispatchFunc, onNotification transport.NotificationFunc) {
	f.mu.Lock()
	f.onRequest, f.onNotif = onRequest, onNotification
	f.mu.Unlock()
}

func (f *fake) Listen(ctx context.Context, req *jsonrpc.Request, opts transport.ListenOptions) (json.RawMessage, *transport.Subscription, error) {
	f.mu.Lock()
	r := *req
	f.nextID++
	r.ID = jsonrpc.Int64ID(f.nextID)
	f.calls = append(f.calls, &fakeCall{Req: &r, f: f})
	f.mu.Unlock()
	wire, _ := jsonrpc.Encode(&r)
	if err := loadChecker(f.t).ClientRequest(schemaFor(r.Params), wire); err != nil {
		f.t.Errorf("listen request is not schema-valid: %v\n%s", err, wire)
	}
	cfg := subbuf.Config{Max: opts.MaxBuffer, Overflow: subbuf.Policy(opts.Overflow)}
	sub := subbuf.New[transport.Event](ctx, r.ID, cfg, func() error { return nil })
	accepted, err := f.listen(&r, sub)
	if err != nil {
		return nil, nil, err
	}
	return accepted, (*transport.Subscription)(sub), nil
}

func (f *fake) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	return nil
}

// serverRequest sends a request from the server to the client, as the
// transport would, and returns the response the client writes (validated
// against the schema).
func (f *fake) serverRequest(ctx context.Context, id int64, method, params string) *jsonrpc.Response {
	f.mu.Lock()
	on := f.onRequest
	f.mu.Unlock()
	if on == nil {
		f.t.Fatal("the client installed no server-request answerer")
	}
	req := &jsonrpc.Request{ID: jsonrpc.Int64ID(id), Method: method, Params: json.RawMessage(params)}
	type answer struct {
		res json.RawMessage
		err error
	}
	answered := make(chan answer, 2)
	if work := on(ctx, req, func(res json.RawMessage, err error) { answered <- answer{res, err} }); work != nil {
		go work()
	}
	a := <-answered
	res, err := a.res, a.err
	var resp *jsonrpc.Response
	if err != nil {
		var e *jsonrpc.Error
		if !errors.As(err, &e) {
			e = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		resp = jsonrpc.NewErrorResponse(req.ID, e)
	} else {
		resp = jsonrpc.NewResult(req.ID, res)
	}
	wire, err := jsonrpc.Encode(resp)
	if err != nil {
		f.t.Errorf("client response does not encode: %v", err)
		return resp
	}
	if err := loadChecker(f.t).ClientResponse(f.legacyVersion, method, wire); err != nil {
		f.t.Errorf("client response is not schema-valid: %v\n%s", err, wire)
	}
	return resp
}

// notify sends a notification from the server to the client.
func (f *fake) notify(method, params string) {
	f.mu.Lock()
	on := f.onNotif
	f.mu.Unlock()
	on(&jsonrpc.Notification{Method: method, Params: json.RawMessage(params)})
}

// sent returns the recorded requests of method.
func (f *fake) sent(method string) []*fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*fakeCall
	for _, c := range f.calls {
		if c.Req.Method == method {
			out = append(out, c)
		}
	}
	return out
}

func (f *fake) methods() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		out = append(out, c.Req.Method)
	}
	return out
}

// Scripts for the two eras.

const discoverResult = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true}},"instructions":"be nice","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fake","version":"1.2.3"}},"ttlMs":1000,"cacheScope":"public"}`

func initializeResult(version string) string {
	return `{"protocolVersion":"` + version + `","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{}},"serverInfo":{"name":"legacy-fake","version":"0.9"},"instructions":"legacy hello"}`
}

// modernServer answers server/discover and passes the rest to next.
func modernServer(next func(fc *fakeCall) *jsonrpc.Response) func(fc *fakeCall) *jsonrpc.Response {
	return func(fc *fakeCall) *jsonrpc.Response {
		if fc.Req.Method == "server/discover" {
			return result(fc, discoverResult)
		}
		return next(fc)
	}
}

// legacyServer refuses server/discover, as a legacy server does, answers
// initialize with version, and passes the rest to next.
func legacyServer(version string, next func(fc *fakeCall) *jsonrpc.Response) func(fc *fakeCall) *jsonrpc.Response {
	return func(fc *fakeCall) *jsonrpc.Response {
		switch fc.Req.Method {
		case "server/discover":
			return errorResponse(fc, jsonrpc.CodeMethodNotFound, "Method not found", "")
		case "initialize":
			return result(fc, initializeResult(version))
		}
		return next(fc)
	}
}

func noMore(fc *fakeCall) *jsonrpc.Response {
	return errorResponse(fc, jsonrpc.CodeMethodNotFound, "unexpected "+fc.Req.Method, "")
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
