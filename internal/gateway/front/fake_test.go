package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/jsonrpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeHub is a gateway.Hub that counts the calls that reach it.
//
//	tools/list          one tool, "demo__echo"
//	tools/call echo     the arguments back as text
//	tools/call progress two notifications/progress, then "done"
//	tools/call ask      an elicitation/create to the host; its answer as text
//	tools/call block    waits for the request's end (the host's cancel)
//	tools/call input    an input_required result (2026-07-28)
type fakeHub struct {
	calls    atomic.Int64
	ended    atomic.Int64
	ready    error
	mu       sync.Mutex
	requests []*gateway.Request
	blocked  chan struct{} // receives when a "block" call starts
	released chan error    // receives the cause when a "block" call ends
}

func newFakeHub() *fakeHub {
	return &fakeHub{blocked: make(chan struct{}, 16), released: make(chan error, 16)}
}

func (h *fakeHub) Info() gateway.Info {
	return gateway.Info{
		ServerInfo:   json.RawMessage(`{"name":"fake-gateway","version":"1.0.0"}`),
		Capabilities: json.RawMessage(`{"tools":{"listChanged":true}}`),
		Instructions: "a fake gateway",
	}
}

func (h *fakeHub) last() *gateway.Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests[len(h.requests)-1]
}

func (h *fakeHub) Handle(ctx context.Context, r *gateway.Request) (json.RawMessage, error) {
	h.calls.Add(1)
	h.mu.Lock()
	h.requests = append(h.requests, r)
	h.mu.Unlock()
	switch r.Method {
	case "tools/list":
		return json.RawMessage(`{"tools":[{"name":"demo__echo","inputSchema":{"type":"object"}}]}`), nil
	case "tools/call":
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "fake hub: no " + r.Method}
	}
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(r.Params, &p); err != nil {
		return nil, err
	}
	text := func(s string) (json.RawMessage, error) {
		b, _ := json.Marshal(s)
		return json.RawMessage(`{"content":[{"type":"text","text":` + string(b) + `}]}`), nil
	}
	switch p.Name {
	case "demo__echo":
		return text(string(p.Arguments))
	case "demo__progress":
		for i := 1; i <= 2; i++ {
			if err := r.Notify("notifications/progress", json.RawMessage(fmt.Sprintf(`{"progressToken":%s,"progress":%d,"total":2}`, p.Meta.ProgressToken, i))); err != nil {
				return nil, err
			}
		}
		return text("done")
	case "demo__ask":
		if r.Ask == nil {
			return nil, errors.New("the host cannot be asked")
		}
		res, err := r.Ask(ctx, "elicitation/create", json.RawMessage(`{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`))
		if err != nil {
			return nil, err
		}
		return text(string(res))
	case "demo__block":
		h.blocked <- struct{}{}
		<-ctx.Done()
		h.released <- context.Cause(ctx)
		return nil, ctx.Err()
	case "demo__input":
		return json.RawMessage(`{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{}}}}}}`), nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "fake hub: unknown tool " + p.Name}
}

func (h *fakeHub) Listen(ctx context.Context, r *gateway.Request, emit func(string, json.RawMessage) error) (json.RawMessage, error) {
	h.calls.Add(1)
	id := string(r.ID)
	if err := emit("notifications/subscriptions/acknowledged", json.RawMessage(`{"_meta":{"io.modelcontextprotocol/subscriptionId":`+id+`},"notifications":{"toolsListChanged":true}}`)); err != nil {
		return nil, err
	}
	if err := emit("notifications/tools/list_changed", json.RawMessage(`{"_meta":{"io.modelcontextprotocol/subscriptionId":`+id+`}}`)); err != nil {
		return nil, err
	}
	<-ctx.Done()
	h.released <- context.Cause(ctx)
	return nil, ctx.Err()
}

func (h *fakeHub) Watch(ctx context.Context, session string, id *gateway.Identity, emit func(string, json.RawMessage) error) {
	h.calls.Add(1)
	_ = emit("notifications/tools/list_changed", nil)
	<-ctx.Done()
}

func (h *fakeHub) EndSession(string) { h.ended.Add(1) }
func (h *fakeHub) Ready() error      { return h.ready }

// fakePolicy knows two tokens: "alice" and "bob"; "banned" is refused
// with a non-ErrUnauthorized error.
type fakePolicy struct{}

func (fakePolicy) Authenticate(r *http.Request) (*gateway.Identity, error) {
	if r == nil {
		return &gateway.Identity{Name: "local"}, nil
	}
	switch r.Header.Get("Authorization") {
	case "Bearer alice":
		return &gateway.Identity{Name: "alice"}, nil
	case "Bearer bob":
		return &gateway.Identity{Name: "bob"}, nil
	case "Bearer banned":
		return nil, errors.New("identity banned is disabled")
	}
	return nil, fmt.Errorf("%w: unknown token", gateway.ErrUnauthorized)
}
func (fakePolicy) AllowServer(*gateway.Identity, string) bool       { return true }
func (fakePolicy) AllowTool(*gateway.Identity, string, string) bool { return true }
func (fakePolicy) Admit(context.Context, *gateway.Identity, string) (func(), error) {
	return func() {}, nil
}
