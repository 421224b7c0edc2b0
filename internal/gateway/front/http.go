package front

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// Defaults of the front's config sections.
const (
	DefaultListen             = "127.0.0.1:8080"
	DefaultMaxBodyBytes       = 4 << 20
	DefaultSessionIdleTimeout = 30 * time.Minute
	DefaultMaxSessions        = 10000

	// keepAliveEvery is how often a quiet long-lived stream gets an SSE
	// comment: under the usual 30 s to 60 s idle timeouts of proxies.
	keepAliveEvery = 15 * time.Second
)

// Front serves MCP over Streamable HTTP to many hosts.
type Front struct {
	core
	listen      string
	origins     map[string]bool
	maxBody     int64
	idleTimeout time.Duration
	maxSessions int
	keepAlive   time.Duration

	ctx    context.Context // ends at Close
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the expiry loop has ended

	mu       sync.Mutex
	sessions map[string]*session
	closed   bool
}

// errClosed ends sessions and streams at Close.
var errClosed = errors.New("the gateway is shutting down")

// New returns a Front configured from the listen, allowedOrigins,
// maxBodyBytes, sessionIdleTimeout and maxSessions sections. pol and tel
// may be nil.
func New(sections gateway.Sections, hub gateway.Hub, pol gateway.Policy, tel gateway.Telemetry, log *slog.Logger) (*Front, error) {
	if hub == nil {
		return nil, errors.New("front: a hub is needed")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &Front{
		core:        core{hub: hub, pol: pol, tel: tel, log: log},
		listen:      DefaultListen,
		origins:     map[string]bool{},
		maxBody:     DefaultMaxBodyBytes,
		idleTimeout: DefaultSessionIdleTimeout,
		maxSessions: DefaultMaxSessions,
		keepAlive:   keepAliveEvery,
		sessions:    map[string]*session{},
	}
	if err := sections.Decode("listen", &f.listen); err != nil {
		return nil, err
	}
	if f.listen == "" {
		return nil, errors.New(`config listen: empty; give a host:port such as "127.0.0.1:8080"`)
	}
	var origins []string
	if err := sections.Decode("allowedOrigins", &origins); err != nil {
		return nil, err
	}
	for _, o := range origins {
		f.origins[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
	}
	if err := sections.Decode("maxBodyBytes", &f.maxBody); err != nil {
		return nil, err
	}
	if f.maxBody <= 0 {
		return nil, fmt.Errorf("config maxBodyBytes: %d; give a positive number of bytes (default %d)", f.maxBody, DefaultMaxBodyBytes)
	}
	var idle string
	if err := sections.Decode("sessionIdleTimeout", &idle); err != nil {
		return nil, fmt.Errorf("%w (give a duration such as \"30m\")", err)
	}
	if idle != "" {
		d, err := time.ParseDuration(idle)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("config sessionIdleTimeout: %q is not a positive duration; give one such as \"30m\"", idle)
		}
		f.idleTimeout = d
	}
	if err := sections.Decode("maxSessions", &f.maxSessions); err != nil {
		return nil, err
	}
	if f.maxSessions <= 0 {
		return nil, fmt.Errorf("config maxSessions: %d; give a positive number (default %d)", f.maxSessions, DefaultMaxSessions)
	}
	f.ctx, f.cancel = context.WithCancelCause(context.Background())
	f.done = make(chan struct{})
	go f.expireLoop()
	return f, nil
}

// Listen is the address the front is configured to listen on.
func (f *Front) Listen() string { return f.listen }

// Server returns an http.Server for the front on its listen address, with
// bounds against slow or oversized request headers (a body is bounded by
// maxBodyBytes). It sets no write timeout: SSE streams live long.
func (f *Front) Server() *http.Server {
	return &http.Server{
		Addr:              f.listen,
		Handler:           f.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// Close ends every session and stream; requests in flight are cancelled.
func (f *Front) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	all := f.sessions
	f.sessions = map[string]*session{}
	f.mu.Unlock()
	f.cancel(errClosed)
	<-f.done
	for _, s := range all {
		s.cancel(errClosed)
		f.hub.EndSession(s.id)
	}
	return nil
}

// expireLoop ends idle sessions until Close.
func (f *Front) expireLoop() {
	defer close(f.done)
	every := min(f.idleTimeout/4, time.Minute)
	t := time.NewTicker(max(every, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return
		case now := <-t.C:
			f.expire(now)
		}
	}
}

// expire ends the sessions idle since before now minus the idle timeout.
func (f *Front) expire(now time.Time) {
	cutoff := now.Add(-f.idleTimeout)
	var ended []*session
	f.mu.Lock()
	for id, s := range f.sessions {
		if s.idle(cutoff) {
			delete(f.sessions, id)
			ended = append(ended, s)
		}
	}
	f.mu.Unlock()
	for _, s := range ended {
		s.cancel(errors.New("the session expired"))
		f.hub.EndSession(s.id)
		f.log.Info("session expired", "session", s.id)
	}
}

// Handler serves /mcp, /healthz, /readyz and /metrics.
func (f *Front) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", f.serveMCP)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := f.hub.Ready(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "not ready: "+err.Error()+"\n")
			return
		}
		io.WriteString(w, "ready\n")
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		if f.tel == nil {
			http.NotFound(w, r)
			return
		}
		f.tel.Handler().ServeHTTP(w, r)
	})
	return mux
}

