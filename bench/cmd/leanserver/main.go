// Command leanserver is an MCP server over stdio that answers with as little
// CPU as it can: it reads only the id, the method and the arguments it needs
// (internal/scan, no decoding), and writes replies assembled from pre-built
// pieces. Against it, what a benchmark measures is the client.
//
// Tools: echo {text} returns text; blob {n} returns n bytes of 'x'; slow {ms,
// steps} sends steps progress notifications over ms milliseconds, then returns
// "done"; ask {q} elicits a form whose message is q and returns
// "answer:" + the answer field of the reply.
//
// --era legacy speaks 2025-11-25 and earlier (initialize handshake; ask sends
// elicitation/create to the client). --era modern speaks 2026-07-28
// (server/discover; per-request _meta is accepted and not checked; ask answers
// with an input_required result and completes on the retry).
//
// --http serves the same tools over Streamable HTTP instead (see http.go): the
// endpoint's URL is the first line of standard output, the server runs until
// standard input ends, and then prints how many TCP connections it accepted.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/snodo/snodo/bench/internal/scan"
)

const askSchema = `"requestedSchema":{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`

const toolsList = `"tools":[` +
	`{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}},` +
	`{"name":"blob","inputSchema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}},` +
	`{"name":"slow","inputSchema":{"type":"object","properties":{"ms":{"type":"integer"},"steps":{"type":"integer"}}}},` +
	`{"name":"ask","inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}]`

type server struct {
	modern bool
	out    io.Writer

	mu  sync.Mutex
	buf []byte // replies not yet written; guarded by mu

	blobs map[int][]byte // n -> `xxx…"}]…}\n`, touched by the reader only

	slowCalls sync.WaitGroup // slow calls still running, awaited at end of input

	nextAsk int
	asks    map[string][]byte // elicitation id -> id of the tools/call it serves
}

func main() {
	era := flag.String("era", "legacy", "protocol era: legacy or modern")
	overHTTP := flag.Bool("http", false, "serve Streamable HTTP on 127.0.0.1 (the URL is printed first), until standard input ends")
	flag.Parse()
	s := &server{
		modern: *era == "modern",
		out:    os.Stdout,
		blobs:  map[int][]byte{},
		asks:   map[string][]byte{},
	}
	if *era != "legacy" && *era != "modern" {
		fmt.Fprintln(os.Stderr, "leanserver: --era must be legacy or modern")
		os.Exit(2)
	}
	if *overHTTP {
		if err := serveHTTP(s.modern); err != nil {
			fmt.Fprintln(os.Stderr, "leanserver:", err)
			os.Exit(1)
		}
		return
	}
	s.serve(os.Stdin)
}

func (s *server) serve(in io.Reader) {
	r := bufio.NewReaderSize(in, 64<<10)
	var long []byte
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, line...)
			continue
		}
		if long != nil {
			line = append(long, line...)
			long = nil
		}
		if len(bytes.TrimSpace(line)) > 0 {
			s.handle(line)
		}
		// Write replies in one go once no more input is waiting.
		if r.Buffered() == 0 {
			s.flush()
		}
		if err != nil {
			s.flush()
			s.slowCalls.Wait()
			return
		}
	}
}

func (s *server) flush() {
	s.mu.Lock()
	if len(s.buf) > 0 {
		s.out.Write(s.buf)
		s.buf = s.buf[:0]
	}
	s.mu.Unlock()
}

func (s *server) handle(msg []byte) {
	id := scan.Field(msg, "id")
	method := scan.Field(msg, "method")
	if method == nil {
		if id != nil {
			s.answerElicitation(id, msg)
		}
		return
	}
	if id == nil {
		return // a notification: nothing to answer
	}
	if scan.Is(method, "tools/call") {
		s.call(id, scan.Field(msg, "params"))
		return
	}
	s.mu.Lock()
	s.buf = appendAnswer(s.buf, s.modern, id, method, msg)
	s.mu.Unlock()
}

