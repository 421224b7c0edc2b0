package rpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/internal/transporttest"
)

// The contract every transport keeps: each test proves one sentence of the
// transport behaviour (quoted above it), once, on each transport.

// request sends req in the background; its outcome arrives on the channel.
type outcome struct {
	resp *jsonrpc.Response
	err  error
}

func request(tr transport.Transport, req *jsonrpc.Request, opts transport.RequestOptions) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		resp, err := tr.Request(context.Background(), req, opts)
		ch <- outcome{resp, err}
	}()
	return ch
}

func recvRequest(t *testing.T, p peer) *jsonrpc.Request {
	t.Helper()
	for {
		if r, ok := p.recv(t).(*jsonrpc.Request); ok {
			return r
		}
	}
}

// "A transport moves one complete JSON-RPC request to a server and returns
// the complete JSON-RPC response ... a transport never interprets result
// or error." An error response is the response, not a Go error; the ID
// the transport gave a zero-ID request is the response's, and the request
// passed in keeps its zero ID; a caller's own ID goes out as it is and
// comes back on the response.
func TestContractMovesOneRequestAndItsResponseUninterpreted(t *testing.T) {
	each(t, func(t *testing.T, tr transportUnderTest, p peer) {
		req := &jsonrpc.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"x"}`)}
		ch := request(tr, req, transport.RequestOptions{})
		r := recvRequest(t, p)
		if r.Method != "tools/call" || string(r.Params) != `{"name":"x"}` || !r.ID.IsValid() {
			t.Fatalf("server got %+v", r)
		}
		p.send(t, transporttest.Response(r.ID, `"result":{"anything":[1,"two"]}`))
		o := transporttest.Recv(t, ch, "Request")
		if o.err != nil || o.resp.ID != r.ID || string(o.resp.Result) != `{"anything":[1,"two"]}` {
			t.Fatalf("got %+v, %v", o.resp, o.err)
		}
		if req.ID.IsValid() {
			t.Fatalf("the request passed in was given the ID %v", req.ID)
		}

		ch = request(tr, &jsonrpc.Request{ID: jsonrpc.StringID("mine"), Method: "m"}, transport.RequestOptions{})
		r = recvRequest(t, p)
		if r.ID != jsonrpc.StringID("mine") {
			t.Fatalf("the caller's ID became %v", r.ID)
		}
		p.send(t, transporttest.Response(r.ID, `"error":{"code":-32602,"message":"bad","data":{"k":1}}`))
		o = transporttest.Recv(t, ch, "Request")
		if o.err != nil || o.resp.ID != r.ID || o.resp.Error == nil || o.resp.Error.Code != -32602 || string(o.resp.Error.Data) != `{"k":1}` {
			t.Fatalf("error response: %+v, %v", o.resp, o.err)
		}
	})
}

// "A caller that sets IDs itself must not reuse one that is still in
// flight": the transport refuses it (-32600, kind transport) rather than
// confuse two calls, whether a request or an open subscription holds it.
func TestContractRefusesAnIDInFlight(t *testing.T) {
	each(t, func(t *testing.T, tr transportUnderTest, p peer) {
		ch := request(tr, &jsonrpc.Request{ID: jsonrpc.Int64ID(7), Method: "m"}, transport.RequestOptions{})
		r := recvRequest(t, p)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_, err := tr.Request(ctx, &jsonrpc.Request{ID: jsonrpc.Int64ID(7), Method: "m"}, transport.RequestOptions{})
		if je := transporttest.WantCode(t, err, jsonrpc.CodeInvalidRequest); je.Kind != jsonrpc.KindTransport {
			t.Fatalf("second request with ID 7: %v, want kind transport", err)
		}
		p.send(t, transporttest.Response(r.ID, `"result":{}`))
		if o := transporttest.Recv(t, ch, "Request"); o.err != nil {
			t.Fatal(o.err)
		}

		l := listenAcked(t, context.Background(), tr, p, &jsonrpc.Request{ID: jsonrpc.StringID("sub"), Method: "subscriptions/listen"})
		defer l.sub.Close()
		_, err = tr.Request(ctx, &jsonrpc.Request{ID: jsonrpc.StringID("sub"), Method: "m"}, transport.RequestOptions{})
		transporttest.WantCode(t, err, jsonrpc.CodeInvalidRequest)
	})
}

// ":timeout - milliseconds to wait for the response": past it the request
// fails with timeout_error (-32001) and the server is told.
func TestContractTimeoutFailsAndCancelsOnTheServer(t *testing.T) {
	each(t, func(t *testing.T, tr transportUnderTest, p peer) {
		ch := request(tr, &jsonrpc.Request{Method: "slow"}, transport.RequestOptions{Timeout: 50 * time.Millisecond})
		r := recvRequest(t, p)
		o := transporttest.Recv(t, ch, "Request")
		je := transporttest.WantCode(t, o.err, jsonrpc.CodeRequestTimeout)
		if je.Kind != jsonrpc.KindTransport || !errors.Is(o.err, transport.ErrTimeout) || errors.Is(o.err, transport.ErrMaxTotalTimeout) {
			t.Fatalf("got %v, want a timeout error of kind transport", o.err)
		}
		p.cancelled(t, r.ID)
	})
}

// "The initialize request MUST NOT be cancelled by clients"
// (basic/utilities/cancellation): an initialize given up at its timeout
// fails the same way, but the server is sent no notifications/cancelled —
// the next message it gets is the next request.
func TestContractInitializeIsNeverCancelled(t *testing.T) {
	each(t, func(t *testing.T, tr transportUnderTest, p peer) {
		ch := request(tr, &jsonrpc.Request{Method: "initialize", Params: json.RawMessage(`{}`)}, transport.RequestOptions{Timeout: 50 * time.Millisecond})
		init := recvRequest(t, p)
		o := transporttest.Recv(t, ch, "Request")
		transporttest.WantCode(t, o.err, jsonrpc.CodeRequestTimeout)
		_ = request(tr, &jsonrpc.Request{Method: "next"}, transport.RequestOptions{Timeout: time.Minute})
		for {
			m := p.recv(t)
			if isCancellation(m, init.ID) {
				t.Fatalf("the client cancelled initialize: %v", m)
			}
			if r, ok := m.(*jsonrpc.Request); ok && r.Method == "next" {
				return
			}
		}
	})
}

// The caller's context ending gives the request up the same way: an error
// of kind transport wrapping ctx's, with its cause, and the server told. A
// deadline is a -32001 that is also context.DeadlineExceeded.
func TestContractContextEndCancelsOnTheServer(t *testing.T) {
	each(t, func(t *testing.T, tr transportUnderTest, p peer) {
		ctx, cancel := context.WithCancelCause(context.Background())
		why := errors.New("user pressed stop")
		ch := make(chan error, 1)
		go func() {
			_, err := tr.Request(ctx, &jsonrpc.Request{Method: "slow"}, transport.RequestOptions{})
			ch <- err
		}()
		r := recvRequest(t, p)
		cancel(why)
		err := transporttest.Recv(t, ch, "Request")
		var je *jsonrpc.Error
		if !errors.Is(err, context.Canceled) || !errors.Is(err, why) || !errors.As(err, &je) || je.Kind != jsonrpc.KindTransport {
			t.Fatalf("got %v, want one of kind transport wrapping context.Canceled and its cause", err)
		}
		p.cancelled(t, r.ID)

		dctx, dcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer dcancel()
		go func() {
			_, err := tr.Request(dctx, &jsonrpc.Request{Method: "slow"}, transport.RequestOptions{})
			ch <- err
		}()
		r = recvRequest(t, p)
		err = transporttest.Recv(t, ch, "Request")
		transporttest.WantCode(t, err, jsonrpc.CodeRequestTimeout)
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, transport.ErrTimeout) {
			t.Fatalf("got %v, want a deadline timeout", err)
		}
		p.cancelled(t, r.ID)
	})
}

// ":on_progress - ... with the params of each notifications/progress whose
// progressToken is the request's params["_meta"]["progressToken"], before
// returning the response."
func TestContractDeliversProgressBeforeTheResponse(t *testing.T) {
	each(t, func(t *testing.T, tr transportUnderTest, p peer) {
		var mu sync.Mutex
		var got []string
		ch := request(tr, &jsonrpc.Request{Method: "m", Params: json.RawMessage(`{"_meta":{"progressToken":"tok"}}`)}, transport.RequestOptions{
			OnProgress: func(params json.RawMessage) error {
				mu.Lock()
				got = append(got, string(params))
				mu.Unlock()
				return nil
			},
		})
		r := recvRequest(t, p)
		for i := 1; i <= 3; i++ {
			p.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":%d}}`, i))
		}
		p.send(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"other","progress":9}}`)
		p.send(t, transporttest.Response(r.ID, `"result":{}`))
		if o := transporttest.Recv(t, ch, "Request"); o.err != nil {
			t.Fatal(o.err)
		}
		mu.Lock()
		defer mu.Unlock()
		want := []string{`{"progressToken":"tok","progress":1}`, `{"progressToken":"tok","progress":2}`, `{"progressToken":"tok","progress":3}`}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("progress delivered %q, want %q", got, want)
		}
	})
}

// "If the progress function raises, the request is cancelled on the
// server": an error from the progress function, or a panic in it, gives
// the request up. Request returns that error (a panic as a -32603 of kind
// handler) and the server is told.
func TestContractProgressFunctionErrorCancels(t *testing.T) {
	each(t, func(t *testing.T, tr transportUnderTest, p peer) {
		stop := errors.New("enough")
		ch := request(tr, &jsonrpc.Request{Method: "m", Params: json.RawMessage(`{"_meta":{"progressToken":1}}`)}, transport.RequestOptions{
			OnProgress: func(json.RawMessage) error { return stop },
		})
		r := recvRequest(t, p)
		p.send(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`)
		if o := transporttest.Recv(t, ch, "Request"); !errors.Is(o.err, stop) {
			t.Fatalf("got %v, want the progress function's error", o.err)
		}
		p.cancelled(t, r.ID)

		ch = request(tr, &jsonrpc.Request{Method: "m", Params: json.RawMessage(`{"_meta":{"progressToken":2}}`)}, transport.RequestOptions{
			OnProgress: func(json.RawMessage) error { panic("progress bug") },
		})
		r = recvRequest(t, p)
		p.send(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":2,"progress":1}}`)
		o := transporttest.Recv(t, ch, "Request")
		if je := transporttest.WantCode(t, o.err, jsonrpc.CodeInternalError); je.Kind != jsonrpc.KindHandler {
			t.Fatalf("a panic: %v, want kind handler", o.err)
		}
		p.cancelled(t, r.ID)
	})
}