// httpError writes a JSON-RPC error response with no id (or id) and an
// HTTP status.
func httpError(w http.ResponseWriter, status int, id jsonrpc.ID, code int64, msg string, data json.RawMessage) {
	b, err := jsonrpc.Append(nil, jsonrpc.NewErrorResponse(id, &jsonrpc.Error{Code: code, Message: msg, Data: data}))
	if err != nil {
		b, _ = jsonrpc.Append(nil, jsonrpc.NewErrorResponse(id, &jsonrpc.Error{Code: code, Message: msg}))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// checkOrigin reports whether the request's Origin, when present, is one
// of allowedOrigins.
func (f *Front) checkOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	return o == "" || f.origins[strings.ToLower(strings.TrimSuffix(o, "/"))]
}

// accepts reports whether an Accept header lists the media type (or a
// wildcard that covers it).
func accepts(values []string, typ string) bool {
	major, _, _ := strings.Cut(typ, "/")
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			if mt == typ || mt == "*/*" || mt == major+"/*" {
				return true
			}
		}
	}
	return false
}

func (f *Front) serveMCP(w http.ResponseWriter, r *http.Request) {
	if !f.checkOrigin(r) {
		httpError(w, http.StatusForbidden, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("origin %q is not allowed; add it to allowedOrigins in the gateway config", r.Header.Get("Origin")), nil)
		return
	}
	var id *gateway.Identity
	if f.pol != nil {
		var err error
		if id, err = f.pol.Authenticate(r); err != nil {
			if errors.Is(err, gateway.ErrUnauthorized) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="snodo-gateway"`)
				httpError(w, http.StatusUnauthorized, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "unauthorized: send Authorization: Bearer <token> with a token the gateway knows", nil)
				return
			}
			httpError(w, http.StatusForbidden, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "forbidden: "+err.Error(), nil)
			return
		}
	}
	switch r.Method {
	case http.MethodPost:
		f.post(w, r, id)
	case http.MethodGet:
		f.get(w, r, id)
	case http.MethodDelete:
		f.delete(w, r, id)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		httpError(w, http.StatusMethodNotAllowed, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "method "+r.Method+" is not allowed on the MCP endpoint (POST, GET, DELETE)", nil)
	}
}

// lookup finds the legacy session a request names, for its identity;
// it writes the error response and returns nil when there is none.
func (f *Front) lookup(w http.ResponseWriter, r *http.Request, id *gateway.Identity) *session {
	sid := r.Header.Get(transport.HeaderSessionID)
	if sid == "" {
		httpError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest,
			"missing Mcp-Session-Id header: send initialize first, or use protocol version 2026-07-28 (_meta io.modelcontextprotocol/protocolVersion)", nil)
		return nil
	}
	f.mu.Lock()
	s := f.sessions[sid]
	f.mu.Unlock()
	if s == nil || !sameIdentity(s.identity, id) {
		// Another identity's session is as unknown as a forged one.
		httpError(w, http.StatusNotFound, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest,
			"unknown or expired session: start a new one with initialize", nil)
		return nil
	}
	if r.Header.Get("Last-Event-ID") != "" {
		httpError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest,
			"Last-Event-ID: the gateway issues no event IDs and its streams cannot be resumed; send the request again", nil)
		return nil
	}
	if v := r.Header.Get(transport.HeaderProtocolVersion); v != "" && v != s.version {
		httpError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("MCP-Protocol-Version %q is not the version this session negotiated (%s)", v, s.version), nil)
		return nil
	}
	s.touch()
	return s
}

// readBody reads a POST body under the bound; it writes the error
// response and returns nil when it cannot.
func (f *Front) readBody(w http.ResponseWriter, r *http.Request) []byte {
	tooLarge := func() {
		w.Header().Set("Connection", "close")
		httpError(w, http.StatusRequestEntityTooLarge, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("request body larger than the gateway's limit of %d bytes (maxBodyBytes)", f.maxBody), nil)
	}
	if r.ContentLength > f.maxBody {
		tooLarge()
		return nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, f.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			tooLarge()
			return nil
		}
		httpError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "reading the request body: "+err.Error(), nil)
		return nil
	}
	return body
}

func (f *Front) post(w http.ResponseWriter, r *http.Request, id *gateway.Identity) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		httpError(w, http.StatusUnsupportedMediaType, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("Content-Type %q: the MCP endpoint takes application/json", r.Header.Get("Content-Type")), nil)
		return
	}
	if !accepts(r.Header.Values("Accept"), "application/json") || !accepts(r.Header.Values("Accept"), "text/event-stream") {
		httpError(w, http.StatusNotAcceptable, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest,
			"Accept must list both application/json and text/event-stream", nil)
		return
	}
	body := f.readBody(w, r)
	if body == nil {
		return
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		httpError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest,
			"JSON-RPC batching is not supported: send one message per POST", nil)
		return
	}
	msg, err := jsonrpc.Decode(body)
	if err != nil {
		je := decodeError(err)
		httpError(w, http.StatusBadRequest, jsonrpc.ID{}, je.Code, je.Message, nil)
		return
	}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		f.postRequest(w, r, id, m)
	case *jsonrpc.Notification:
		f.postNotification(w, r, id, m)
	case *jsonrpc.Response:
		s := f.lookup(w, r, id)
		if s == nil {
			return
		}
		if err := s.answer(m); err != nil {
			httpError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("response id %s: %v", m.ID, err), nil)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}
}

func (f *Front) postNotification(w http.ResponseWriter, r *http.Request, id *gateway.Identity, n *jsonrpc.Notification) {
	if n.Method == "notifications/initialized" || r.Header.Get(transport.HeaderSessionID) != "" {
		s := f.lookup(w, r, id)
		if s == nil {
			return
		}
		if n.Method == "notifications/cancelled" {
			s.cancelled(n.Params)
		}
	}
	// A 2026-07-28 host sends no notifications over HTTP; whatever comes
	// is accepted and dropped.
	w.WriteHeader(http.StatusAccepted)
}

// checkModernHeaders checks a 2026-07-28 request's headers against its body.
func checkModernHeaders(h http.Header, c *call) *jsonrpc.Error {
	mismatch := func(format string, a ...any) *jsonrpc.Error {
		return &jsonrpc.Error{Code: jsonrpc.CodeHeaderMismatch, Message: "header mismatch: " + fmt.Sprintf(format, a...)}
	}
	if v := h.Get(transport.HeaderProtocolVersion); v != c.version {
		return mismatch("MCP-Protocol-Version %q does not match the body's %q", v, c.version)
	}
	if v := h.Get(transport.HeaderMethod); v != c.req.Method {
		return mismatch("Mcp-Method %q does not match the body's method %q", v, c.req.Method)
	}
	var key string
	switch c.req.Method {
	case "tools/call", "prompts/get":
		key = "name"
	case "resources/read":
		key = "uri"
	}
	if key != "" {
		var want string
		_ = json.Unmarshal(c.params[key], &want)
		raw := h.Get(transport.HeaderName)
		got, err := transport.DecodeHeaderValue(raw)
		if raw == "" || err != nil || got != want {
			return mismatch("Mcp-Name %q does not match the body's %s %q", raw, key, want)
		}
	}
	return nil
}

func (f *Front) postRequest(w http.ResponseWriter, r *http.Request, id *gateway.Identity, req *jsonrpc.Request) {
	c, jerr := decodeCall(req)
	if jerr != nil {
		httpError(w, http.StatusBadRequest, req.ID, jerr.Code, jerr.Message, jerr.Data)
		return
	}
	if c.modern {
		if jerr := checkModernHeaders(r.Header, c); jerr != nil {
			httpError(w, http.StatusBadRequest, req.ID, jerr.Code, jerr.Message, nil)
			return
		}
		if req.Method == "initialize" {
			httpError(w, http.StatusBadRequest, req.ID, jsonrpc.CodeInvalidRequest, "initialize is not part of protocol version "+c.version+": use server/discover", nil)
			return
		}
		ctx, stop := f.requestContext(r.Context(), nil)
		defer stop()
		sw := newSSEWriter(w)
		if req.Method == "subscriptions/listen" {
			defer f.keepStreamAlive(ctx, sw)()
		}
		res, err := f.serve(ctx, c, nil, id, stream{notify: sw.notify, header: r.Header})
		f.respond(ctx, w, r, sw, req, res, err, true)
		return
	}
	if req.Method == "initialize" {
		f.initialize(w, r, id, c)
		return
	}
	if req.Method == "server/discover" || req.Method == "subscriptions/listen" {
		// A legacy request: the stateless methods need the _meta version.
		data, _ := json.Marshal(map[string]any{"supported": modernVersions, "requested": ""})
		httpError(w, http.StatusBadRequest, req.ID, jsonrpc.CodeUnsupportedProtocolVersion,
			req.Method+" needs _meta io.modelcontextprotocol/protocolVersion (2026-07-28)", data)
		return
	}
	s := f.lookup(w, r, id)
	if s == nil {
		return
	}
	ctx, stop := f.requestContext(r.Context(), s)
	defer stop()
	ctx, end, jerr := s.begin(ctx, req.ID)
	if jerr != nil {
		httpError(w, http.StatusBadRequest, req.ID, jerr.Code, jerr.Message, nil)
		return
	}
	defer end()
	sw := newSSEWriter(w)
	ask := func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		return s.ask(ctx, method, params, sw.send)
	}
	res, err := f.serve(ctx, c, s, id, stream{notify: sw.notify, ask: ask, header: r.Header})
	f.respond(ctx, w, r, sw, req, res, err, false)
}

// keepStreamAlive writes keep-alive comments on sw until the returned
// stop is called, which waits for the writer to end (the handler calls it
// before it returns).
func (f *Front) keepStreamAlive(ctx context.Context, sw *sseWriter) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sw.keepAlive(ctx, f.keepAlive)
	}()
	return func() { cancel(); <-done }
}

// requestContext is a request's context, which also ends at Close and
// with the session.
func (f *Front) requestContext(parent context.Context, s *session) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(f.ctx, func() { cancel(errClosed) })
	stopS := func() bool { return false }
	if s != nil {
		stopS = context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })
	}
	return ctx, func() { stop(); stopS(); cancel(nil) }
}

// respond writes a request's answer: on its SSE stream when one was
// opened, else as a JSON body. Nothing is written once ctx has ended.
func (f *Front) respond(ctx context.Context, w http.ResponseWriter, r *http.Request, sw *sseWriter, req *jsonrpc.Request, res json.RawMessage, err error, modern bool) {
	if res == nil && err == nil {
		cause := context.Cause(ctx)
		if r.Context().Err() != nil || errors.Is(cause, errCancelledByHost) {
			sw.end() // the host went away, or cancelled: nothing is answered
			return
		}
		// Ended by the gateway (the session ended, the gateway is
		// shutting down): the host, still waiting, is told why.
		err = &jsonrpc.Error{Code: jsonrpc.CodeConnectionClosed, Message: "the request was ended: " + cause.Error()}
	}
	var m *jsonrpc.Response
	status := http.StatusOK
	if err != nil {
		je := toWire(err)
		m = jsonrpc.NewErrorResponse(req.ID, je)
		if modern {
			status = modernStatus(je.Code)
		}
	} else {
		m = jsonrpc.NewResult(req.ID, res)
	}
	b, encErr := jsonrpc.Append(nil, m)
	if encErr != nil {
		b, _ = jsonrpc.Append(nil, jsonrpc.NewErrorResponse(req.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the answer could not be encoded"}))
	}
	if sw.finish(b) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// modernStatus is the HTTP status of a 2026-07-28 request's error, as the
// Streamable HTTP transport says: 404 for a method the gateway does not
// serve, 400 for a protocol version, header or capability error.
func modernStatus(code int64) int {
	switch code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeUnsupportedProtocolVersion, jsonrpc.CodeHeaderMismatch, jsonrpc.CodeMissingRequiredClientCapability:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

func (f *Front) initialize(w http.ResponseWriter, r *http.Request, id *gateway.Identity, c *call) {
	version, caps, info, res, err := f.core.initialize(c)
	if err != nil {
		httpError(w, http.StatusBadRequest, c.req.ID, toWire(err).Code, toWire(err).Message, nil)
		return
	}
	s := newSession(f.ctx, newSessionID(), id)
	s.version, s.caps, s.clientInfo, s.lastUsed = version, caps, info, time.Now()
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		httpError(w, http.StatusServiceUnavailable, c.req.ID, jsonrpc.CodeInternalError, "the gateway is shutting down", nil)
		return
	}
	if len(f.sessions) >= f.maxSessions {
		f.mu.Unlock()
		s.cancel(nil)
		w.Header().Set("Retry-After", "60")
		httpError(w, http.StatusServiceUnavailable, c.req.ID, jsonrpc.CodeInternalError,
			fmt.Sprintf("the gateway holds its maximum of %d sessions: retry later, or use protocol version 2026-07-28, which needs no session", f.maxSessions), nil)
		return
	}
	f.sessions[s.id] = s
	f.mu.Unlock()
	w.Header().Set(transport.HeaderSessionID, s.id)
	b, _ := jsonrpc.Append(nil, jsonrpc.NewResult(c.req.ID, res))
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// get opens a legacy session's standalone stream, fed by hub.Watch.
func (f *Front) get(w http.ResponseWriter, r *http.Request, id *gateway.Identity) {
	if !accepts(r.Header.Values("Accept"), "text/event-stream") {
		httpError(w, http.StatusNotAcceptable, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "Accept must list text/event-stream for GET", nil)
		return
	}
	if r.Header.Get(transport.HeaderSessionID) == "" {
		w.Header().Set("Allow", "POST")
		httpError(w, http.StatusMethodNotAllowed, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest,
			"GET opens a legacy session's stream and needs Mcp-Session-Id; with protocol version 2026-07-28 use subscriptions/listen", nil)
		return
	}
	s := f.lookup(w, r, id)
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.watching {
		s.mu.Unlock()
		httpError(w, http.StatusConflict, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "this session's stream is already open", nil)
		return
	}
	s.watching = true
	s.active++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.watching = false
		s.active--
		s.lastUsed = time.Now()
		s.mu.Unlock()
	}()
	ctx, stop := f.requestContext(r.Context(), s)
	defer stop()
	sw := newSSEWriter(w)
	sw.open()
	defer sw.end()
	defer f.keepStreamAlive(ctx, sw)()
	f.hub.Watch(ctx, s.id, id, sw.notify)
}

// delete ends a legacy session.
func (f *Front) delete(w http.ResponseWriter, r *http.Request, id *gateway.Identity) {
	s := f.lookup(w, r, id)
	if s == nil {
		return
	}
	f.mu.Lock()
	mine := f.sessions[s.id] == s
	delete(f.sessions, s.id)
	f.mu.Unlock()
	if mine {
		s.cancel(errors.New("the host ended the session"))
		f.hub.EndSession(s.id)
	}
	w.WriteHeader(http.StatusNoContent)
}
