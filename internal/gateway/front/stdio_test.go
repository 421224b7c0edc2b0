package front

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// stdioPeer runs ServeStdio on pipes.
type stdioPeer struct {
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
}

func startStdio(t *testing.T, hub *fakeHub) *stdioPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &stdioPeer{in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	p.out.Buffer(nil, 1<<20)
	go func() {
		p.done <- ServeStdio(context.Background(), inR, outW, hub, fakePolicy{}, nil, nil)
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		if err := <-p.done; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
		outR.Close()
	})
	return p
}

func (p *stdioPeer) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (p *stdioPeer) read(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	if !p.out.Scan() {
		t.Fatalf("no more output: %v", p.out.Err())
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(p.out.Bytes(), &m); err != nil {
		t.Fatalf("%q: %v", p.out.Text(), err)
	}
	return m
}

// TestStdioBothEras: one local host on stdio, legacy then 2026-07-28: the
// identity is the policy's local one, progress and the elicitation go over
// the same pipe, bad lines get errors without reaching the hub, and
// notifications/cancelled cancels.
func TestStdioBothEras(t *testing.T) {
	hub := newFakeHub()
	p := startStdio(t, hub)

	for _, c := range []struct{ line, code string }{
		{`{"jsonrpc":"2.0","id":`, "-32700"},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "-32600"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "-32600"}, // before initialize
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01"}}}`, "-32022"},
	} {
		p.send(t, c.line)
		m := p.read(t)
		if !strings.Contains(string(m["error"]), c.code) {
			t.Errorf("%s: %s", c.line, m["error"])
		}
	}
	if hub.calls.Load() != 0 {
		t.Fatalf("the hub was called %d times by bad lines", hub.calls.Load())
	}

	p.send(t, initBody)
	if m := p.read(t); !strings.Contains(string(m["result"]), `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize: %s", m["result"])
	}
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if m := p.read(t); !strings.Contains(string(m["method"]), "list_changed") {
		t.Fatalf("watch: %v", m)
	}
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo__progress","_meta":{"progressToken":"p"}}}`)
	for i := 0; i < 2; i++ {
		if m := p.read(t); !strings.Contains(string(m["method"]), "progress") {
			t.Fatalf("progress: %v", m)
		}
	}
	if m := p.read(t); string(m["id"]) != "2" {
		t.Fatalf("result: %v", m)
	}
	if r := hub.last(); r.Identity == nil || r.Identity.Name != "local" || r.Modern || r.ProtocolVersion != "2025-11-25" {
		t.Errorf("hub request %+v", r)
	}

	p.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"demo__ask"}}`)
	ask := p.read(t)
	if string(ask["method"]) != `"elicitation/create"` {
		t.Fatalf("ask: %v", ask)
	}
	p.send(t, `{"jsonrpc":"2.0","id":`+string(ask["id"])+`,"result":{"action":"decline"}}`)
	if m := p.read(t); string(m["id"]) != "3" || !strings.Contains(string(m["result"]), "decline") {
		t.Fatalf("asked call: %v", m)
	}

	p.send(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"demo__block",`+modernMeta+`}}`)
	<-hub.blocked
	if r := hub.last(); !r.Modern || r.Ask != nil {
		t.Errorf("modern hub request %+v", r)
	}
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}`)
	<-hub.released
	p.send(t, `{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if m := p.read(t); string(m["id"]) != "5" {
		t.Fatalf("a cancelled request was answered, or ping was not: %v", m)
	}
}

// TestStdioStringAndNumberIDs: the request IDs "7" and 7 are two requests
// (JSON-RPC tells them apart), and cancelling one leaves the other.
func TestStdioStringAndNumberIDs(t *testing.T) {
	hub := newFakeHub()
	p := startStdio(t, hub)
	for _, id := range []string{`"7"`, `7`} {
		p.send(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"demo__block",`+modernMeta+`}}`)
		// The next line out answers the ping, not a refusal of id.
		p.send(t, `{"jsonrpc":"2.0","id":"p","method":"ping"}`)
		if m := p.read(t); string(m["id"]) != `"p"` {
			t.Fatalf("request %s was refused: %s", id, m["error"])
		}
		<-hub.blocked
	}
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"7","reason":"first"}}`)
	if cause := <-hub.released; !strings.Contains(cause.Error(), "first") {
		t.Errorf("ended by %v", cause)
	}
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"second"}}`)
	if cause := <-hub.released; !strings.Contains(cause.Error(), "second") {
		t.Errorf("ended by %v", cause)
	}
}