// ":reset_timeout_on_progress - ... restarts :timeout, up to
// :max_total_timeout milliseconds after the request started. Past that the
// request fails with max_total_timeout_error/1." With a timeout far longer
// than the total, the total is what ends the request.
func TestContractMaxTotalTimeoutBoundsResetOnProgress(t *testing.T) {
	each(t, func(t *testing.T, tr transportUnderTest, p peer) {
		delivered := make(chan struct{}, 16)
		ch := request(tr, &jsonrpc.Request{Method: "m", Params: json.RawMessage(`{"_meta":{"progressToken":"t"}}`)}, transport.RequestOptions{
			Timeout:                time.Hour,
			ResetTimeoutOnProgress: true,
			MaxTotalTimeout:        100 * time.Millisecond,
			OnProgress:             func(json.RawMessage) error { delivered <- struct{}{}; return nil },
		})
		r := recvRequest(t, p)
		p.send(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`)
		o := transporttest.Recv(t, ch, "Request")
		if !errors.Is(o.err, transport.ErrMaxTotalTimeout) || !errors.Is(o.err, transport.ErrTimeout) {
			t.Fatalf("got %v, want the max-total-timeout error, a timeout", o.err)
		}
		<-delivered
		p.cancelled(t, r.ID)
	})
}

// "connect/2 receives the same option for a transport whose connection
// outlives one request": the server's requests go to the dispatcher
// installed with SetInbound, and each gets exactly one answer — a result,
// {} for none, -32603 for a plain error — whether the dispatcher replies at
// once or from the work it returns.
func TestContractServerRequestsReachTheDispatcherAndAreAnsweredOnce(t *testing.T) {
	each(t, func(t *testing.T, tr transportUnderTest, p peer) {
		tr.SetInbound(func(ctx context.Context, req *jsonrpc.Request, reply transport.ReplyFunc) func() {
			if req.Method == "now" {
				reply(json.RawMessage(`{"at":"once"}`), nil)
				reply(json.RawMessage(`{"twice":true}`), nil) // ignored
				return nil
			}
			return func() {
				switch req.Method {
				case "roots/list":
					reply(json.RawMessage(`{"roots":[]}`), nil)
					reply(json.RawMessage(`{"twice":true}`), nil) // ignored
				case "ping":
					reply(nil, nil)
				default:
					reply(nil, errors.New("no"))
				}
			}
		}, nil)
		ch := request(tr, &jsonrpc.Request{Method: "m"}, transport.RequestOptions{})
		r := recvRequest(t, p)
		p.send(t, `{"jsonrpc":"2.0","id":"s1","method":"roots/list"}`)
		p.send(t, `{"jsonrpc":"2.0","id":"s2","method":"ping"}`)
		p.send(t, `{"jsonrpc":"2.0","id":"s3","method":"sampling/createMessage"}`)
		p.send(t, `{"jsonrpc":"2.0","id":"s4","method":"now"}`)
		answers := map[string]*jsonrpc.Response{}
		for len(answers) < 4 {
			if a, ok := p.recv(t).(*jsonrpc.Response); ok {
				if answers[a.ID.String()] != nil {
					t.Fatalf("two answers to %v", a.ID)
				}
				answers[a.ID.String()] = a
			}
		}
		if a := answers[jsonrpc.StringID("s1").String()]; a == nil || string(a.Result) != `{"roots":[]}` {
			t.Fatalf("roots/list answered %+v", a)
		}
		if a := answers[jsonrpc.StringID("s2").String()]; a == nil || string(a.Result) != `{}` {
			t.Fatalf("ping answered %+v", a)
		}
		if a := answers[jsonrpc.StringID("s3").String()]; a == nil || a.Error == nil || a.Error.Code != jsonrpc.CodeInternalError {
			t.Fatalf("a plain error answered %+v", a)
		}
		if a := answers[jsonrpc.StringID("s4").String()]; a == nil || string(a.Result) != `{"at":"once"}` {
			t.Fatalf("a reply at once answered %+v", a)
		}
		p.send(t, transporttest.Response(r.ID, `"result":{}`))
		if o := transporttest.Recv(t, ch, "Request"); o.err != nil {
			t.Fatal(o.err)
		}
	})
}

// A server request the server cancels has its context cancelled and gets
// no answer (MCP: the receiver of a cancellation does not respond).
func TestContractServerCancelsAServerRequest(t *testing.T) {
	each(t, func(t *testing.T, tr transportUnderTest, p peer) {
		ended := make(chan struct{})
		tr.SetInbound(func(ctx context.Context, req *jsonrpc.Request, reply transport.ReplyFunc) func() {
			return func() {
				if req.Method == "slow" {
					<-ctx.Done()
					close(ended)
				}
				reply(json.RawMessage(`{"m":"`+req.Method+`"}`), nil)
			}
		}, nil)
		ch := request(tr, &jsonrpc.Request{Method: "m"}, transport.RequestOptions{})
		r := recvRequest(t, p)
		p.send(t, `{"jsonrpc":"2.0","id":"s","method":"slow"}`)
		p.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s"}}`)
		transporttest.Recv(t, ended, "the end of the handler's context")
		// A later request's answer comes, and none for the cancelled one.
		p.send(t, `{"jsonrpc":"2.0","id":"after","method":"fast"}`)
		for {
			if a, ok := p.recv(t).(*jsonrpc.Response); ok {
				if a.ID != jsonrpc.StringID("after") {
					t.Fatalf("answer %+v to a cancelled request", a)
				}
				break
			}
		}
		p.send(t, transporttest.Response(r.ID, `"result":{}`))
		if o := transporttest.Recv(t, ch, "Request"); o.err != nil {
			t.Fatal(o.err)
		}
	})
}