// appendAnswer appends the reply to a request other than tools/call.
func appendAnswer(b []byte, modern bool, id, method, msg []byte) []byte {
	switch {
	case scan.Is(method, "initialize"):
		if modern {
			return appendError(b, id, -32022, `"unsupported protocol version","data":{"supported":["2026-07-28"]}`)
		}
		version := scan.Path(msg, "params", "protocolVersion")
		if version == nil {
			version = []byte(`"2025-11-25"`)
		}
		return appendResult(b, modern, id, `"protocolVersion":`+string(version)+`,"capabilities":{"tools":{}},"serverInfo":{"name":"leanserver","version":"1.0.0"}`)
	case scan.Is(method, "server/discover"):
		if !modern {
			return appendError(b, id, -32601, `"method not found"`)
		}
		return appendResult(b, modern, id, `"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"leanserver","version":"1.0.0"}}`)
	case scan.Is(method, "tools/list"):
		if modern {
			return appendResult(b, modern, id, toolsList+`,"ttlMs":0,"cacheScope":"public"`)
		}
		return appendResult(b, modern, id, toolsList)
	case scan.Is(method, "ping"):
		return appendResult(b, modern, id, "")
	}
	return appendError(b, id, -32601, `"method not found"`)
}

func (s *server) call(id, params []byte) {
	name := scan.Field(params, "name")
	args := scan.Field(params, "arguments")
	switch {
	case scan.Is(name, "echo"):
		text := scan.Field(args, "text")
		if text == nil {
			s.error(id, -32602, `"echo needs text"`)
			return
		}
		s.text(id, text)
	case scan.Is(name, "blob"):
		n, ok := scan.Int(scan.Field(args, "n"))
		if !ok {
			s.error(id, -32602, `"blob needs n"`)
			return
		}
		s.blob(id, n)
	case scan.Is(name, "slow"):
		ms, _ := scan.Int(scan.Field(args, "ms"))
		steps, _ := scan.Int(scan.Field(args, "steps"))
		token := scan.Path(params, "_meta", "progressToken")
		s.slowCalls.Add(1)
		go s.slow(append([]byte(nil), id...), append([]byte(nil), token...), ms, steps)
	case scan.Is(name, "ask"):
		q := scan.Field(args, "q")
		if q == nil {
			s.error(id, -32602, `"ask needs q"`)
			return
		}
		if s.modern {
			s.askModern(id, params, q)
		} else {
			s.askLegacy(id, q)
		}
	default:
		s.error(id, -32602, `"unknown tool"`)
	}
}

// text replies with a text content whose raw JSON string is quoted.
func (s *server) text(id, quoted []byte) {
	s.mu.Lock()
	s.buf = appendText(s.buf, s.modern, id, quoted)
	s.mu.Unlock()
}

// appendText appends a text content reply whose raw JSON string is quoted.
func appendText(b []byte, modern bool, id, quoted []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":{"content":[{"type":"text","text":`...)
	b = append(b, quoted...)
	return appendTail(b, modern)
}

func (s *server) tail(b []byte) []byte { return appendTail(b, s.modern) }

func appendTail(b []byte, modern bool) []byte {
	if modern {
		return append(b, `}],"resultType":"complete"}}`+"\n"...)
	}
	return append(b, "}]}}\n"...)
}

func (s *server) blob(id []byte, n int) {
	body, ok := s.blobs[n]
	if !ok {
		body = bytes.Repeat([]byte{'x'}, n)
		body = append(body, '"')
		body = s.tail(body)
		s.blobs[n] = body
	}
	s.mu.Lock()
	s.buf = append(s.buf, `{"jsonrpc":"2.0","id":`...)
	s.buf = append(s.buf, id...)
	s.buf = append(s.buf, `,"result":{"content":[{"type":"text","text":"`...)
	s.out.Write(s.buf)
	s.out.Write(body)
	s.buf = s.buf[:0]
	s.mu.Unlock()
}

