package snodo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/internal/admit"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// Client is a connection to one MCP server, in the protocol era and version
// chosen at Connect. It is safe for concurrent use.
type Client struct {
	t       transport.Transport
	cfg     *config
	dialect dialect

	serverInfo   Implementation
	capabilities ServerCapabilities
	instructions string
	discovered   *DiscoverResult

	// gate admits every server request, of either era, under
	// Options.MaxServerRequests.
	gate *admit.Gate
	// life ends, with its cause, at Close or when the connection stops;
	// the handlers of server requests run under it.
	life    context.Context
	endLife context.CancelCauseFunc

	tokenMu   sync.Mutex
	nextToken int64

	subs legacySubscriptions

	// headers: the transport carries headers (transport.HeaderCarrier).
	headers bool
	// session is the Mcp-Session-Id the server issued with its
	// initialize response, if any, and its renewal (session.go).
	session     session
	toolHeaders toolHeaders

	// tasks follows the server's tasks (tasks.go).
	tasks taskState
	// ctasks keeps the tasks the server asked the client to run
	// (clienttasks.go).
	ctasks clientTasks

	logLevel legacyLogLevel
	cache    *resultCache
	elicit   urlElicitations

	// ka is the Keepalive pinger (keepalive.go).
	ka keepalive
	// chain is the client's interceptors (interceptors.go), or nil.
	chain *intercept.Chain

	closeOnce sync.Once
	closeErr  error
}

// Connect opens a client over t.
//
// By default it probes the server with server/discover, carrying the
// newest modern version in _meta: a DiscoverResult makes the connection
// modern, with the newest version both sides speak; an
// UnsupportedProtocolVersionError (-32022) makes it modern with a version
// from the error's supported list, and never falls back — unless that list
// names only legacy versions, in which case the newest of them is the one
// offered in the initialize handshake; any other error,
// or no answer within the probe timeout, marks a legacy server (over
// Streamable HTTP, so does a 400, 404 or 405 without a JSON-RPC error body;
// not a refused connection, a 401 or a 403, nor an error only a 2026-07-28
// server sends, such as -32020), and Connect falls back to the initialize
// handshake, offering 2025-11-25 and
// accepting 2024-11-05, 2025-03-26, 2025-06-18 or 2025-11-25, followed by
// notifications/initialized. Options.Era and Options.ProtocolVersion skip
// the probe. The era is kept for the connection.
//
// If t implements transport.Inbound, Connect installs the client's answerer
// of server requests and notifications on it first. Over a transport that
// carries headers (transport.HeaderCarrier: Streamable HTTP), the client
// keeps the Mcp-Session-Id of the initialize response for the session's
// later messages. On error, t is left open: the caller closes it.
//
// See the specification's basic/transports/stdio.mdx "Backward
// Compatibility" and basic/versioning.mdx.
func Connect(ctx context.Context, t transport.Transport, opts *Options) (*Client, error) {
	cfg := newConfig(opts)
	if cfg.err != nil {
		return nil, cfg.err
	}
	c := &Client{t: t, cfg: cfg, gate: admit.New(cfg.maxServerRequests), cache: newResultCache(cfg.cache)}
	if len(cfg.interceptors) > 0 {
		c.chain = intercept.NewChain(cfg.interceptors...)
	}
	c.life, c.endLife = context.WithCancelCause(context.Background())
	c.subs.init()
	if in, ok := t.(transport.Inbound); ok {
		in.SetInbound(c.dispatch, c.onNotification)
	}
	if hc, ok := t.(transport.HeaderCarrier); ok {
		c.headers = hc.CarriesHeaders()
	}
	if sw, ok := t.(transport.StreamWatcher); ok {
		sw.OnStreamLost(c.onStreamLost)
	}

	era := cfg.era
	if cfg.version != "" {
		e, ok := eraOf(cfg.version)
		if !ok {
			return nil, protocolError(jsonrpc.CodeInvalidParams, ErrUnsupportedVersion,
				"protocol version %q is not one Snodo speaks (%v)", cfg.version, SupportedVersions())
		}
		if era != EraAuto && era != e {
			return nil, protocolError(jsonrpc.CodeInvalidParams, nil,
				"protocol version %s belongs to the %s era, not the %s era", cfg.version, e, era)
		}
		era = e
	}

	var err error
	switch era {
	case EraLegacy:
		err = c.initialize(ctx, "")
	case EraModern:
		err = c.discoverEra(ctx, false)
	default:
		err = c.discoverEra(ctx, true)
		var listed *listedLegacyError
		switch {
		case errors.Is(err, errLegacyServer):
			err = c.initialize(ctx, "")
		case errors.As(err, &listed):
			err = c.initialize(ctx, listed.version)
		}
	}
	if err != nil {
		c.endLife(err)
		return nil, err
	}
	if d, ok := t.(doner); ok {
		// Handlers and emulated subscriptions end with the connection, as
		// transport subscriptions do.
		go func() {
			select {
			case <-d.Done():
			case <-c.life.Done():
				return
			}
			err := d.Err()
			if err == nil {
				err = transport.ConnectionError("connection closed", nil)
			}
			c.endLife(err)
			c.subs.failAll(err)
		}()
	}
	c.startKeepalive()
	return c, nil
}

