package hub

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/jsonrpc"
)

// modernCall is a 2026-07-28 host's tools/call of identity who, which
// declares elicitation.
func modernCall(who, tool string, args any, extra map[string]any) *gateway.Request {
	params := map[string]any{"name": tool, "arguments": args}
	for k, v := range extra {
		params[k] = v
	}
	r := request("tools/call", params)
	r.Modern, r.ProtocolVersion = true, "2026-07-28"
	r.ClientCapabilities = json.RawMessage(`{"elicitation":{}}`)
	if who != "" {
		r.Identity = &gateway.Identity{Name: who}
	}
	return r
}

// inputRequired reads an input_required result: its one input's key and
// method, and its requestState.
func inputRequired(t *testing.T, res map[string]json.RawMessage) (key, method, state string) {
	t.Helper()
	var rt string
	_ = json.Unmarshal(res["resultType"], &rt)
	var reqs map[string]struct{ Method string }
	_ = json.Unmarshal(res["inputRequests"], &reqs)
	_ = json.Unmarshal(res["requestState"], &state)
	if rt != "input_required" || len(reqs) != 1 || state == "" {
		t.Fatalf("want an input_required result with one input and a requestState, got %v", res)
	}
	for k, v := range reqs {
		key, method = k, v.Method
	}
	return key, method, state
}

// A legacy server's elicitation during a 2026-07-28 host's tools/call,
// which no Wasm module answers, reaches the host as the input of an
// input_required result; the host's retry with the answer completes the
// call, which stayed open on the server. The requestState is bound to the
// identity and the request: a forged one, or the real one presented by
// another identity, anonymously, or with other arguments, is refused with
// -32602 saying to start over and why, and leaves the call to its owner.
func TestLegacyServerInputReachesModernHost(t *testing.T) {
	audit := &records{}
	h := newHub(t, map[string]any{"mcpServers": map[string]any{"old": demo("legacy")}}, Options{Auditor: audit})
	res, err := handle(t, h, modernCall("alice", "old__register", map[string]any{}, nil))
	if err != nil {
		t.Fatalf("first round: %v", err)
	}
	key, method, state := inputRequired(t, res)
	if method != "elicitation/create" || !strings.HasPrefix(state, exchangePrefix) {
		t.Fatalf("input %q %q, state %q", key, method, state)
	}
	answer := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Held"}}}
	startOver := func(what string, r *gateway.Request) {
		t.Helper()
		_, err := handle(t, h, r)
		if code(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "start over") || !strings.Contains(err.Error(), `"old" is a legacy MCP server`) || !strings.Contains(err.Error(), "one replica") {
			t.Errorf("%s: %v, want -32602 saying to start over because the server is a legacy one held on one replica", what, err)
		}
	}
	retry := func(who string, args any, st string) *gateway.Request {
		return modernCall(who, "old__register", args, map[string]any{"requestState": st, "inputResponses": answer})
	}
	startOver("a forged requestState", retry("alice", map[string]any{}, exchangePrefix+"AAAAAAAAAAAAAAAAAAAAAA"))
	startOver("a requestState of another format", retry("alice", map[string]any{}, "s1.AAAA"))
	startOver("another identity", retry("bob", map[string]any{}, state))
	startOver("an anonymous host", retry("", map[string]any{}, state))
	startOver("other arguments", retry("alice", map[string]any{"x": 1}, state))
	res, err = handle(t, h, retry("alice", map[string]any{}, state))
	if err != nil || !strings.Contains(toolText(t, res), "registered Held") {
		t.Fatalf("the owner's retry: %v %v", res, err)
	}
	startOver("a requestState whose call is complete", retry("alice", map[string]any{}, state))
	if n := h.exchanges.Len(); n != 0 {
		t.Errorf("%d calls still held", n)
	}
	audit.mu.Lock()
	defer audit.mu.Unlock()
	forwarded := 0
	for _, rec := range audit.recs {
		if rec.Direction == "server" && rec.Method == "elicitation/create" && rec.Decision == "allow" && rec.Identity == "alice" {
			forwarded++
		}
	}
	if forwarded != 1 {
		t.Errorf("%d elicitations audited as forwarded for alice, want 1: %+v", forwarded, audit.recs)
	}
}

