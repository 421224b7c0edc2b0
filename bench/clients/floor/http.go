package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/snodo/snodo/bench/internal/driver"
)

// httpConn is the floor over Streamable HTTP: net/http alone, POSTing the
// same tools/call bodies as an MCP client to the lean server (which needs no
// initialize and issues no session) and reading the JSON reply with the
// least work that checks it: its id, then the text between `"text":"` and
// the next quote. No MCP handshake, no JSON decoding, no SSE. Its client
// keeps one idle connection per concurrent caller.
type httpConn struct {
	client *http.Client
	own    *http.Transport
	url    string
	nextID atomic.Int64
	bufs   sync.Pool // *[]byte
	blob   []byte    // the sequential blob's reused body
}

func connectHTTP(cfg driver.Config) *httpConn {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = driver.Callers
	t.MaxIdleConns = driver.Callers
	t.DisableCompression = true
	return &httpConn{client: &http.Client{Transport: t}, own: t, url: cfg.URL}
}

var textKey = []byte(`"text":"`)

// post sends tools/call name with the raw JSON arguments and returns the
// reply's text, read into buf.
func (c *httpConn) post(ctx context.Context, name, args string, buf *[]byte) ([]byte, error) {
	id := c.nextID.Add(1)
	body := make([]byte, 0, 96+len(args))
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = strconv.AppendInt(body, id, 10)
	body = append(body, `,"method":"tools/call","params":{"name":"`...)
	body = append(body, name...)
	body = append(body, `","arguments":`...)
	body = append(body, args...)
	body = append(body, "}}"...)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header["Content-Type"] = []string{"application/json"}
	req.Header["Accept"] = []string{"application/json, text/event-stream"}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b := (*buf)[:0]
	if n := resp.ContentLength; n > 0 && int64(cap(b)) < n {
		b = make([]byte, 0, n)
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, rerr := resp.Body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, rerr
		}
	}
	*buf = b
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %.200s", resp.StatusCode, b)
	}
	prefix := strconv.AppendInt([]byte(`{"jsonrpc":"2.0","id":`), id, 10)
	i := bytes.Index(b, textKey)
	if !bytes.HasPrefix(b, prefix) || i < 0 {
		return nil, fmt.Errorf("reply %.200q is not a text result for id %d", b, id)
	}
	text := b[i+len(textKey):]
	end := bytes.IndexByte(text, '"')
	if end < 0 {
		return nil, fmt.Errorf("reply %.200q has an unterminated text", b)
	}
	return text[:end], nil
}

// Echo sends an echo call; text must need no JSON escaping (the driver's
// texts are letters, digits and dashes).
func (c *httpConn) Echo(ctx context.Context, text string) (string, error) {
	buf, _ := c.bufs.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	defer c.bufs.Put(buf)
	got, err := c.post(ctx, "echo", `{"text":"`+text+`"}`, buf)
	if err != nil {
		return "", err
	}
	return string(got), nil
}

// Blob asks for n bytes; only the sequential scenario uses it, so the reply
// buffer is reused and lent without a copy, as in the stdio floor.
func (c *httpConn) Blob(ctx context.Context, n int) (string, error) {
	got, err := c.post(ctx, "blob", `{"n":`+strconv.Itoa(n)+`}`, &c.blob)
	if err != nil || len(got) == 0 {
		return "", err
	}
	return unsafe.String(&got[0], len(got)), nil
}

func (c *httpConn) Ask(ctx context.Context, q string) (string, error) {
	return "", driver.ErrUnsupported
}

func (c *httpConn) Slow(ctx context.Context, ms, steps int, progress func()) (string, error) {
	return "", driver.ErrUnsupported
}

func (c *httpConn) Close() error {
	c.own.CloseIdleConnections()
	return nil
}
