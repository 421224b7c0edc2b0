// Command leanhttp is a Streamable HTTP MCP endpoint of the 2026-07-28 era
// that answers with as little CPU and memory as it can, for the scale
// benchmarks (../../scale): it reads only the id, the method and the
// arguments it needs (internal/scan), and writes replies assembled from
// pre-built pieces. It runs as a process of its own, so that what the
// benchmark's process measures is the client alone, and so that 10,000
// open streams take 10,000 descriptors on each side, not 20,000 in one
// process.
//
// It listens on 127.0.0.1 at a port of the system's choosing and prints
// its URL, then a newline, on stdout; it stops when its stdin closes.
//
// POST: server/discover answers the capabilities; tools/call of echo
// {text} returns text; subscriptions/listen answers with an SSE stream
// that acknowledges the filter and stays open until the client closes it;
// a notification or response gets 202. Anything else gets -32601.
package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"

	"github.com/snodo/snodo/bench/internal/scan"
)

const maxBody = 64 << 10

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "leanhttp:", err)
		os.Exit(1)
	}
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	srv := &http.Server{Handler: http.HandlerFunc(serve)}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "leanhttp:", err)
		os.Exit(1)
	}
}

func serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	msg, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	id := scan.Field(msg, "id")
	method := scan.Field(msg, "method")
	if id == nil || method == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	switch {
	case scan.Is(method, "server/discover"):
		reply(w, id, `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"leanhttp","version":"1.0.0"}}}`)
	case scan.Is(method, "tools/call"):
		text := scan.Path(msg, "params", "arguments", "text")
		if text == nil {
			text = []byte(`""`)
		}
		reply(w, id, `{"resultType":"complete","content":[{"type":"text","text":`+string(text)+`}]}`)
	case scan.Is(method, "subscriptions/listen"):
		filter := scan.Path(msg, "params", "notifications")
		if filter == nil {
			filter = []byte("{}")
		}
		h := w.Header()
		h["Content-Type"] = []string{"text/event-stream"}
		w.WriteHeader(http.StatusOK)
		var b bytes.Buffer
		b.WriteString(`data: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":`)
		b.Write(filter)
		b.WriteString("}}\n\n")
		w.Write(b.Bytes())
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	default:
		reply(w, id, "")
	}
}

// reply writes a JSON-RPC response: the result, or when it is empty a
// method-not-found error.
func reply(w http.ResponseWriter, id []byte, result string) {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	if result == "" {
		b.WriteString(`,"error":{"code":-32601,"message":"method not found"}}`)
	} else {
		b.WriteString(`,"result":`)
		b.WriteString(result)
		b.WriteString("}")
	}
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	w.Write(b.Bytes())
}