// doner is implemented by a transport that says when its connection has
// stopped, and why (stdio does).
type doner interface {
	Done() <-chan struct{}
	Err() error
}

// errLegacyServer says the probe found a legacy server.
var errLegacyServer = errors.New("legacy server")

// listedLegacyError says the probe got -32022 whose supported list names
// legacy versions Snodo speaks and no modern one: the server itself says
// which version to use, and that version is negotiated with initialize.
// (The official Go SDK's servers answer so when configured for legacy
// versions only.)
type listedLegacyError struct{ version string }

func (e *listedLegacyError) Error() string {
	return "the server lists only legacy versions; newest: " + e.version
}

// discoverEra probes with server/discover. With fallback, an answer that is
// not a modern one returns errLegacyServer.
func (c *Client) discoverEra(ctx context.Context, fallback bool) error {
	preferred := modernVersions[0]
	if c.cfg.version != "" {
		preferred = c.cfg.version
	}
	timeout := c.cfg.timeout
	if fallback {
		timeout = c.cfg.probeTimeout
	}
	version := preferred
	for attempt := 0; ; attempt++ {
		c.dialect = newModernDialect(version, c.cfg.clientInfo, c.cfg.clientCapabilities(version))
		raw, err := c.call(ctx, "server/discover", nil, &callConfig{timeout: timeout, handshake: true})
		if err == nil {
			res, err := decodeDiscover(raw)
			if fallback && (err != nil || len(res.SupportedVersions) == 0) {
				// Not a DiscoverResult: a lax legacy server that answers
				// any method.
				return errLegacyServer
			}
			if err != nil {
				return badResult("server/discover", err)
			}
			chosen, ok := newestModern(version, res.SupportedVersions)
			if !ok {
				return protocolError(jsonrpc.CodeUnsupportedProtocolVersion, ErrUnsupportedVersion,
					"the server supports %v, none of Snodo's modern versions %v", res.SupportedVersions, modernVersions)
			}
			if chosen != version {
				c.dialect = newModernDialect(chosen, c.cfg.clientInfo, c.cfg.clientCapabilities(chosen))
			}
			c.discovered = res
			c.serverInfo = res.ServerInfo
			c.capabilities = res.Capabilities
			c.instructions = res.Instructions
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		var e *Error
		if errors.As(err, &e) && e.Kind == jsonrpc.KindServer && e.Code == jsonrpc.CodeUnsupportedProtocolVersion {
			// A modern server that does not speak our version: retry with
			// one from its list; never fall back to initialize.
			var data struct {
				Supported []string `json:"supported"`
			}
			_ = unmarshal(e.Data, &data)
			next, ok := newestModern("", data.Supported)
			if !ok && fallback {
				// Following the server's list, not falling back: the
				// version it names is negotiated with initialize.
				for _, v := range legacyVersions {
					if slices.Contains(data.Supported, v) {
						return &listedLegacyError{version: v}
					}
				}
			}
			if ok && attempt > 0 {
				return protocolError(jsonrpc.CodeUnsupportedProtocolVersion, ErrUnsupportedVersion,
					"server/discover answered -32022 again, to version %s, with supported versions %v", version, data.Supported)
			}
			// A list naming the version just refused is retried once, as
			// any other: the server may have had a reason of its own.
			if !ok {
				// The error marks a modern server: no fallback, but say
				// how to reach the legacy versions it may list. Its data
				// carries the server's list, for programs.
				e := protocolError(jsonrpc.CodeUnsupportedProtocolVersion, ErrUnsupportedVersion,
					"server/discover answered -32022 with supported versions %v, none of Snodo's modern versions %v; to use a legacy version the server lists, connect with Options.Era set to EraLegacy",
					data.Supported, modernVersions)
				e.Data, _ = json.Marshal(map[string][]string{"supported": data.Supported})
				return e
			}
			version = next
			continue
		}
		if !fallback {
			return err
		}
		var te *Error
		if errors.As(err, &te) && te.Kind == jsonrpc.KindServer &&
			(te.Code == jsonrpc.CodeHeaderMismatch || te.Code == jsonrpc.CodeMissingRequiredClientCapability) {
			// Errors only a 2026-07-28 server sends: it is modern, and
			// falling back would hide the problem (streamable-http.mdx,
			// "Backward Compatibility").
			return err
		}
		if errors.As(err, &te) && (te.Kind == jsonrpc.KindServer || errors.Is(err, transport.ErrTimeout)) {
			return errLegacyServer
		}
		if errors.As(err, &te) && te.Kind == jsonrpc.KindProtocol {
			// An answer that is not a DiscoverResult: not a modern server.
			return errLegacyServer
		}
		var se *transport.StatusError
		if errors.As(err, &se) && (se.Status == 400 || se.Status == 404 || se.Status == 405) {
			// Streamable HTTP: a failure status without a JSON-RPC error
			// body is a server without the 2026-07-28 endpoint
			// (streamable-http.mdx, "Backward Compatibility"). A refused
			// connection is not.
			return errLegacyServer
		}
		return err
	}
}

// initialize runs the legacy handshake, offering offer, or when empty the
// version asked for with Options.ProtocolVersion, or latestLegacyVersion.
func (c *Client) initialize(ctx context.Context, offer string) error {
	n, ok := c.t.(transport.Notifier)
	if !ok {
		return protocolError(jsonrpc.CodeInternalError, nil,
			"the transport cannot send notifications, which the legacy era needs for notifications/initialized")
	}
	offered := latestLegacyVersion
	if c.cfg.version != "" {
		offered = c.cfg.version
	}
	if offer != "" {
		offered = offer
	}
	c.dialect = legacyDialect{version: offered}
	params, err := marshalOnce(struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      Implementation  `json:"clientInfo"`
	}{offered, c.cfg.clientCapabilities(offered), c.cfg.clientInfo})
	if err != nil {
		return err
	}
	var sessionID string
	cc := &callConfig{handshake: true, onResponseHeaders: func(hs []transport.Header) {
		for _, h := range hs {
			if h.Name == "mcp-session-id" {
				sessionID = h.Value
			}
		}
	}}
	c.session.initParams, c.session.initDialect = params, c.dialect
	raw, err := c.call(ctx, "initialize", params, cc)
	if err != nil {
		return err
	}
	if sessionID != "" {
		if !validSessionID(sessionID) {
			return protocolError(jsonrpc.CodeInternalError, nil,
				"the server issued an Mcp-Session-Id that is not visible ASCII (%d bytes)", len(sessionID))
		}
		c.session.set(sessionID)
	}
	var res struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ServerInfo      Implementation  `json:"serverInfo"`
		Instructions    string          `json:"instructions"`
	}
	if err := unmarshalOnce(raw, &res); err != nil {
		return badResult("initialize", err)
	}
	if !slices.Contains(legacyVersions, res.ProtocolVersion) {
		return protocolError(jsonrpc.CodeUnsupportedProtocolVersion, ErrUnsupportedVersion,
			"the server chose protocol version %q; Snodo speaks %v over initialize", res.ProtocolVersion, legacyVersions)
	}
	if c.cfg.version != "" && res.ProtocolVersion != c.cfg.version {
		return protocolError(jsonrpc.CodeUnsupportedProtocolVersion, ErrUnsupportedVersion,
			"protocol version %s was required, the server chose %s", c.cfg.version, res.ProtocolVersion)
	}
	caps, err := decodeCapabilities(res.Capabilities)
	if err != nil {
		return badResult("initialize", err)
	}
	c.dialect = legacyDialect{version: res.ProtocolVersion}
	c.serverInfo, c.capabilities, c.instructions = res.ServerInfo, caps, res.Instructions

	err = n.Notify(ctx, &jsonrpc.Notification{Method: "notifications/initialized", Params: json.RawMessage(`{}`)},
		transport.NotifyOptions{Timeout: c.cfg.timeout, Dialect: c.dialect, Headers: c.sessionHeaders()})
	return err
}

