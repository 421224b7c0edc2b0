package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeServer is a 2026-07-28 server with two tools, echo and secret, and
// tools whose names are secret with an invisible or control character
// added; or with the tools/list result tools, when set.
type fakeServer struct{ tools string }

func (f fakeServer) Request(_ context.Context, req *jsonrpc.Request, _ transport.RequestOptions) (*jsonrpc.Response, error) {
	switch req.Method {
	case "server/discover":
		return jsonrpc.NewResult(req.ID, json.RawMessage(`{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fake","version":"1"}}}`)), nil
	case "tools/list":
		if f.tools != "" {
			return jsonrpc.NewResult(req.ID, json.RawMessage(f.tools)), nil
		}
		return jsonrpc.NewResult(req.ID, json.RawMessage(`{"tools":[{"name":"echo"},{"name":"secret"},{"name":"echo","Name":"secret"},{"name":"secret\u200b"},{"name":"secret\u0000"},{"name":"secret "}]}`)), nil
	case "tools/call":
		return jsonrpc.NewResult(req.ID, json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`)), nil
	}
	return jsonrpc.NewErrorResponse(req.ID, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no"}), nil
}

func (fakeServer) Close() error { return nil }

func (fakeServer) Notify(context.Context, *jsonrpc.Notification, transport.NotifyOptions) error {
	return nil
}

// serveLines runs a proxy over the fake server with the host's input and
// returns what it wrote, one decoded message per line.
func serveLines(t *testing.T, cfg Config, input string) []map[string]json.RawMessage {
	t.Helper()
	return serveLinesFrom(t, fakeServer{}, cfg, input)
}

// serveLinesFrom is serveLines over the server srv. The host's input is
// held open until every request in it that the proxy can read (a
// request, not in a batch, on a line within the limit) has been answered,
// as a host waits for its answers: the end of the input cancels what is
// in flight.
func serveLinesFrom(t *testing.T, srv fakeServer, cfg Config, input string) []map[string]json.RawMessage {
	t.Helper()
	c, err := snodo.Connect(context.Background(), srv, &snodo.Options{Era: snodo.EraModern})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	limit := cfg.MaxLineBytes
	if limit <= 0 {
		limit = jsonrpc.DefaultMaxLineBytes
	}
	out := &answerSink{want: map[string]bool{}, done: make(chan struct{})}
	for _, line := range strings.Split(input, "\n") {
		if m, err := jsonrpc.Decode([]byte(line)); err == nil && len(line) <= limit {
			if r, ok := m.(*jsonrpc.Request); ok && r.ID.IsValid() {
				out.want[r.ID.String()] = true
			}
		}
	}
	if len(out.want) == 0 {
		close(out.done)
	}
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.WriteString(pw, input)
		select {
		case <-out.done:
		case <-time.After(time.Minute): // bounds the wait only: the test fails below
		}
		pw.Close()
	}()
	p := New(cfg, pr, out)
	if err := p.Serve(context.Background(), c); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if len(out.want) > 0 {
		t.Errorf("requests not answered before the input ended: %v", out.want)
	}
	var msgs []map[string]json.RawMessage
	sc := bufio.NewScanner(&out.buf)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("the proxy wrote a line that is not JSON: %q", sc.Text())
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// answerSink is the proxy's output: it closes done once every ID of want
// has been answered (the proxy writes one message per Write).
type answerSink struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want map[string]bool
	done chan struct{}
}

func (a *answerSink) Write(b []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.buf.Write(b)
	if len(a.want) == 0 {
		return len(b), nil
	}
	if m, err := jsonrpc.Decode(bytes.TrimSpace(b)); err == nil {
		if r, ok := m.(*jsonrpc.Response); ok {
			delete(a.want, r.ID.String())
			if len(a.want) == 0 {
				close(a.done)
			}
		}
	}
	return len(b), nil
}

func errorCode(m map[string]json.RawMessage) int64 {
	var e struct {
		Code int64 `json:"code"`
	}
	_ = json.Unmarshal(m["error"], &e)
	return e.Code
}

// A hostile host: garbage, invalid messages, a line over the limit, a
// batch, unknown methods, guard evasions. Each is answered with a JSON-RPC
// error, the proxy goes on, and EOF ends it cleanly.
func TestHostileHost(t *testing.T) {
	huge := `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 5000) + `"}}}`
	input := strings.Join([]string{
		`garbage`,
		`{"jsonrpc":"2.0","id":1}`,
		huge,
		`[{"jsonrpc":"2.0","id":7,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":2,"method":"no/such/method"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"secret"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","Name":"secret"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","name":"secret"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":[1]}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01"},"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","requestState":"forged"}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"echo","requestState":"forged"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":12345}}`,
		`{"jsonrpc":"2.0","id":"r","result":{}}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":13,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"secret\u200b"}}`,
		`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"secret\u0000"}}`,
	}, "\n") + "\n"
	var audit bytes.Buffer
	msgs := serveLines(t, Config{MaxLineBytes: 1024, AllowTool: func(n string) bool { return n != "secret" }, Audit: &audit}, input)

	byID := map[string]map[string]json.RawMessage{}
	var anonymous []int64
	for _, m := range msgs {
		id := string(m["id"])
		if id == "null" {
			anonymous = append(anonymous, errorCode(m))
			continue
		}
		byID[id] = m
	}
	want := []int64{jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeInvalidRequest, jsonrpc.CodeParseError}
	if len(anonymous) != len(want) {
		t.Fatalf("errors without an id: %v, want %v (garbage, no method, the long line, the batch)", anonymous, want)
	}
	for i := range want {
		if anonymous[i] != want[i] {
			t.Errorf("error %d without an id: %d, want %d", i, anonymous[i], want[i])
		}
	}
	for id, code := range map[string]int64{
		"2": jsonrpc.CodeMethodNotFound, "3": jsonrpc.CodeInvalidParams, "4": jsonrpc.CodeInvalidParams,
		"5": jsonrpc.CodeInvalidParams, "6": jsonrpc.CodeInvalidParams, "8": jsonrpc.CodeUnsupportedProtocolVersion,
		"9": jsonrpc.CodeInvalidParams, "10": jsonrpc.CodeInvalidParams,
		"14": jsonrpc.CodeInvalidParams, "15": jsonrpc.CodeInvalidParams,
	} {
		m, ok := byID[id]
		if !ok {
			t.Errorf("request %s was not answered", id)
			continue
		}
		if got := errorCode(m); got != code {
			t.Errorf("request %s: error %d, want %d: %s", id, got, code, m["error"])
		}
	}
	if _, ok := byID["99"]; ok {
		t.Errorf("the line over the limit was served")
	}
	if got := string(byID["11"]["result"]); got != `{"tools":[{"name":"echo"}]}` {
		t.Errorf("tools/list through the guard: %s", got)
	}
	for _, id := range []string{"14", "15"} {
		if got := string(byID[id]["error"]); !strings.Contains(got, "the guard compares no such name") {
			t.Errorf("request %s: %s, want the guard's reason", id, got)
		}
	}
	if got := string(byID["12"]["result"]); !strings.Contains(got, `"text":"ok"`) {
		t.Errorf("tools/call: %s", got)
	}
	if got := string(byID["13"]["result"]); got != `{}` {
		t.Errorf("ping: %s", got)
	}
	if n := strings.Count(audit.String(), "\n"); n < 10 {
		t.Errorf("audit log has %d lines:\n%s", n, audit.String())
	}
	if !strings.Contains(audit.String(), `"tool":"secret","decision":"deny","durationMs"`) {
		t.Errorf("the denied call is not in the audit log:\n%s", audit.String())
	}
	// An audit log is read on a terminal: the host's invisible characters
	// are escaped in it.
	if strings.Contains(audit.String(), "\u200b") || !strings.Contains(audit.String(), `"tool":"secret\u200b","decision":"deny"`) {
		t.Errorf("the audit log does not hold the invisible character escaped:\n%q", audit.String())
	}
}

// A server whose tools/list result spells "tools" twice, or in a way a Go
// decoder folds onto it (toolſ with U+017F, Tools), does not get a denied
// tool to a host: the host decoding the proxied result with encoding/json
// sees the filtered list, and the result has exactly one "tools" key.
func TestProxyFiltersEverySpellingOfTools(t *testing.T) {
	for _, tools := range []string{
		`{"tools":[{"name":"echo"}],"toolſ":[{"name":"secret"}]}`,
		`{"Tools":[{"name":"secret"}],"tools":[{"name":"echo"}]}`,
		`{"tools":[{"name":"echo"}],"tools":[{"name":"secret"}]}`,
		`{"tools":[{"name":"secret"}],"tools":[{"name":"echo"}]}`,
	} {
		msgs := serveLinesFrom(t, fakeServer{tools: tools}, Config{AllowTool: func(n string) bool { return n != "secret" }},
			`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
		if len(msgs) != 1 {
			t.Fatalf("%s: answers %v", tools, msgs)
		}
		var res struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(msgs[0]["result"], &res); err != nil {
			t.Fatalf("%s: %v", msgs[0]["result"], err)
		}
		for _, x := range res.Tools {
			if x.Name == "secret" {
				t.Errorf("server result %s\nproxied as %s: a Go host sees the denied tool", tools, msgs[0]["result"])
			}
		}
		if n := strings.Count(strings.ToLower(string(msgs[0]["result"])), `"tool`); n != 1 {
			t.Errorf("proxied as %s: want exactly one tools key", msgs[0]["result"])
		}
	}
}

// A server request a module answers is audited with the module's name and,
// when the module fails, the error code; neither request nor answer is
// written.
func TestAuditModule(t *testing.T) {
	var audit bytes.Buffer
	p := New(Config{Audit: &audit}, strings.NewReader(""), &bytes.Buffer{})
	ok := p.AuditModule(abi.MethodElicitationCreate, "policy", snodo.HandlerFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"action":"accept","content":{"secret":"s3cr3t"}}`), nil
	}))
	bad := p.AuditModule(abi.MethodSamplingCreate, "sampler", snodo.HandlerFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no"}
	}))
	if _, err := ok.HandleRequest(context.Background(), abi.MethodElicitationCreate, json.RawMessage(`{"message":"password?"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := bad.HandleRequest(context.Background(), abi.MethodSamplingCreate, json.RawMessage(`{}`)); err == nil {
		t.Fatal("the failing module's error was lost")
	}
	lines := strings.Split(strings.TrimSpace(audit.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("audit log:\n%s", audit.String())
	}
	var recs [2]AuditRecord
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if r := recs[0]; r.Direction != DirServerToModule || r.Method != abi.MethodElicitationCreate || r.Module != "policy" || r.Decision != DecisionAllow || r.ErrorCode != 0 {
		t.Errorf("module answer audited as %+v", r)
	}
	if r := recs[1]; r.Module != "sampler" || r.ErrorCode != jsonrpc.CodeInvalidParams {
		t.Errorf("module failure audited as %+v", r)
	}
	if strings.Contains(audit.String(), "s3cr3t") || strings.Contains(audit.String(), "password") {
		t.Errorf("the audit log holds a payload:\n%s", audit.String())
	}
}
