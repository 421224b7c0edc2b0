package rpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	shttp "github.com/snodo/snodo/transport/http"
	"github.com/snodo/snodo/transport/internal/transporttest"
	"github.com/snodo/snodo/transport/stdio"
)

// The contract suite runs each test against every transport, with the
// server played by the test itself through a peer: what the client sends
// arrives in recv, and send puts a message from the server on the wire —
// a line on stdout (stdio), an event of a request's SSE stream (HTTP).

// relayEnv names the Unix socket a re-executed test binary relays to: the
// stdio server is that process, copying its stdin to the socket and the
// socket to its stdout, so that the test plays the server in-process.
const relayEnv = "SNODO_RPC_CONTRACT_RELAY"

func TestMain(m *testing.M) {
	if sock := os.Getenv(relayEnv); sock != "" {
		c, err := net.Dial("unix", sock)
		if err != nil {
			os.Exit(2)
		}
		go func() {
			io.Copy(c, os.Stdin)
			c.(*net.UnixConn).CloseWrite()
		}()
		io.Copy(os.Stdout, c)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// wait bounds every wait of the suite: generous, it only keeps a broken
// test from hanging, and no verdict depends on it.
const wait = transporttest.Patience

type peer interface {
	// recv returns the next message the client sent.
	recv(t *testing.T) jsonrpc.Message
	// send sends a message from the server; on HTTP it goes on the
	// stream of the request it answers, or else on the newest open one.
	send(t *testing.T, msg string)
	// cancelled waits until the client has cancelled request id on the
	// server: notifications/cancelled, or on HTTP the request's stream
	// closed by the client.
	cancelled(t *testing.T, id jsonrpc.ID)
}

type transportUnderTest interface {
	transport.Transport
	transport.Notifier
	transport.Listener
	transport.Inbound
}

type harness struct {
	name    string
	connect func(t *testing.T) (transportUnderTest, peer)
}

var harnesses = []harness{
	{"stdio", connectStdio},
	{"http", connectHTTP},
	{"sse", connectSSE},
}

// each runs test against every transport.
func each(t *testing.T, test func(t *testing.T, tr transportUnderTest, p peer)) {
	for _, h := range harnesses {
		t.Run(h.name, func(t *testing.T) {
			tr, p := h.connect(t)
			test(t, tr, p)
		})
	}
}

// linePeer is the server's end of a stdio connection.
type linePeer struct {
	w  net.Conn
	in chan jsonrpc.Message
}

func connectStdio(t *testing.T) (transportUnderTest, peer) {
	dir, err := os.MkdirTemp("", "rpc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := stdio.Connect(context.Background(), stdio.Config{
		Command: os.Args[0],
		Env:     []stdio.EnvVar{stdio.Set(relayEnv, filepath.Join(dir, "s"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetDeadline(time.Now().Add(wait))
	c, err := ln.Accept()
	if err != nil {
		conn.Close()
		t.Fatal(err)
	}
	p := &linePeer{w: c, in: make(chan jsonrpc.Message, 1024)}
	go func() {
		defer close(p.in)
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			if m, err := jsonrpc.Decode(line); err == nil {
				p.in <- m
			}
		}
	}()
	t.Cleanup(func() {
		conn.Close()
		c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		conn.Wait(ctx)
	})
	return conn, p
}

func (p *linePeer) recv(t *testing.T) jsonrpc.Message {
	t.Helper()
	select {
	case m, ok := <-p.in:
		if !ok {
			t.Fatal("the connection ended")
		}
		return m
	case <-time.After(wait):
		t.Fatal("nothing from the client")
	}
	return nil
}

func (p *linePeer) send(t *testing.T, msg string) {
	t.Helper()
	if _, err := p.w.Write([]byte(msg + "\n")); err != nil {
		t.Fatal(err)
	}
}

// isCancellation reports whether m is the notifications/cancelled of
// request id, with a reason.
func isCancellation(m jsonrpc.Message, id jsonrpc.ID) bool {
	n, ok := m.(*jsonrpc.Notification)
	if !ok || n.Method != "notifications/cancelled" {
		return false
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}
	if json.Unmarshal(n.Params, &p) != nil {
		return false
	}
	got, ok := jsonrpc.ParseID(p.RequestID)
	return ok && got == id && p.Reason != ""
}

func (p *linePeer) cancelled(t *testing.T, id jsonrpc.ID) {
	t.Helper()
	for {
		if isCancellation(p.recv(t), id) {
			return
		}
	}
}

// httpPeer is a Streamable HTTP endpoint played by the test: each request
// POSTed opens an SSE stream, kept open until the test sends its
// response; notifications and answers are accepted with 202.
type httpPeer struct {
	in      chan jsonrpc.Message
	gone    chan jsonrpc.ID // streams closed by the client
	mu      sync.Mutex
	streams []*sseStream
}

type sseStream struct {
	id  jsonrpc.ID
	out chan string
}

func connectHTTP(t *testing.T) (transportUnderTest, peer) {
	p := &httpPeer{in: make(chan jsonrpc.Message, 1024), gone: make(chan jsonrpc.ID, 1024)}
	srv := httptest.NewServer(nethttp.HandlerFunc(p.serve))
	tr, err := shttp.New(shttp.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tr.Close()
		srv.CloseClientConnections()
		srv.Close()
	})
	return tr, p
}

func (p *httpPeer) serve(w nethttp.ResponseWriter, r *nethttp.Request) {
	if r.Method != nethttp.MethodPost {
		w.WriteHeader(nethttp.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	m, err := jsonrpc.Decode(body)
	if err != nil {
		w.WriteHeader(nethttp.StatusBadRequest)
		return
	}
	req, ok := m.(*jsonrpc.Request)
	if !ok {
		p.in <- m
		w.WriteHeader(nethttp.StatusAccepted)
		return
	}
	st := &sseStream{id: req.ID, out: make(chan string, 64)}
	p.mu.Lock()
	p.streams = append(p.streams, st)
	p.mu.Unlock()
	defer p.drop(st)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(nethttp.StatusOK)
	w.(nethttp.Flusher).Flush()
	p.in <- m
	for {
		select {
		case msg := <-st.out:
			fmt.Fprintf(w, "data: %s\n\n", msg)
			w.(nethttp.Flusher).Flush()
			if r, err := jsonrpc.Decode([]byte(msg)); err == nil {
				if resp, ok := r.(*jsonrpc.Response); ok && resp.ID == st.id {
					return
				}
			}
		case <-r.Context().Done():
			p.gone <- st.id
			return
		}
	}
}

func (p *httpPeer) drop(st *sseStream) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, s := range p.streams {
		if s == st {
			p.streams = append(p.streams[:i], p.streams[i+1:]...)
			return
		}
	}
}

func (p *httpPeer) recv(t *testing.T) jsonrpc.Message {
	t.Helper()
	return transporttest.Recv(t, p.in, "a message from the client")
}

func (p *httpPeer) send(t *testing.T, msg string) {
	t.Helper()
	m, err := jsonrpc.Decode([]byte(msg))
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	var to *sseStream
	for _, s := range p.streams {
		if resp, ok := m.(*jsonrpc.Response); ok && resp.ID == s.id {
			to = s
		}
	}
	if to == nil && len(p.streams) > 0 {
		to = p.streams[len(p.streams)-1]
	}
	p.mu.Unlock()
	if to == nil {
		t.Fatalf("no open stream to send %s on", msg)
	}
	to.out <- msg
}

func (p *httpPeer) cancelled(t *testing.T, id jsonrpc.ID) {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case m := <-p.in:
			if isCancellation(m, id) {
				return
			}
		case g := <-p.gone:
			if g == id {
				return
			}
		case <-deadline:
			t.Fatalf("request %v was not cancelled", id)
		}
	}
}

// ssePeer is a server of the HTTP+SSE transport (2024-11-05) played by the
// test: GET /sse opens the one stream, whose first event names /message as
// the endpoint; each message POSTed there is accepted with 202, and
// everything the server sends goes on the stream.
type ssePeer struct {
	in  chan jsonrpc.Message
	out chan string
}

func connectSSE(t *testing.T) (transportUnderTest, peer) {
	p := &ssePeer{in: make(chan jsonrpc.Message, 1024), out: make(chan string, 1024)}
	mux := nethttp.NewServeMux()
	mux.HandleFunc("GET /sse", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: endpoint\ndata: /message?session=1\n\n")
		w.(nethttp.Flusher).Flush()
		for {
			select {
			case msg := <-p.out:
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
				w.(nethttp.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	})
	mux.HandleFunc("POST /message", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		body, _ := io.ReadAll(r.Body)
		m, err := jsonrpc.Decode(body)
		if err != nil || r.URL.Query().Get("session") != "1" {
			w.WriteHeader(nethttp.StatusBadRequest)
			return
		}
		p.in <- m
		w.WriteHeader(nethttp.StatusAccepted)
	})
	srv := httptest.NewServer(mux)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	tr, err := shttp.DialSSE(ctx, shttp.Config{URL: srv.URL + "/sse"})
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tr.Close()
		srv.CloseClientConnections()
		srv.Close()
	})
	return tr, p
}

func (p *ssePeer) recv(t *testing.T) jsonrpc.Message {
	t.Helper()
	select {
	case m := <-p.in:
		return m
	case <-time.After(wait):
		t.Fatal("nothing from the client")
	}
	return nil
}

func (p *ssePeer) send(t *testing.T, msg string) {
	t.Helper()
	p.out <- msg
}

func (p *ssePeer) cancelled(t *testing.T, id jsonrpc.ID) {
	t.Helper()
	for {
		if isCancellation(p.recv(t), id) {
			return
		}
	}
}
