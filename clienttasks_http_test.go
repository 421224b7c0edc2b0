package snodo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
)

// taskRelayHTTP is a scripted 2025-11-25 Streamable HTTP server that sends
// requests to the client on its GET stream and collects the client's
// answers and status notifications from its POSTs.
type taskRelayHTTP struct {
	push    chan string
	answers chan *jsonrpc.Response
	notes   chan json.RawMessage
	got     map[string]*jsonrpc.Response
	n       int
}

func newTaskRelayHTTP(t *testing.T) (*taskRelayHTTP, string) {
	s := &taskRelayHTTP{push: make(chan string, 16), answers: make(chan *jsonrpc.Response, 16),
		notes: make(chan json.RawMessage, 16), got: map[string]*jsonrpc.Response{}}
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		data, _ := io.ReadAll(r.Body)
		msg, _ := jsonrpc.Decode(data)
		switch m := msg.(type) {
		case *jsonrpc.Request:
			switch m.Method {
			case "initialize":
				w.Header().Set("Mcp-Session-Id", "s-1")
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, strings.ReplaceAll(initResult, `"id":ID`, `"id":`+string(m.ID.AppendJSON(nil))))
			default:
				w.WriteHeader(404)
			}
		case *jsonrpc.Response:
			s.answers <- m
			w.WriteHeader(202)
		case *jsonrpc.Notification:
			if m.Method == "notifications/tasks/status" {
				s.notes <- m.Params
			}
			w.WriteHeader(202)
		default:
			if r.Method != nethttp.MethodGet {
				w.WriteHeader(200)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			w.(nethttp.Flusher).Flush()
			for {
				select {
				case ev := <-s.push:
					io.WriteString(w, "data: "+ev+"\n\n")
					w.(nethttp.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// send sends a request to the client and returns its ID.
func (s *taskRelayHTTP) send(method, params string) string {
	s.n++
	id := fmt.Sprintf("q%d", s.n)
	s.push <- fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":%q,"params":%s}`, id, method, params)
	return id
}

// await returns the client's answer to request id, keeping the others
// that come first.
func (s *taskRelayHTTP) await(t *testing.T, id string) *jsonrpc.Response {
	t.Helper()
	bound := time.NewTimer(time.Minute) // only bounds the wait
	defer bound.Stop()
	for s.got[id] == nil {
		select {
		case r := <-s.answers:
			s.got[r.ID.String()] = r
		case <-bound.C:
			t.Fatalf("no answer to %s", id)
		}
	}
	return s.got[id]
}

func (s *taskRelayHTTP) ask(t *testing.T, method, params string) map[string]any {
	t.Helper()
	r := s.await(t, s.send(method, params))
	if r.Error != nil {
		return map[string]any{"error": float64(r.Error.Code), "message": r.Error.Message}
	}
	var m map[string]any
	if err := json.Unmarshal(r.Result, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The same client-side tasks over Streamable HTTP: a scripted 2025-11-25
// server sends a task-augmented elicitation and sampling on its GET
// stream, and tasks/get, tasks/result (waiting while the handler runs),
// tasks/cancel, tasks/list; the client answers each with a POST, and POSTs
// the completed task's status notification.
func TestClientTasksOverHTTP(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // after the server's cleanup
	s, url := newTaskRelayHTTP(t)
	h := newHoldingHandler()
	c, err := snodo.Connect(context.Background(), httpTransport(t, url), &snodo.Options{ProtocolVersion: "2025-11-25",
		Handlers: map[string]snodo.Handler{abi.MethodElicitationCreate: h, abi.MethodSamplingCreate: h}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	el := s.ask(t, abi.MethodElicitationCreate, fmt.Sprintf(elicitTask, "hold", "1e300"))
	task, _ := el["task"].(map[string]any)
	if task == nil || task["status"] != "working" || task["ttl"] != 3600000.0 {
		t.Fatalf("CreateTaskResult: %v", el)
	}
	id := task["taskId"].(string)
	<-h.started
	waiting := s.send("tasks/result", idParams(id))
	if got := s.ask(t, "tasks/get", idParams(id)); got["status"] != "working" {
		t.Errorf("tasks/get: %v", got)
	}
	close(h.release)
	var res map[string]any
	_ = json.Unmarshal(s.await(t, waiting).Result, &res)
	meta, _ := res["_meta"].(map[string]any)
	if res["action"] != "accept" || meta == nil || meta["io.modelcontextprotocol/related-task"].(map[string]any)["taskId"] != id {
		t.Errorf("tasks/result: %v", res)
	}
	var note struct{ TaskID, Status string }
	select {
	case n := <-s.notes:
		_ = json.Unmarshal(n, &note)
	case <-time.After(time.Minute): // only bounds the wait
	}
	if note.TaskID != id || note.Status != "completed" {
		t.Errorf("status notification: %+v", note)
	}

	h.release = make(chan struct{})
	sid := s.ask(t, abi.MethodSamplingCreate, fmt.Sprintf(samplingTask, "hold", "60000"))["task"].(map[string]any)["taskId"].(string)
	<-h.started
	if got := s.ask(t, "tasks/cancel", idParams(sid)); got["status"] != "cancelled" {
		t.Errorf("tasks/cancel: %v", got)
	}
	<-h.cancelled
	if got := s.ask(t, "tasks/result", idParams(sid)); got["error"] != float64(jsonrpc.CodeInternalError) {
		t.Errorf("tasks/result of the cancelled task: %v", got)
	}
	if got := s.ask(t, "tasks/list", `{}`); len(got["tasks"].([]any)) != 2 {
		t.Errorf("tasks/list: %v", got)
	}
	if got := s.ask(t, "tasks/get", idParams("0123456789abcdef0123456789abcdef")); got["error"] != float64(jsonrpc.CodeInvalidParams) {
		t.Errorf("unknown task: %v", got)
	}
}