func (s *server) slow(id, token []byte, ms, steps int) {
	defer s.slowCalls.Done()
	for i := 1; i <= steps; i++ {
		time.Sleep(time.Duration(ms) * time.Millisecond / time.Duration(steps))
		if len(token) == 0 {
			continue
		}
		s.mu.Lock()
		s.buf = append(s.buf, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`...)
		s.buf = append(s.buf, token...)
		s.buf = append(s.buf, `,"progress":`...)
		s.buf = strconv.AppendInt(s.buf, int64(i), 10)
		s.buf = append(s.buf, `,"total":`...)
		s.buf = strconv.AppendInt(s.buf, int64(steps), 10)
		s.buf = append(s.buf, "}}\n"...)
		s.out.Write(s.buf)
		s.buf = s.buf[:0]
		s.mu.Unlock()
	}
	if steps == 0 {
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	s.text(id, []byte(`"done"`))
	s.flush()
}

// askLegacy sends elicitation/create to the client; answerElicitation
// completes the tools/call when the client's reply arrives.
func (s *server) askLegacy(id, q []byte) {
	s.nextAsk++
	eid := "e" + strconv.Itoa(s.nextAsk)
	s.asks[eid] = append([]byte(nil), id...)
	s.mu.Lock()
	s.buf = append(s.buf, `{"jsonrpc":"2.0","id":"`...)
	s.buf = append(s.buf, eid...)
	s.buf = append(s.buf, `","method":"elicitation/create","params":{"message":`...)
	s.buf = append(s.buf, q...)
	s.buf = append(s.buf, ","+askSchema+"}}\n"...)
	s.mu.Unlock()
}

func (s *server) answerElicitation(id, msg []byte) {
	if len(id) < 2 || id[0] != '"' {
		return
	}
	eid := string(id[1 : len(id)-1])
	callID, ok := s.asks[eid]
	if !ok {
		return
	}
	delete(s.asks, eid)
	answer := scan.Path(msg, "result", "content", "answer")
	if !scan.Is(scan.Path(msg, "result", "action"), "accept") || len(answer) < 2 || answer[0] != '"' {
		s.error(callID, -32603, `"elicitation was not accepted with an answer"`)
		return
	}
	s.text(callID, append([]byte(`"answer:`), answer[1:]...))
}

// askModern answers the first call with input_required (multi round-trip
// requests) and the retry, which carries inputResponses, with the result.
func (s *server) askModern(id, params, q []byte) {
	s.mu.Lock()
	s.buf = appendAskModern(s.buf, id, params, q)
	s.mu.Unlock()
}

func appendAskModern(b []byte, id, params, q []byte) []byte {
	responses := scan.Field(params, "inputResponses")
	if responses == nil {
		return appendResult(b, true, id, `"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"mode":"form","message":`+
			string(q)+`,`+askSchema+`}}},"requestState":"q"`)
	}
	answer := scan.Path(responses, "q", "content", "answer")
	if !scan.Is(scan.Path(responses, "q", "action"), "accept") || len(answer) < 2 || answer[0] != '"' {
		return appendError(b, id, -32603, `"elicitation was not accepted with an answer"`)
	}
	return appendText(b, true, id, append([]byte(`"answer:`), answer[1:]...))
}

func appendResult(b []byte, modern bool, id []byte, members string) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":{`...)
	b = append(b, members...)
	if modern && !strings.Contains(members, `"resultType"`) {
		if members != "" {
			b = append(b, ',')
		}
		b = append(b, `"resultType":"complete"`...)
	}
	return append(b, "}}\n"...)
}

func (s *server) error(id []byte, code int, messageAndData string) {
	s.mu.Lock()
	s.buf = appendError(s.buf, id, code, messageAndData)
	s.mu.Unlock()
}

func appendError(b []byte, id []byte, code int, messageAndData string) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = append(b, messageAndData...)
	return append(b, "}}\n"...)
}