// "notify/3 sends a notification, a message without an id, and returns
// once the transport has delivered it."
func TestContractNotifyDelivers(t *testing.T) {
	each(t, func(t *testing.T, tr transportUnderTest, p peer) {
		err := tr.Notify(context.Background(), &jsonrpc.Notification{Method: "notifications/roots/list_changed"}, transport.NotifyOptions{Timeout: wait})
		if err != nil {
			t.Fatal(err)
		}
		n, ok := p.recv(t).(*jsonrpc.Notification)
		if !ok || n.Method != "notifications/roots/list_changed" {
			t.Fatalf("server got %+v", n)
		}
	})
}

// Notifications routed to no request or subscription (a log message) go to
// the hook installed with SetInbound.
func TestContractUnroutedNotificationsReachTheHook(t *testing.T) {
	each(t, func(t *testing.T, tr transportUnderTest, p peer) {
		got := make(chan string, 4)
		tr.SetInbound(nil, func(n *jsonrpc.Notification) { got <- n.Method })
		ch := request(tr, &jsonrpc.Request{Method: "m"}, transport.RequestOptions{})
		r := recvRequest(t, p)
		p.send(t, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`)
		select {
		case m := <-got:
			if m != "notifications/message" {
				t.Fatalf("hook got %s", m)
			}
		case <-time.After(wait):
			t.Fatal("the hook got nothing")
		}
		p.send(t, transporttest.Response(r.ID, `"result":{}`))
		transporttest.Recv(t, ch, "Request")
	})
}

const subMeta = `"_meta":{"io.modelcontextprotocol/subscriptionId":%s}`

// listened is what Listen returned.
type listened struct {
	filter json.RawMessage
	sub    *transport.Subscription
	err    error
}

// listenWith calls Listen with ctx and req in the background; what it
// returns arrives on the channel.
func listenWith(ctx context.Context, tr transportUnderTest, req *jsonrpc.Request) <-chan listened {
	ch := make(chan listened, 1)
	go func() {
		f, s, err := tr.Listen(ctx, req, transport.ListenOptions{Timeout: wait})
		ch <- listened{f, s, err}
	}()
	return ch
}

// listenAcked opens a subscription with ctx and req, which the server
// acknowledges with the filter {"toolsListChanged":true}.
func listenAcked(t *testing.T, ctx context.Context, tr transportUnderTest, p peer, req *jsonrpc.Request) listened {
	t.Helper()
	ch := listenWith(ctx, tr, req)
	r := recvRequest(t, p)
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{`+fmt.Sprintf(subMeta, r.ID.AppendJSON(nil))+`,"notifications":{"toolsListChanged":true}}}`)
	l := transporttest.Recv(t, ch, "Listen")
	if l.err != nil {
		t.Fatalf("Listen: %v", l.err)
	}
	if l.sub.ID() != r.ID {
		t.Fatalf("subscription %v, want the listen request's ID %v", l.sub.ID(), r.ID)
	}
	return l
}

// "listen/3 ... sends the request, waits :timeout milliseconds for the
// server's notifications/subscriptions/acknowledged, and returns {:ok,
// accepted_filter, pid}: the filter from the acknowledgement and the
// process that receives the stream ... pushes each later notification to
// it ... closes it with :complete ... at the terminal response." The
// subscription carries the listen request's ID.
func TestContractListenAcknowledgesStreamsAndEnds(t *testing.T) {
	each(t, func(t *testing.T, tr transportUnderTest, p peer) {
		l := listenAcked(t, context.Background(), tr, p, &jsonrpc.Request{Method: "subscriptions/listen", Params: json.RawMessage(`{}`)})
		if string(l.filter) != `{"toolsListChanged":true}` {
			t.Fatalf("Listen returned the filter %s", l.filter)
		}
		id := string(l.sub.ID().AppendJSON(nil))
		p.send(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{`+fmt.Sprintf(subMeta, id)+`}}`)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		ev, err := l.sub.Next(ctx)
		if err != nil || ev.Method != "notifications/tools/list_changed" {
			t.Fatalf("event %+v, %v", ev, err)
		}
		p.send(t, transporttest.Response(l.sub.ID(), `"result":{}`))
		if _, err := l.sub.Next(ctx); !errors.Is(err, io.EOF) {
			t.Fatalf("after the terminal response: %v, want io.EOF", err)
		}
	})
}

// "A JSON-RPC error response before the acknowledgement is returned as
// {:error, %Snodo.Error{}}": a *jsonrpc.Error of kind server, and no
// subscription.
func TestContractListenErrorBeforeAckIsReturned(t *testing.T) {
	each(t, func(t *testing.T, tr transportUnderTest, p peer) {
		ch := listenWith(context.Background(), tr, &jsonrpc.Request{Method: "subscriptions/listen"})
		r := recvRequest(t, p)
		p.send(t, transporttest.Response(r.ID, `"error":{"code":-32601,"message":"no"}`))
		l := transporttest.Recv(t, ch, "Listen")
		var je *jsonrpc.Error
		if !errors.As(l.err, &je) || je.Code != -32601 || je.Kind != jsonrpc.KindServer {
			t.Fatalf("got %#v, want the server's -32601 of kind server", l.err)
		}
		if l.sub != nil {
			t.Fatal("a subscription for a refused listen")
		}
	})
}

// "Closing the subscription, or the owner's exit, sends
// notifications/cancelled for the request" (on HTTP, closes its stream):
// closing the subscription, or the end of the context it was opened with,
// tells the server, and the subscription then ends cleanly.
func TestContractClosingASubscriptionCancelsIt(t *testing.T) {
	each(t, func(t *testing.T, tr transportUnderTest, p peer) {
		l := listenAcked(t, context.Background(), tr, p, &jsonrpc.Request{Method: "subscriptions/listen"})
		l.sub.Close()
		p.cancelled(t, l.sub.ID())

		owner, end := context.WithCancel(context.Background())
		l = listenAcked(t, owner, tr, p, &jsonrpc.Request{Method: "subscriptions/listen"})
		defer l.sub.Close()
		end()
		p.cancelled(t, l.sub.ID())
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if _, err := l.sub.Next(ctx); !errors.Is(err, io.EOF) {
			t.Fatalf("after its owner ended: %v, want io.EOF", err)
		}
	})
}

// "Failures of the connection itself are %Snodo.Error{kind: :transport}.
// Use connection_error/2 (-32000)": after Close, requests in flight and
// later ones fail with it.
func TestContractCloseFailsRequestsWithAConnectionError(t *testing.T) {
	each(t, func(t *testing.T, tr transportUnderTest, p peer) {
		ch := request(tr, &jsonrpc.Request{Method: "m"}, transport.RequestOptions{})
		recvRequest(t, p)
		tr.Close()
		o := transporttest.Recv(t, ch, "Request")
		var je *jsonrpc.Error
		if !errors.Is(o.err, transport.ErrConnection) || !errors.As(o.err, &je) || je.Kind != jsonrpc.KindTransport {
			t.Fatalf("in flight: %v, want -32000 of kind transport", o.err)
		}
		if _, err := tr.Request(context.Background(), &jsonrpc.Request{Method: "m"}, transport.RequestOptions{}); !errors.Is(err, transport.ErrConnection) {
			t.Fatalf("after Close: %v", err)
		}
	})
}
