package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
)

// serveTaskRelay is a scripted 2025-11-25 server over stdio that relays
// requests to the client: the tool "send" ({"method", "params"}) sends
// that request to the client and answers, once the client has, with the
// client's whole response as its text; the tool "notes" answers with the
// notifications/tasks/status the client has sent. Requests relay at once,
// so a tasks/result can wait while others go through.
func serveTaskRelay() {
	answerInitialize()
	pending := map[string]json.RawMessage{} // server request ID -> tools/call ID
	var notes []json.RawMessage
	reply := func(callID json.RawMessage, text string) {
		b, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": text}}})
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", callID, b)
	}
	n := 0
	for {
		line, err := helperStdin.ReadString('\n')
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					Method string          `json:"method"`
					Params json.RawMessage `json:"params"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		switch {
		case m.Method == "tools/call" && m.Params.Name == "send":
			n++
			id := fmt.Sprintf(`"s%d"`, n)
			pending[id] = m.ID
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`+"\n", id, m.Params.Arguments.Method, m.Params.Arguments.Params)
		case m.Method == "tools/call" && m.Params.Name == "notes":
			b, _ := json.Marshal(notes)
			reply(m.ID, string(b))
		case m.Method == "notifications/tasks/status":
			var full struct {
				Params json.RawMessage `json:"params"`
			}
			_ = json.Unmarshal([]byte(line), &full)
			notes = append(notes, full.Params)
		case m.Method == "" && pending[string(m.ID)] != nil:
			reply(pending[string(m.ID)], strings.TrimSpace(line))
			delete(pending, string(m.ID))
		}
	}
}

// relayed is the client's response to a request the relay server sent.
type relayed struct {
	Result map[string]any `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func relay(t *testing.T, c *snodo.Client, method, params string) relayed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := c.CallTool(ctx, "send", map[string]any{"method": method, "params": json.RawMessage(params)})
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	var r relayed
	if err := json.Unmarshal([]byte(textOf(res)), &r); err != nil {
		t.Fatalf("%s: %v: %s", method, err, textOf(res))
	}
	return r
}

// taskIDOf returns the task ID of a CreateTaskResult.
func taskIDOf(t *testing.T, r relayed) string {
	t.Helper()
	task, _ := r.Result["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if id == "" {
		t.Fatalf("not a CreateTaskResult: %+v", r)
	}
	return id
}

func taskIDParams(id string) string { return fmt.Sprintf(`{"taskId":%q}`, id) }

const relayElicit = `{"mode":"form","message":%q,"requestedSchema":{"type":"object","properties":{}},"task":{"ttl":%s}}`

// A scripted 2025-11-25 server over stdio asks the client, whose
// elicitations a Wasm module answers (accept.wasm), to run elicitations as
// tasks: with a huge ttl it gets the client's maximum (one hour); it polls
// tasks/get, fetches the module's answer with tasks/result (with the
// related-task _meta), lists, cancels a task whose handler is still
// running (its context ends, its tasks/result is an error), is told
// -32602 for an unknown ID, and receives a status notification. A second
// client whose elicitations trap.wasm answers: the trap fails the task,
// and tasks/result returns the -32603 of the trap.
func TestClientTasksOverStdioWithWasm(t *testing.T) {
	hold := make(chan error, 1)
	start := func(t *testing.T, module string) *Runner {
		rt, err := Start(context.Background(), Config{
			Server:   Server{Command: os.Args[0], Env: []EnvVar{{Name: helperEnv, Value: "task-relay"}}},
			Protocol: "legacy",
			CacheDir: t.TempDir(),
			Timeout:  5 * time.Minute,
			Handlers: []HandlerModule{{ModuleConfig: ModuleConfig{Path: "../examples/handlers/wat/" + module, Timeout: 5 * time.Minute}}},
			// A request whose message is "hold" waits for its context before
			// the module runs.
			WrapModule: func(_, _ string, next snodo.Handler) snodo.Handler {
				return snodo.HandlerFunc(func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
					if strings.Contains(string(params), `"hold"`) {
						<-ctx.Done()
						hold <- context.Cause(ctx)
						return nil, context.Cause(ctx)
					}
					return next.HandleRequest(ctx, method, params)
				})
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close(context.Background()) })
		return rt
	}

	t.Run("accept", func(t *testing.T) {
		c := start(t, "accept/accept.wasm").Client()
		created := relay(t, c, abi.MethodElicitationCreate, fmt.Sprintf(relayElicit, "name?", "1e300"))
		task, _ := created.Result["task"].(map[string]any)
		if task == nil || task["status"] != "working" || task["ttl"] != 3600000.0 {
			t.Fatalf("CreateTaskResult: %+v", created)
		}
		id := task["taskId"].(string)
		res := relay(t, c, "tasks/result", taskIDParams(id))
		meta, _ := res.Result["_meta"].(map[string]any)
		if res.Result["action"] != "accept" || meta == nil || meta["io.modelcontextprotocol/related-task"].(map[string]any)["taskId"] != id {
			t.Errorf("tasks/result: %+v", res)
		}
		if got := relay(t, c, "tasks/get", taskIDParams(id)); got.Result["status"] != "completed" {
			t.Errorf("tasks/get: %+v", got)
		}

		held := taskIDOf(t, relay(t, c, abi.MethodElicitationCreate, fmt.Sprintf(relayElicit, "hold", "60000")))
		if got := relay(t, c, "tasks/cancel", taskIDParams(held)); got.Result["status"] != "cancelled" {
			t.Errorf("tasks/cancel: %+v", got)
		}
		if cause := <-hold; cause == nil || !strings.Contains(cause.Error(), "tasks/cancel") {
			t.Errorf("held handler's cause: %v", cause)
		}
		if got := relay(t, c, "tasks/result", taskIDParams(held)); got.Error == nil || got.Error.Code != -32603 {
			t.Errorf("tasks/result of the cancelled task: %+v", got)
		}
		list := relay(t, c, "tasks/list", `{}`)
		if tasks, _ := list.Result["tasks"].([]any); len(tasks) != 2 {
			t.Errorf("tasks/list: %+v", list)
		}
		if got := relay(t, c, "tasks/get", taskIDParams("0123456789abcdef0123456789abcdef")); got.Error == nil || got.Error.Code != -32602 {
			t.Errorf("unknown task: %+v", got)
		}
		// The status notification is sent once the task has ended: ask
		// until it has arrived, within a bound that only bounds the wait.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			notes, err := c.CallTool(context.Background(), "notes", nil)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(textOf(notes), `"taskId":"`+id+`","status":"completed"`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("status notifications: %s", textOf(notes))
			}
		}
	})

	t.Run("trap", func(t *testing.T) {
		c := start(t, "hostile/trap.wasm").Client()
		id := taskIDOf(t, relay(t, c, abi.MethodElicitationCreate, fmt.Sprintf(relayElicit, "name?", "60000")))
		res := relay(t, c, "tasks/result", taskIDParams(id))
		if res.Error == nil || res.Error.Code != -32603 {
			t.Fatalf("tasks/result of a trapped module: %+v", res)
		}
		got := relay(t, c, "tasks/get", taskIDParams(id))
		if got.Result["status"] != "failed" || got.Result["statusMessage"] == "" {
			t.Errorf("trapped task: %+v", got)
		}
		t.Logf("trap: %s", res.Error.Message)
	})
}