// A host that does not retry leaves nothing running: once the resume
// timeout has passed, the call held open is cancelled on the server
// (notifications/cancelled reaches it), and its requestState is refused.
func TestAbandonedHeldCallIsCancelledOnTheServer(t *testing.T) {
	log := t.TempDir() + "/server.log"
	h := newHub(t, map[string]any{"mcpServers": map[string]any{"old": fakeElicit(t, log)}}, Options{ResumeTimeout: 50 * time.Millisecond})
	res, err := handle(t, h, modernCall("alice", "old__ask", map[string]any{}, nil))
	if err != nil {
		t.Fatalf("first round: %v", err)
	}
	key, _, state := inputRequired(t, res)
	// Nothing waits on time here: the server's own record says when.
	deadline := time.Now().Add(bound)
	for {
		b, _ := os.ReadFile(log)
		if strings.Contains(string(b), "cancelled call") {
			t.Logf("the server saw: %s", b)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never saw the abandoned call cancelled; it saw:\n%s", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, err = handle(t, h, modernCall("alice", "old__ask", map[string]any{}, map[string]any{"requestState": state,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "late"}}}}))
	if code(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "start over") {
		t.Errorf("a retry after the resume timeout: %v", err)
	}
}

// fakeElicit is a legacy server over stdio (this test binary run again)
// whose tool "ask" elicits a name and returns it, and which writes to log
// each cancellation it receives.
func fakeElicit(t *testing.T, log string) map[string]any {
	e := fake(t, "elicit")
	e["env"].(map[string]string)["HUB_FAKE_LOG"] = log
	return e
}

func elicitServer() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	write := func(v any) {
		b, _ := json.Marshal(v)
		os.Stdout.Write(append(b, '\n'))
	}
	var call json.RawMessage // the tools/call waiting for its elicitation
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		reply := func(res any) { write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res}) }
		switch m.Method {
		case "initialize":
			reply(map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "elicit", "version": "1"}})
		case "tools/list":
			reply(map[string]any{"tools": []any{map[string]any{"name": "ask", "inputSchema": map[string]any{"type": "object"}}}})
		case "tools/call":
			call = m.ID
			write(map[string]any{"jsonrpc": "2.0", "id": "elicit-1", "method": "elicitation/create", "params": map[string]any{
				"message": "Your name?", "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}})
		case "notifications/cancelled":
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			_ = json.Unmarshal(m.Params, &p)
			if f, err := os.OpenFile(os.Getenv("HUB_FAKE_LOG"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
				what := "request"
				if string(p.RequestID) == string(call) {
					what = "call"
				}
				fmt.Fprintf(f, "cancelled %s %s\n", what, p.RequestID)
				f.Close()
			}
		case "":
			// The answer to the elicitation (or its refusal) completes
			// the call.
			if m.ID != nil && call != nil {
				text := "answered " + string(m.Result)
				if m.Result == nil {
					text = "the client refused: " + in.Text()
				}
				write(map[string]any{"jsonrpc": "2.0", "id": call, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}})
				call = nil
			}
		default:
			if m.ID != nil {
				write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "no"}})
			}
		}
	}
}

// A host cannot pile up calls held open on a legacy server by never
// retrying: past Options.MaxHeldCalls for its identity a new one is
// refused with -32029, and other identities are not affected. Two calls
// of one host held open on one legacy server over stdio (which does not
// say which call it asks for) each get their own server request: a call
// waiting for its host's answer is not given another.
func TestHeldCallsAreBoundedPerIdentity(t *testing.T) {
	h := newHub(t, map[string]any{"mcpServers": map[string]any{"old": demo("legacy"), "two": demo("legacy")}}, Options{MaxHeldCalls: 2})
	var keys, states []string
	for i := range 2 {
		res, err := handle(t, h, modernCall("alice", "old__register", map[string]any{}, nil))
		if err != nil {
			t.Fatalf("held call %d: %v", i, err)
		}
		key, _, state := inputRequired(t, res)
		keys, states = append(keys, key), append(states, state)
	}
	_, err := handle(t, h, modernCall("alice", "old__register", map[string]any{}, nil))
	if code(err) != gateway.CodeRateLimited || !strings.Contains(err.Error(), "already holds 2 calls open") {
		t.Errorf("a third held call of alice: %v, want -32029", err)
	}
	res, err := handle(t, h, modernCall("bob", "two__register", map[string]any{}, nil))
	if err != nil {
		t.Fatalf("bob: %v", err)
	}
	inputRequired(t, res)
	if n := h.exchanges.Len(); n != 3 {
		t.Errorf("%d calls held, want 3", n)
	}
	for _, i := range []int{1, 0} {
		name := fmt.Sprintf("call-%d", i)
		res, err := handle(t, h, modernCall("alice", "old__register", map[string]any{}, map[string]any{"requestState": states[i],
			"inputResponses": map[string]any{keys[i]: map[string]any{"action": "accept", "content": map[string]any{"name": name}}}}))
		if err != nil || !strings.Contains(toolText(t, res), "registered "+name) {
			t.Errorf("retry of held call %d: %v %v", i, res, err)
		}
	}
}
