package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/snodo/snodo/jsonrpc"
)

// Extensions (capabilities.extensions): the proxy passes through those it
// does not know, both ways. The host's client extensions reach the server
// through the client (snodo.Options.Extensions, given the extensions the host
// declares in its first message, which HostExtensions waits for before
// the client connects): in the initialize the client sends a legacy server,
// and in the client capabilities of every request to a 2026-07-28 server.
// The server's extensions reach the host in the initialize result and the
// server/discover result (serverCapabilities).
//
// The extensions of ownExtensions are not passed: the proxy does not
// carry their methods, and the client handles them itself.

// ownExtensions are the extensions the Snodo client handles itself and
// the proxy does not carry: the tasks extension (the client declares it
// on the calls that take a task and follows the task; the proxy serves
// no tasks/ methods).
var ownExtensions = map[string]bool{"io.modelcontextprotocol/tasks": true}

// Bounds of the host's extensions passed to the server: each is sent on
// every 2026-07-28 request.
const (
	maxExtensions        = 64
	maxExtensionName     = 256
	maxExtensionSettings = 64 << 10
)

// firstLine is the host's first line, read by HostExtensions.
type firstLine struct {
	line []byte
	err  error
}

// HostExtensions waits for the host's first message and returns the
// client extensions it declares (the capabilities.extensions of
// initialize, or of a 2026-07-28 request's client capabilities), but for
// those the proxy handles itself (tasks) and those that are no extension
// declaration (a name empty, longer than 256 bytes or holding spaces or
// control characters, settings that are not a JSON object or are larger
// than 64 KiB, more than 64), each left out with a warning. Give each to
// the client with snodo.Options.Extensions before it connects. The message is
// then served by Serve as the host's first. nil when the host declares
// none, or its input ended first; ctx's error when ctx ends first.
func (p *Proxy) HostExtensions(ctx context.Context) (map[string]json.RawMessage, error) {
	if p.first == nil {
		p.lr = jsonrpc.NewLineReader(p.in, p.cfg.MaxLineBytes)
		p.first = make(chan firstLine, 1)
		go func() {
			line, err := p.lr.ReadLine()
			p.first <- firstLine{bytes.Clone(line), err}
		}()
	}
	var fl firstLine
	select {
	case fl = <-p.first:
		p.first <- fl // for readLoop
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if fl.err != nil {
		return nil, nil
	}
	msg, err := jsonrpc.Decode(fl.line)
	if err != nil {
		return nil, nil
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return nil, nil
	}
	var caps json.RawMessage
	if req.Method == "initialize" {
		var in struct {
			Capabilities json.RawMessage `json:"capabilities"`
		}
		_ = json.Unmarshal(req.Params, &in)
		caps = in.Capabilities
	} else {
		var in struct {
			Meta struct {
				Capabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
			} `json:"_meta"`
		}
		_ = json.Unmarshal(req.Params, &in)
		caps = in.Meta.Capabilities
	}
	var c struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(caps, &c) != nil || len(c.Extensions) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(c.Extensions))
	for n := range c.Extensions {
		names = append(names, n)
	}
	slices.Sort(names)
	out := map[string]json.RawMessage{}
	for _, n := range names {
		settings := c.Extensions[n]
		why := ""
		switch {
		case ownExtensions[n]:
			p.log.Debug("host extension handled by the proxy itself, not passed to the server", "extension", n)
			continue
		case n == "" || len(n) > maxExtensionName || !utf8.ValidString(n) ||
			strings.ContainsFunc(n, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }):
			why = "its name is empty, too long, or holds spaces or control characters"
		case len(settings) > maxExtensionSettings:
			why = "its settings are larger than 64 KiB"
		case len(bytes.TrimSpace(settings)) == 0 || bytes.TrimSpace(settings)[0] != '{':
			why = "its settings are not a JSON object"
		case len(out) == maxExtensions:
			why = "the host declares more than 64 extensions"
		}
		if why != "" {
			p.log.Warn("host extension not passed to the server: "+why, "extension", n)
			continue
		}
		out[n] = settings
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// serverExtensions are the server's extensions the host is told of: all
// but ownExtensions, as the server gave them.
func serverExtensions(ext map[string]json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for n, v := range ext {
		if !ownExtensions[n] {
			out[n] = v
		}
	}
	return out
}

// RefuseFirst answers the host's first message, read by HostExtensions,
// when it is a request and Serve will not run, so that the host's
// initialize is not left without an answer: with the -32000 of a shutdown
// when ctx has ended (snodo-run proxy: SIGINT or SIGTERM while the server
// was being started), or else with a -32000 error saying the server could
// not be started or connected, and err.
func (p *Proxy) RefuseFirst(ctx context.Context, err error) {
	if p.first == nil {
		return
	}
	var fl firstLine
	select {
	case fl = <-p.first:
	default:
		return // still being read
	}
	if fl.err != nil {
		return
	}
	msg, derr := jsonrpc.Decode(fl.line)
	req, ok := msg.(*jsonrpc.Request)
	if derr != nil || !ok || !req.ID.IsValid() {
		return
	}
	var je *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		je = shutdownError(fmt.Errorf("%w (%w)", errShutdown, context.Cause(ctx)))
	case err != nil:
		je = &jsonrpc.Error{Code: jsonrpc.CodeConnectionClosed,
			Message: fmt.Sprintf("the Snodo proxy could not start or connect to the MCP server: %v (its stderr says more)", err)}
	default:
		return
	}
	p.writeMsg(jsonrpc.NewErrorResponse(req.ID, je))
}
