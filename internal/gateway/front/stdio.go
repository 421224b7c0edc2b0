package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/jsonrpc"
)

// maxStdioLineBytes bounds one message of the stdio host.
const maxStdioLineBytes = DefaultMaxBodyBytes

// stdioHost is the one local host of ServeStdio.
type stdioHost struct {
	core
	out io.Writer
	id  *gateway.Identity

	wmu sync.Mutex // serializes writes to out
	wg  sync.WaitGroup

	mu      sync.Mutex
	sess    *session // the legacy session after initialize, or nil
	modern  *session // the in-flight table of 2026-07-28 requests
	watched bool
}

// ServeStdio serves one local host on newline-delimited JSON-RPC over in
// and out, in both eras, until in ends or ctx ends. Its identity is
// pol.Authenticate(nil) when pol is not nil. When ctx ends first, the
// requests in flight are cancelled and ServeStdio returns, but a read of in
// in progress ends only when in is closed: the caller closes it.
func ServeStdio(ctx context.Context, in io.Reader, out io.Writer, hub gateway.Hub, pol gateway.Policy, tel gateway.Telemetry, log *slog.Logger) error {
	if hub == nil {
		return errors.New("front: a hub is needed")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &stdioHost{core: core{hub: hub, pol: pol, tel: tel, log: log}, out: out}
	if pol != nil {
		id, err := pol.Authenticate(nil)
		if err != nil {
			return fmt.Errorf("the stdio host is not allowed: %w", err)
		}
		h.id = id
	}
	ctx, cancel := context.WithCancelCause(ctx)
	h.modern = newSession(ctx, "", h.id)
	defer func() {
		cancel(errors.New("the host's input ended"))
		h.wg.Wait()
		h.mu.Lock()
		s := h.sess
		h.mu.Unlock()
		if s != nil {
			hub.EndSession(s.id)
		}
	}()
	lines := make(chan []byte)
	errc := make(chan error, 1)
	lr := jsonrpc.NewLineReader(in, maxStdioLineBytes)
	go func() {
		for {
			line, err := lr.ReadLine()
			if err != nil {
				var tl *jsonrpc.LineTooLongError
				if errors.As(err, &tl) {
					h.write(jsonrpc.NewErrorResponse(jsonrpc.ID{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
						Message: fmt.Sprintf("message of %d bytes is longer than the limit of %d bytes", tl.Bytes, tl.Limit)}))
					continue
				}
				errc <- err
				return
			}
			select {
			case lines <- line:
			case <-ctx.Done():
				errc <- nil
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			if err == nil || errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case line := <-lines:
			h.dispatch(ctx, line)
		}
	}
}

// write writes one message as one line.
func (h *stdioHost) write(m jsonrpc.Message) error {
	b, err := jsonrpc.Append(make([]byte, 0, 256), m)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	h.wmu.Lock()
	defer h.wmu.Unlock()
	_, err = h.out.Write(b)
	return err
}

func (h *stdioHost) notify(method string, params json.RawMessage) error {
	return h.write(&jsonrpc.Notification{Method: method, Params: params})
}

func (h *stdioHost) fail(id jsonrpc.ID, err error) {
	h.write(jsonrpc.NewErrorResponse(id, toWire(err)))
}

// dispatch handles one line of the host.
func (h *stdioHost) dispatch(ctx context.Context, line []byte) {
	if t := trimLeftSpace(line); len(t) > 0 && t[0] == '[' {
		h.fail(jsonrpc.ID{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "JSON-RPC batching is not supported: send one message per line"})
		return
	}
	msg, err := jsonrpc.Decode(line)
	if err != nil {
		h.fail(jsonrpc.ID{}, decodeError(err))
		return
	}
	h.mu.Lock()
	sess := h.sess
	h.mu.Unlock()
	switch m := msg.(type) {
	case *jsonrpc.Response:
		if sess != nil {
			_ = sess.answer(m)
		}
	case *jsonrpc.Notification:
		switch m.Method {
		case "notifications/cancelled":
			h.modern.cancelled(m.Params)
			if sess != nil {
				sess.cancelled(m.Params)
			}
		case "notifications/initialized":
			h.watch(ctx, sess)
		}
	case *jsonrpc.Request:
		c, jerr := decodeCall(m)
		if jerr != nil {
			h.fail(m.ID, jerr)
			return
		}
		if c.modern {
			h.start(ctx, h.modern, c, nil)
			return
		}
		if m.Method == "initialize" {
			version, caps, info, res, err := h.initialize(c)
			if err != nil {
				h.fail(m.ID, err)
				return
			}
			s := newSession(ctx, "stdio", h.id)
			s.version, s.caps, s.clientInfo = version, caps, info
			h.mu.Lock()
			old := h.sess
			h.sess, h.watched = s, false // the old session's Watch ends with it
			h.mu.Unlock()
			if old != nil {
				old.cancel(errors.New("the host initialized again"))
			}
			h.write(jsonrpc.NewResult(m.ID, res))
			return
		}
		if sess == nil {
			h.fail(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: "send initialize first, or use protocol version 2026-07-28 (_meta io.modelcontextprotocol/protocolVersion)"})
			return
		}
		h.start(ctx, sess, c, func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			return sess.ask(ctx, method, params, h.write)
		})
	}
}

// watch starts feeding the legacy session's notifications from hub.Watch.
func (h *stdioHost) watch(ctx context.Context, s *session) {
	h.mu.Lock()
	if s == nil || h.watched {
		h.mu.Unlock()
		return
	}
	h.watched = true
	h.mu.Unlock()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.hub.Watch(s.ctx, s.id, h.id, h.notify)
	}()
}

// start serves a request in a goroutine of its own.
func (h *stdioHost) start(ctx context.Context, s *session, c *call, ask func(context.Context, string, json.RawMessage) (json.RawMessage, error)) {
	rctx, end, jerr := s.begin(ctx, c.req.ID)
	if jerr != nil {
		h.fail(c.req.ID, jerr)
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer end()
		sess := s
		if c.modern {
			sess = nil
		}
		res, err := h.serve(rctx, c, sess, h.id, stream{notify: h.notify, ask: ask})
		switch {
		case res == nil && err == nil:
			// Cancelled: the receiver of a cancellation does not answer.
		case err != nil:
			h.fail(c.req.ID, err)
		default:
			h.write(jsonrpc.NewResult(c.req.ID, res))
		}
	}()
}

func trimLeftSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	return b
}
