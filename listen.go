package snodo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/snodo/snodo/internal/subbuf"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
)

// Subscription is the consumer's end of a notification stream opened by
// Listen: pull events with Next, or range over All; Close ends it.
type Subscription = transport.Subscription

// Event is one notification of a Subscription.
type Event = transport.Event

// SubscriptionFilter says which notifications a subscription wants. See
// the specification's basic/patterns/subscriptions.mdx.
type SubscriptionFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// Listen opens a stream of the server's notifications that filter selects,
// and returns the filter the server accepted (a subset of filter) with the
// subscription. The subscription belongs to ctx: it is closed when ctx
// ends. WithTimeout bounds the wait for the acknowledgement; WithBuffer
// sizes the subscription's buffer.
//
// In the 2026-07-28 era it is a subscriptions/listen request on a
// transport that implements transport.Listener.
//
// In a legacy era it is emulated: the accepted filter keeps what the
// server's capabilities offer (list-changed notifications the server
// advertises; resource URIs when it supports resources/subscribe, each
// subscribed with resources/subscribe), and the matching notifications the
// server sends are delivered to the subscription. Closing it unsubscribes
// the URIs no other subscription holds. It ends when it is closed, ctx
// ends, the client is closed, or — on a transport that reports it with
// Done and Err methods, as stdio does — the connection stops, with a
// -32000 error. Over Streamable HTTP it also ends with a -32000 error when
// the GET stream that carries its events is lost (transport.StreamWatcher:
// the server forgot the session, or the stream could not be reopened) and
// when the client starts a new session after the server ended the old one,
// which took the server's subscriptions with it: listen again.
func (c *Client) Listen(ctx context.Context, filter SubscriptionFilter, opts ...CallOption) (SubscriptionFilter, *Subscription, error) {
	if err := c.keepaliveErr(); err != nil {
		return SubscriptionFilter{}, nil, err
	}
	accepted, sub, err := c.dialect.listen(ctx, c, filter, c.callConfig(opts))
	if err == nil && c.dialect.cache(c) != nil {
		// Where results carry caching hints, events drop what they name.
		(*subbuf.Buffer[Event])(sub).SetObserver(func(ev Event) { c.invalidateCache(ev.Method, ev.Params) })
	}
	if err == nil && c.cfg.onEvent != nil {
		consume := c.cfg.onEvent
		(*subbuf.Buffer[Event])(sub).SetTap(func(ctx context.Context, ev Event) (bool, error) {
			return consume(ctx, ev.Method, ev.Params)
		})
	}
	return accepted, sub, err
}

// listenStream opens a subscriptions/listen stream (2026-07-28).
func (c *Client) listenStream(ctx context.Context, filter SubscriptionFilter, cc *callConfig) (SubscriptionFilter, *Subscription, error) {
	l, ok := c.t.(transport.Listener)
	if !ok {
		return SubscriptionFilter{}, nil, protocolError(jsonrpc.CodeInternalError, nil,
			"the transport cannot carry subscriptions/listen streams")
	}
	base, err := marshal(struct {
		Notifications SubscriptionFilter `json:"notifications"`
	}{filter})
	if err != nil {
		return SubscriptionFilter{}, nil, err
	}
	if err := c.prepareCall(ctx, "subscriptions/listen", cc); err != nil {
		return SubscriptionFilter{}, nil, err
	}
	params, err := buildParams(c.dialect, cc, nil, base, nil, false)
	if err != nil {
		return SubscriptionFilter{}, nil, err
	}
	req := &jsonrpc.Request{Method: "subscriptions/listen", Params: params}
	raw, sub, err := l.Listen(ctx, req, transport.ListenOptions{
		Timeout:   cc.timeout,
		Dialect:   c.dialect,
		Headers:   c.messageHeaders(req.Method, nil),
		MaxBuffer: cc.maxBuffer,
		Overflow:  cc.overflow,
	})
	if err != nil {
		if kerr := c.keepaliveErr(); kerr != nil && ctx.Err() == nil {
			return SubscriptionFilter{}, nil, kerr
		}
		return SubscriptionFilter{}, nil, err
	}
	c.trackStream((*subbuf.Buffer[Event])(sub))
	accepted, err := decodeAccepted(raw)
	if err != nil {
		sub.Close()
		return SubscriptionFilter{}, nil, badResult("subscriptions/listen acknowledgement", err)
	}
	return accepted, sub, nil
}

// decodeAccepted reads the accepted filter: the acknowledgement's
// notifications member, or the filter itself.
func decodeAccepted(raw json.RawMessage) (SubscriptionFilter, error) {
	var f SubscriptionFilter
	if len(raw) == 0 {
		return f, nil
	}
	var ack struct {
		Notifications *SubscriptionFilter `json:"notifications"`
	}
	if err := unmarshal(raw, &ack); err != nil {
		return f, err
	}
	if ack.Notifications != nil {
		return *ack.Notifications, nil
	}
	err := unmarshal(raw, &f)
	return f, err
}

// legacySubscriptions are the emulated subscriptions of a legacy
// connection, by the producer's end of each.
type legacySubscriptions struct {
	mu    sync.Mutex
	next  int64
	subs  map[*eventBuffer]SubscriptionFilter
	ended error // the connection's end, once it has stopped
}