// maxSessionIDBytes bounds the session ID a server may issue.
const maxSessionIDBytes = 1024

// validSessionID reports whether id is a session ID the client accepts:
// visible ASCII (0x21–0x7E) only, as the specification requires, and not
// absurdly long, since it goes into every request.
func validSessionID(id string) bool {
	if len(id) > maxSessionIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// sessionDeleteTimeout bounds the DELETE of the session at Close.
const sessionDeleteTimeout = 5 * time.Second

// Handshake is what the client and the server settled when the client
// connected: the era and version they speak, and what the server said of
// itself, in the server/discover answer (2026-07-28) or the initialize
// result (legacy). Its maps and raw JSON are the client's own: read them,
// do not change them.
type Handshake struct {
	// Era is the connection's protocol era: EraLegacy or EraModern.
	Era Era
	// ProtocolVersion is the negotiated protocol version.
	ProtocolVersion string
	// Implementation is the server's name and version, as it reported
	// them (serverInfo).
	Implementation Implementation
	// Capabilities are the server's capabilities.
	Capabilities ServerCapabilities
	// Instructions are the server's instructions, if any.
	Instructions string
	// Discovered is the result of the server/discover probe that opened a
	// modern connection, and nil for a legacy one.
	Discovered *DiscoverResult
}

// Server returns what the client and the server settled when the client
// connected (see Handshake).
func (c *Client) Server() Handshake {
	return Handshake{
		Era:             c.dialect.Era(),
		ProtocolVersion: c.dialect.ProtocolVersion(),
		Implementation:  c.serverInfo,
		Capabilities:    c.capabilities,
		Instructions:    c.instructions,
		Discovered:      c.discovered,
	}
}

// Close ends the client's subscriptions, cancels the handlers still running
// for server requests and input requests (their calls return a -32000
// connection error wrapping ErrClientClosed), and closes the transport. For
// stdio, that closes the server's stdin; the server exits at EOF.
//
// On an initialize-era HTTP connection whose server issued a session ID,
// Close first ends the session with the transport's DeleteSession (an
// HTTP DELETE, waiting at most 5 s; its failure is not Close's error).
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.endLife(transport.ConnectionError("client closed", ErrClientClosed))
		c.stopKeepalive()
		c.subs.closeAll()
		if hs := c.sessionHeaders(); hs != nil && c.keepaliveErr() == nil {
			if d, ok := c.t.(transport.SessionDeleter); ok {
				ctx, cancel := context.WithTimeout(context.Background(), sessionDeleteTimeout)
				hs = append(hs, transport.Header{Name: transport.HeaderProtocolVersion, Value: c.dialect.ProtocolVersion()})
				_ = d.DeleteSession(ctx, transport.SessionOptions{Timeout: sessionDeleteTimeout, Headers: hs})
				cancel()
			}
		}
		c.closeErr = c.t.Close()
	})
	return c.closeErr
}

