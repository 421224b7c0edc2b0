package snodo

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"sync"

	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/jsonrpc"
)

// ElicitRequest is the params of an elicitation/create request, for a
// Handler to decode with ParseElicitRequest. Every string comes from the
// server: escape it before printing it.
type ElicitRequest struct {
	// Mode is "form" or "url" (an absent mode is form).
	Mode string `json:"mode,omitempty"`
	// Message says why the server asks.
	Message string `json:"message"`
	// RequestedSchema is the form's schema (form mode).
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	// URL is the page the user is asked to open (URL mode).
	URL string `json:"url,omitempty"`
	// ElicitationID identifies a URL-mode elicitation in 2025-11-25, for
	// its notifications/elicitation/complete; 2026-07-28 has none.
	ElicitationID string `json:"elicitationId,omitempty"`
}

// ParseElicitRequest decodes an elicitation/create request's params; an
// absent mode is form.
func ParseElicitRequest(params json.RawMessage) (ElicitRequest, error) {
	var r ElicitRequest
	if err := unmarshal(params, &r); err != nil {
		return r, protocolError(jsonrpc.CodeInvalidParams, err, "invalid elicitation/create params")
	}
	if r.Mode == "" {
		r.Mode = elicitForm
	}
	return r, nil
}

// maxPendingElicitations bounds the URL-mode elicitations remembered for
// their completion notification; past it the oldest are forgotten.
const maxPendingElicitations = 256

// urlElicitations are the elicitationIds of URL-mode elicitations not yet
// completed, oldest first.
type urlElicitations struct {
	mu      sync.Mutex
	pending []string
}

func (u *urlElicitations) add(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if slices.Contains(u.pending, id) {
		return
	}
	if len(u.pending) >= maxPendingElicitations {
		u.pending = slices.Delete(u.pending, 0, 1)
	}
	u.pending = append(u.pending, id)
}

// complete forgets id and reports whether it was pending.
func (u *urlElicitations) complete(id string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	i := slices.Index(u.pending, id)
	if i < 0 {
		return false
	}
	u.pending = slices.Delete(u.pending, i, i+1)
	return true
}

// onElicitationComplete handles notifications/elicitation/complete.
func (c *Client) onElicitationComplete(params json.RawMessage) {
	var p struct {
		ElicitationID string `json:"elicitationId"`
	}
	if err := unmarshal(params, &p); err != nil || p.ElicitationID == "" {
		return
	}
	if c.elicit.complete(p.ElicitationID) && c.cfg.onElicitComplete != nil {
		c.cfg.onElicitComplete(p.ElicitationID)
	}
}

// declaresURLElicitation reports whether the client answers URL mode.
func (c *config) declaresURLElicitation() bool {
	if c.urlElicit != nil {
		return true
	}
	_, ok := c.handlers[abi.MethodElicitationCreate]
	return ok && slices.Contains(c.elicitModes, elicitURL)
}

// declaresFormElicitation reports whether the client answers form mode.
func (c *config) declaresFormElicitation() bool {
	_, ok := c.handlers[abi.MethodElicitationCreate]
	return ok && slices.Contains(c.elicitModes, elicitForm)
}

// checkURLElicitation checks a URL-mode request before its handler runs:
// an absolute URL, and an elicitationId where the version has one (which
// the client then remembers for its completion notification).
func (c *Client) checkURLElicitation(params json.RawMessage) *Error {
	r, err := ParseElicitRequest(params)
	if err != nil {
		return err.(*Error)
	}
	u, perr := url.Parse(r.URL)
	if perr != nil || !u.IsAbs() || u.Host == "" {
		return protocolError(jsonrpc.CodeInvalidParams, perr, "a URL-mode elicitation needs an absolute url with a host, got %q", r.URL)
	}
	if c.dialect != nil && c.dialect.elicitationIDs() {
		if r.ElicitationID == "" {
			return protocolError(jsonrpc.CodeInvalidParams, nil, "a URL-mode elicitation needs an elicitationId")
		}
		c.elicit.add(r.ElicitationID)
	}
	return nil
}

// samplingUsesTools reports whether a sampling/createMessage request asks
// for tool use: a non-empty tools array.
func samplingUsesTools(params json.RawMessage) bool {
	var p struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := unmarshal(params, &p); err != nil {
		// Not an array: the handler's schema check will say so; treat
		// anything present as tools.
		var q struct {
			Tools json.RawMessage `json:"tools"`
		}
		_ = unmarshal(params, &q)
		return len(q.Tools) > 0 && string(q.Tools) != "null"
	}
	return len(p.Tools) > 0
}

// URLElicitationsRequired returns the URL-mode elicitations of a
// URLElicitationRequiredError (-32042, 2025-11-25): a server's answer that a
// request cannot go on until the user has opened these pages. Only entries
// in URL mode with an absolute URL and an elicitationId are returned; ok
// is false when err is not such an error or holds none. The client
// remembers their elicitationIds, so that Options.OnElicitationComplete sees
// their notifications/elicitation/complete; the request may be made again
// once the user has been to the pages.
func URLElicitationsRequired(err error) (elicitations []ElicitRequest, ok bool) {
	var e *Error
	if !errors.As(err, &e) || e.Code != jsonrpc.CodeURLElicitationRequired || e.Kind != jsonrpc.KindServer {
		return nil, false
	}
	elicitations = decodeURLElicitations(e.Data)
	return elicitations, len(elicitations) > 0
}

// maxRequiredElicitations bounds the entries read from one -32042 error.
const maxRequiredElicitations = 16

// decodeURLElicitations reads the valid URL-mode entries of a -32042
// error's data.
func decodeURLElicitations(data json.RawMessage) []ElicitRequest {
	var d struct {
		Elicitations []json.RawMessage `json:"elicitations"`
	}
	if len(data) == 0 || unmarshal(data, &d) != nil {
		return nil
	}
	var out []ElicitRequest
	for _, raw := range d.Elicitations {
		if len(out) == maxRequiredElicitations {
			break
		}
		r, err := ParseElicitRequest(raw)
		if err != nil || r.Mode != elicitURL || r.ElicitationID == "" {
			continue
		}
		if u, err := url.Parse(r.URL); err != nil || !u.IsAbs() || u.Host == "" {
			continue
		}
		out = append(out, r)
	}
	return out
}

// noteURLElicitationsRequired remembers the elicitationIds of a -32042
// error, for their completion notifications.
func (c *Client) noteURLElicitationsRequired(e *Error) {
	for _, r := range decodeURLElicitations(e.Data) {
		c.elicit.add(r.ElicitationID)
	}
}