// eventBuffer is the producer's end of a Subscription.
type eventBuffer = subbuf.Buffer[Event]

func (ls *legacySubscriptions) init() { ls.subs = map[*eventBuffer]SubscriptionFilter{} }

func (c *Client) listenLegacy(ctx context.Context, filter SubscriptionFilter, cc *callConfig) (SubscriptionFilter, *Subscription, error) {
	caps := c.capabilities
	var accepted SubscriptionFilter
	accepted.ToolsListChanged = filter.ToolsListChanged && caps.Tools != nil && caps.Tools.ListChanged
	accepted.PromptsListChanged = filter.PromptsListChanged && caps.Prompts != nil && caps.Prompts.ListChanged
	accepted.ResourcesListChanged = filter.ResourcesListChanged && caps.Resources != nil && caps.Resources.ListChanged
	if caps.Resources != nil && caps.Resources.Subscribe {
		for _, uri := range filter.ResourceSubscriptions {
			if err := c.callTyped(ctx, "resources/subscribe", uriParams{uri}, nil, []CallOption{WithTimeout(cc.timeout)}); err != nil {
				c.unsubscribeUnused(accepted.ResourceSubscriptions)
				return SubscriptionFilter{}, nil, err
			}
			accepted.ResourceSubscriptions = append(accepted.ResourceSubscriptions, uri)
		}
	}

	ls := &c.subs
	ls.mu.Lock()
	ls.next++
	id := jsonrpc.StringID(fmt.Sprintf("snodo-legacy-%d", ls.next))
	var sub *eventBuffer
	cfg := subbuf.Config{Max: cc.maxBuffer, Overflow: subbuf.Policy(cc.overflow)}
	sub = subbuf.New[Event](ctx, id, cfg, func() error {
		ls.mu.Lock()
		f := ls.subs[sub]
		delete(ls.subs, sub)
		ls.mu.Unlock()
		return c.unsubscribeUnused(f.ResourceSubscriptions)
	})
	ended := ls.ended
	if ended == nil {
		ls.subs[sub] = accepted
	}
	ls.mu.Unlock()
	if ended != nil {
		sub.Finish(ended)
	}
	return accepted, (*Subscription)(sub), nil
}

// unsubscribeUnused sends resources/unsubscribe for each URI that no open
// subscription holds.
func (c *Client) unsubscribeUnused(uris []string) error {
	var firstErr error
	for _, uri := range uris {
		c.subs.mu.Lock()
		held := false
		for _, f := range c.subs.subs {
			held = held || slices.Contains(f.ResourceSubscriptions, uri)
		}
		c.subs.mu.Unlock()
		if held {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.timeout)
		err := c.callTyped(ctx, "resources/unsubscribe", uriParams{uri}, nil, nil)
		cancel()
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// dispatch delivers a legacy notification to the subscriptions whose
// filter selects it.
func (ls *legacySubscriptions) dispatch(n *jsonrpc.Notification) {
	var uri string
	if n.Method == "notifications/resources/updated" {
		var p struct {
			URI string `json:"uri"`
		}
		_ = unmarshal(n.Params, &p)
		uri = p.URI
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for sub, f := range ls.subs {
		if wants(f, n.Method, uri) {
			sub.Push(Event{Method: n.Method, Params: n.Params})
		}
	}
}

func wants(f SubscriptionFilter, method, uri string) bool {
	switch method {
	case "notifications/tools/list_changed":
		return f.ToolsListChanged
	case "notifications/prompts/list_changed":
		return f.PromptsListChanged
	case "notifications/resources/list_changed":
		return f.ResourcesListChanged
	case "notifications/resources/updated":
		// The URI may be a sub-resource of the one subscribed to.
		return slices.ContainsFunc(f.ResourceSubscriptions, func(s string) bool {
			return uri == s || strings.HasPrefix(uri, strings.TrimSuffix(s, "/")+"/")
		})
	}
	return false
}

// closeAll ends every legacy subscription, at Client.Close.
func (ls *legacySubscriptions) closeAll() { ls.failAll(nil) }

// endAll ends every legacy subscription open now with err; later ones
// open as usual (the server's stream or session is gone, not the
// connection).
func (ls *legacySubscriptions) endAll(err error) {
	ls.mu.Lock()
	subs := make([]*eventBuffer, 0, len(ls.subs))
	for s := range ls.subs {
		subs = append(subs, s)
	}
	clear(ls.subs)
	ls.mu.Unlock()
	for _, s := range subs {
		s.Finish(err)
	}
}

// failAll ends every legacy subscription with err (nil: a clean end), and
// any later one at once.
func (ls *legacySubscriptions) failAll(err error) {
	ls.mu.Lock()
	subs := make([]*eventBuffer, 0, len(ls.subs))
	for s := range ls.subs {
		subs = append(subs, s)
	}
	ls.subs = map[*eventBuffer]SubscriptionFilter{}
	if err != nil {
		ls.ended = err
	}
	ls.mu.Unlock()
	for _, s := range subs {
		s.Finish(err)
	}
}