// progressToken returns a token unique on the client, as an ID and as
// JSON.
func (c *Client) progressToken() (jsonrpc.ID, []byte) {
	c.tokenMu.Lock()
	c.nextToken++
	n := c.nextToken
	c.tokenMu.Unlock()
	id := jsonrpc.StringID(fmt.Sprintf("snodo-%d", n))
	return id, id.AppendJSON(nil)
}

// progressFunc returns the transport's progress function for a call: the
// client's progress consumer (internal/clienthook) with the raw params,
// then the call's WithProgress function with the decoded ones; nil when
// neither is set. An error of either cancels the call on the server.
func (c *Client) progressFunc(ctx context.Context, cc *callConfig) transport.ProgressFunc {
	consumer, show := c.cfg.onProgress, cc.onProgress
	if consumer == nil && show == nil {
		return nil
	}
	return func(params json.RawMessage) error {
		if consumer != nil {
			if err := consumer(ctx, params); err != nil {
				return err
			}
		}
		if show != nil {
			var p Progress
			if err := unmarshal(params, &p); err != nil {
				return protocolError(jsonrpc.CodeInvalidParams, err, "invalid progress notification")
			}
			show(p)
		}
		return nil
	}
}

func (c *Client) callConfig(opts []CallOption) *callConfig {
	cc := &callConfig{timeout: c.cfg.timeout}
	for _, o := range opts {
		o(cc)
	}
	return cc
}

