package snodo

import (
	"context"
	"slices"
	"sync"

	"github.com/snodo/snodo/jsonrpc"
)

// logLevels are the levels a LogLevel may be, least severe first.
var logLevels = []LogLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// legacyLogLevel is the level last sent with logging/setLevel on a legacy
// connection; mu serialises the requests that change it.
type legacyLogLevel struct {
	mu      sync.Mutex
	sent    LogLevel
	session string // the session it was sent in: a new one starts without
}

// prepareCall does what a call needs before its first request: the trace
// context members of _meta, and in the legacy era the connection's log
// level for WithLogLevel. A call with neither does nothing here.
func (c *Client) prepareCall(ctx context.Context, method string, cc *callConfig) error {
	if cc.logLevel != "" {
		if !slices.Contains(logLevels, cc.logLevel) {
			return protocolError(jsonrpc.CodeInvalidParams, nil, "WithLogLevel: unknown log level %q (known: %v)", cc.logLevel, logLevels)
		}
		if err := c.dialect.applyLogLevel(ctx, c, method, cc.logLevel); err != nil {
			return err
		}
	}
	return traceMembers(ctx, cc)
}

// useLogLevel sends logging/setLevel with level, unless level was the last
// one sent and force is false. Calls are serialised, so that concurrent
// callers asking for the same level send it once. A server without the
// logging capability is sent nothing unless force is set (SetLogLevel).
func (c *Client) useLogLevel(ctx context.Context, level LogLevel, force bool, opts ...CallOption) error {
	if !force && c.capabilities.Logging == nil {
		return nil
	}
	c.logLevel.mu.Lock()
	defer c.logLevel.mu.Unlock()
	if !force && c.logLevel.sent == level && c.logLevel.session == c.session.current() {
		return nil
	}
	err := c.callTyped(ctx, "logging/setLevel", struct {
		Level LogLevel `json:"level"`
	}{level}, nil, opts)
	if err != nil {
		return err
	}
	c.logLevel.sent, c.logLevel.session = level, c.session.current()
	return nil
}
