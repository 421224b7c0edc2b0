package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/snodo/snodo/bench/internal/scan"
)

// maxBody bounds one request body: the largest the benchmark sends is an
// elicitation answer or a retry, well under it.
const maxBody = 1 << 20

// httpServer is the lean server over Streamable HTTP: one endpoint, /mcp,
// answering each POST with one JSON body, except the legacy era's ask, whose
// POST is answered with an SSE stream that carries the elicitation/create
// request and then, once the client has POSTed its answer, the result. It
// issues no session (the client needs no Mcp-Session-Id) and offers no
// standalone GET stream (GET and DELETE are answered 405, as the transport's
// specification allows).
type httpServer struct {
	modern bool
	conns  atomic.Int64 // TCP connections accepted

	bufs sync.Pool // *[]byte for request bodies and replies

	blobMu sync.Mutex
	blobs  map[int][]byte // n -> `xxx…"}]…}`; guarded by blobMu

	askMu   sync.Mutex
	nextAsk int
	asks    map[string]chan []byte // elicitation id -> its answer; guarded by askMu
}

// serveHTTP listens on a free port of 127.0.0.1, prints the endpoint's URL
// as the first line of standard output, and serves until standard input
// ends; then it prints "conns N", the number of TCP connections accepted,
// and returns.
func serveHTTP(modern bool) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	h := &httpServer{modern: modern, blobs: map[int][]byte{}, asks: map[string]chan []byte{}}
	srv := &http.Server{
		Handler: h,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				h.conns.Add(1)
			}
		},
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	io.Copy(io.Discard, os.Stdin)
	srv.Close()
	<-served
	fmt.Printf("conns %d\n", h.conns.Load())
	return nil
}

func (h *httpServer) buf() *[]byte {
	if b, ok := h.bufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 4096)
	return &b
}

func (h *httpServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	in := h.buf()
	defer h.bufs.Put(in)
	body, err := readAll((*in)[:0], io.LimitReader(r.Body, maxBody+1))
	*in = body[:0]
	if err != nil || len(body) > maxBody {
		http.Error(w, "request body unreadable or over 1 MiB", http.StatusBadRequest)
		return
	}
	id := scan.Field(body, "id")
	method := scan.Field(body, "method")
	if method == nil {
		if id != nil {
			h.answerElicitation(id, body)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if id == nil {
		w.WriteHeader(http.StatusAccepted) // a notification
		return
	}
	out := h.buf()
	defer h.bufs.Put(out)
	b := (*out)[:0]
	if !scan.Is(method, "tools/call") {
		b = appendAnswer(b, h.modern, id, method, body)
		*out = b[:0]
		writeJSON(w, b)
		return
	}
	params := scan.Field(body, "params")
	name := scan.Field(params, "name")
	args := scan.Field(params, "arguments")
	switch {
	case scan.Is(name, "echo"):
		text := scan.Field(args, "text")
		if text == nil {
			b = appendError(b, id, -32602, `"echo needs text"`)
		} else {
			b = appendText(b, h.modern, id, text)
		}
	case scan.Is(name, "blob"):
		n, ok := scan.Int(scan.Field(args, "n"))
		if !ok || n < 0 || n > 64<<20 {
			b = appendError(b, id, -32602, `"blob needs n, at most 64 MiB"`)
			break
		}
		h.blob(w, id, n)
		return
	case scan.Is(name, "ask"):
		q := scan.Field(args, "q")
		switch {
		case q == nil:
			b = appendError(b, id, -32602, `"ask needs q"`)
		case h.modern:
			b = appendAskModern(b, id, params, q)
		default:
			h.askLegacy(w, r, id, q)
			return
		}
	default:
		b = appendError(b, id, -32602, `"unknown tool"`)
	}
	*out = b[:0]
	writeJSON(w, b)
}

// readAll is io.ReadAll into b.
func readAll(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

func writeJSON(w http.ResponseWriter, b []byte) {
	hd := w.Header()
	hd["Content-Type"] = []string{"application/json"}
	hd["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.Write(b)
}

func (h *httpServer) blob(w http.ResponseWriter, id []byte, n int) {
	h.blobMu.Lock()
	body, ok := h.blobs[n]
	if !ok {
		body = bytes.Repeat([]byte{'x'}, n)
		body = append(body, '"')
		body = appendTail(body, h.modern)
		h.blobs[n] = body
	}
	h.blobMu.Unlock()
	head := make([]byte, 0, 96)
	head = append(head, `{"jsonrpc":"2.0","id":`...)
	head = append(head, id...)
	head = append(head, `,"result":{"content":[{"type":"text","text":"`...)
	hd := w.Header()
	hd["Content-Type"] = []string{"application/json"}
	hd["Content-Length"] = []string{strconv.Itoa(len(head) + len(body))}
	w.Write(head)
	w.Write(body)
}

// askLegacy answers the POST with an SSE stream: the elicitation/create
// request, then, when the client's answer has arrived in a POST of its own,
// the tools/call result.
func (h *httpServer) askLegacy(w http.ResponseWriter, r *http.Request, id, q []byte) {
	answer := make(chan []byte, 1)
	h.askMu.Lock()
	h.nextAsk++
	eid := "e" + strconv.Itoa(h.nextAsk)
	h.asks[eid] = answer
	h.askMu.Unlock()
	defer func() {
		h.askMu.Lock()
		delete(h.asks, eid)
		h.askMu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriter(w)
	bw.WriteString("event: message\ndata: ")
	bw.WriteString(`{"jsonrpc":"2.0","id":"` + eid + `","method":"elicitation/create","params":{"message":`)
	bw.Write(q)
	bw.WriteString("," + askSchema + "}}\n\n")
	bw.Flush()
	w.(http.Flusher).Flush()
	var msg []byte
	select {
	case msg = <-answer:
	case <-r.Context().Done():
		return
	}
	var b []byte
	reply := scan.Path(msg, "result", "content", "answer")
	if !scan.Is(scan.Path(msg, "result", "action"), "accept") || len(reply) < 2 || reply[0] != '"' {
		b = appendError(b, id, -32603, `"elicitation was not accepted with an answer"`)
	} else {
		b = appendText(b, false, id, append([]byte(`"answer:`), reply[1:]...))
	}
	bw.WriteString("event: message\ndata: ")
	bw.Write(b) // ends with a newline
	bw.WriteString("\n")
	bw.Flush()
}

// answerElicitation hands the client's answer to the ask waiting for it.
func (h *httpServer) answerElicitation(id, msg []byte) {
	if len(id) < 2 || id[0] != '"' {
		return
	}
	h.askMu.Lock()
	ch, ok := h.asks[string(id[1:len(id)-1])]
	h.askMu.Unlock()
	if !ok {
		return
	}
	select {
	case ch <- append([]byte(nil), msg...):
	default: // answered already
	}
}