// call sends method with params (a JSON object of the method's members, or
// nil) and returns the complete result. In the modern era it reads the
// result type and runs the multi round-trip loop.
func (c *Client) call(ctx context.Context, method string, params []byte, cc *callConfig) (json.RawMessage, error) {
	return c.callParams(ctx, method, params, false, cc)
}

// callOwn is call for params encoded for this call alone, compact, which
// nothing else reads or writes: a request that adds nothing to them sends
// them as they are instead of a copy.
func (c *Client) callOwn(ctx context.Context, method string, params []byte, cc *callConfig) (json.RawMessage, error) {
	return c.callParams(ctx, method, params, true, cc)
}

func (c *Client) callParams(ctx context.Context, method string, params []byte, own bool, cc *callConfig) (json.RawMessage, error) {
	if c.chain.Len() > 0 && !cc.handshake {
		return c.callIntercepted(ctx, method, params, own, cc)
	}
	return c.send(ctx, method, params, own, cc)
}

// send sends method with params, as callParams does, without the
// interceptors: round after round while the server asks for input (the
// 2026-07-28 era), once again in a new session or after re-reading the
// tools' headers when the server says so.
func (c *Client) send(ctx context.Context, method string, params []byte, own bool, cc *callConfig) (json.RawMessage, error) {
	if err := c.keepaliveErr(); err != nil {
		return nil, err
	}
	if err := c.prepareCall(ctx, method, cc); err != nil {
		return nil, err
	}
	if method == "logging/setLevel" {
		c.noteDeprecated(method)
	}
	s := c.newSending(ctx, method, params, own, cc)
	var (
		inputResponses []byte          // this round's answers, or nil
		requestState   json.RawMessage // the server's state, verbatim, or nil
	)
	for round := 0; ; round++ {
		resp, err := s.request(ctx, cc, round, roundTail(inputResponses, requestState))
		if retry, rerr := s.again(ctx, cc, resp, err); rerr != nil {
			return nil, rerr
		} else if retry {
			round--
			continue
		}
		if err != nil {
			return nil, err
		}
		if resp.Error != nil {
			cc.answer = c.serverError(method, resp.Error)
			return nil, cc.answer
		}
		if !s.d.inputRounds() || acceptsTask(cc, resp.Result) {
			return resp.Result, nil
		}
		ir, err := readResultType(resp.Result)
		if err != nil {
			return nil, badResult(method, err)
		}
		if ir == nil {
			cc.rounds = round
			return resp.Result, nil
		}
		if err := checkInputRequired(method, ir); err != nil {
			return nil, err
		}
		if cc.oneRound {
			// The caller answers the inputs itself (clienthook.OneRound).
			cc.inputRequired = true
			return resp.Result, nil
		}
		if round >= c.cfg.maxRounds {
			return nil, protocolError(jsonrpc.CodeInternalError, ErrTooManyRounds,
				"%s: the server still asks for input after %d rounds", method, c.cfg.maxRounds)
		}
		inputResponses, err = c.answerInputs(ctx, method, ir.InputRequests, cc, s.deadline)
		if err != nil {
			return nil, err
		}
		requestState = ir.RequestState
	}
}

// sending is one call of send: what every round of it sends the same way.
// It holds no *callConfig: escape analysis follows a struct as a whole,
// and the call's config stays on the caller's stack.
type sending struct {
	c          *Client
	method     string
	params     []byte
	own        bool
	d          dialect
	headers    []transport.Header
	extension  transport.PolicySource
	onProgress transport.ProgressFunc
	deadline   time.Time // the call's total deadline, if any
	refreshed  bool      // tools/list was read again after a -32020
	renewed    bool      // sent again in a new session after a 404
}

func (c *Client) newSending(ctx context.Context, method string, params []byte, own bool, cc *callConfig) sending {
	// Locals first: escape analysis follows a struct as a whole, and d's
	// method must not make cc escape with it.
	d := c.callDialect(cc)
	var extension transport.PolicySource
	if c.headers {
		extension = d.extension(method)
	}
	onProgress := c.progressFunc(ctx, cc)
	if ownsProgressToken(cc) {
		// The task code sent its own token and routes its progress.
		onProgress = nil
	}
	var deadline time.Time
	if cc.maxTotal > 0 {
		deadline = time.Now().Add(cc.maxTotal)
	}
	return sending{c: c, method: method, params: params, own: own, d: d,
		headers: c.messageHeaders(method, params), extension: extension,
		onProgress: onProgress, deadline: deadline}
}

// roundTail is the members a round adds to the params: the answers to the
// last round's input requests and the server's state, or nil.
func roundTail(inputResponses []byte, requestState json.RawMessage) []byte {
	var tail []byte
	if inputResponses != nil {
		tail = appendMember(tail, "inputResponses", inputResponses)
	}
	if requestState != nil {
		if len(tail) > 0 {
			tail = append(tail, ',')
		}
		tail = appendMember(tail, "requestState", requestState)
	}
	return tail
}

// request sends round number round, its params ending with tail.
func (s *sending) request(ctx context.Context, cc *callConfig, round int, tail []byte) (*jsonrpc.Response, error) {
	var (
		tokenID jsonrpc.ID
		token   []byte
	)
	if s.onProgress != nil {
		tokenID, token = s.c.progressToken()
	}
	p, err := buildParams(s.d, cc, token, s.params, tail, s.own)
	if err != nil {
		return nil, protocolError(jsonrpc.CodeInvalidParams, err, "invalid params for %s", s.method)
	}
	ropts := transport.RequestOptions{
		Timeout:                cc.timeout,
		Dialect:                s.d,
		Extension:              s.extension,
		Headers:                s.headers,
		OnResponseHeaders:      cc.onResponseHeaders,
		OnProgress:             s.onProgress,
		ProgressToken:          tokenID,
		ResetTimeoutOnProgress: cc.resetOnProgess,
		MaxTotalTimeout:        cc.maxTotal,
	}
	if round > 0 && !s.deadline.IsZero() {
		ropts.MaxTotalTimeout = max(time.Until(s.deadline), time.Millisecond)
	}
	return s.c.t.Request(ctx, &jsonrpc.Request{Method: s.method, Params: p}, ropts)
}

// again reports whether the round just sent (resp, or its error err)
// should be sent again, once each: in a new session when the server ended
// the last one without handling the request (session.go), or after the
// tools' x-mcp-header annotations were read again when the server says
// they changed (streamable-http.mdx, "Client Behavior"). An error it
// returns ends the call; a keepalive failure takes the place of err.
func (s *sending) again(ctx context.Context, cc *callConfig, resp *jsonrpc.Response, err error) (bool, error) {
	c := s.c
	if err != nil {
		if kerr := c.keepaliveErr(); kerr != nil && ctx.Err() == nil {
			// The keepalive ping failed and closed the connection.
			return false, kerr
		}
		if s.renewed || !c.headers || !retryInNewSession(s.method, err) {
			return false, nil
		}
		s.renewed = true
		if rerr := c.renewSession(ctx, sessionOf(s.headers), s.method); rerr != nil {
			return false, rerr
		}
		if cc.logLevel != "" {
			// The level asked for went with the old session.
			if err := c.dialect.applyLogLevel(ctx, c, s.method, cc.logLevel); err != nil {
				return false, err
			}
		}
		s.headers = c.messageHeaders(s.method, s.params)
		return true, nil
	}
	if resp.Error != nil && resp.Error.Code == jsonrpc.CodeHeaderMismatch && s.method == "tools/call" && c.paramHeaders() && !s.refreshed {
		s.refreshed = true
		if err := c.refreshToolHeaders(ctx); err == nil {
			s.headers = c.messageHeaders(s.method, s.params)
			return true, nil
		}
	}
	return false, nil
}

// serverError is the error a server answered a request of method with:
// of kind server, saying which method a bare "Method not found" is about.
// The elicitations of a -32042 are remembered for their completion.
func (c *Client) serverError(method string, e *Error) *Error {
	if e.Kind == "" {
		c := *e
		c.Kind = jsonrpc.KindServer
		e = &c
	}
	if e.Code == jsonrpc.CodeMethodNotFound && !strings.Contains(e.Message, method) {
		// Many servers answer a bare "Method not found".
		c := *e
		c.Message = fmt.Sprintf("%s: %s", e.Message, method)
		e = &c
	}
	if e.Code == jsonrpc.CodeURLElicitationRequired {
		c.noteURLElicitationsRequired(e)
	}
	return e
}

// callTyped calls method with v's encoding as params and decodes the
// result into out.
func (c *Client) callTyped(ctx context.Context, method string, v any, out any, opts []CallOption) error {
	var params []byte
	if v != nil {
		b, err := marshal(v)
		if err != nil {
			return protocolError(jsonrpc.CodeInvalidParams, err, "invalid params for %s", method)
		}
		params = b
	}
	raw, err := c.call(ctx, method, params, c.callConfig(opts))
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := unmarshal(raw, out); err != nil {
		return badResult(method, err)
	}
	if r, ok := out.(interface{ setReceived(time.Time) }); ok {
		r.setReceived(time.Now())
	}
	return nil
}

// Request sends any request and returns its complete result: the dialect's
// _meta is added to params (a JSON object, or nil), and in the modern era
// input_required results go through the multi round-trip loop. Use it for
// methods the typed API does not cover.
func (c *Client) Request(ctx context.Context, method string, params json.RawMessage, opts ...CallOption) (json.RawMessage, error) {
	if p := bytesTrim(params); len(p) > 0 && p[0] != '{' {
		return nil, protocolError(jsonrpc.CodeInvalidParams, nil, "params for %s must be a JSON object", method)
	}
	return c.call(ctx, method, params, c.callConfig(opts))
}

// Notify sends a notification with params (a JSON object, or nil).
func (c *Client) Notify(ctx context.Context, method string, params json.RawMessage) error {
	n, ok := c.t.(transport.Notifier)
	if !ok {
		return protocolError(jsonrpc.CodeInternalError, nil, "the transport cannot send notifications")
	}
	if err := c.keepaliveErr(); err != nil {
		return err
	}
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	return n.Notify(ctx, &jsonrpc.Notification{Method: method, Params: params},
		transport.NotifyOptions{Timeout: c.cfg.timeout, Dialect: c.dialect, Headers: c.messageHeaders(method, nil)})
}

func bytesTrim(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func (c *Client) warn(msg string, args ...any) {
	if c.cfg.onWarning != nil {
		c.cfg.onWarning(msg, args...)
		return
	}
	slog.Warn("snodo: "+msg, args...)
}
