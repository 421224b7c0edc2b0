package hub

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/internal/proxy"
	"github.com/snodo/snodo/jsonrpc"
)

// watchBuffer is how many notifications wait for a slow legacy session;
// past it they are dropped (a list change is repeated by the next one).
const watchBuffer = 64

type note struct {
	method string
	params json.RawMessage
}

// watcher is a legacy session's Watch.
type watcher struct {
	session string
	id      *gateway.Identity
	ch      chan note
}

// listChanged are the notifications fanned in to every session.
var listChanged = map[string]bool{
	"notifications/tools/list_changed":     true,
	"notifications/prompts/list_changed":   true,
	"notifications/resources/list_changed": true,
}

// onNotification receives a backend's notifications (legacy backends).
func (h *Hub) onNotification(server, method string, params json.RawMessage) {
	var merged string
	if method == "notifications/resources/updated" {
		var p map[string]json.RawMessage
		if json.Unmarshal(params, &p) != nil || p == nil {
			return
		}
		uri, ok := stringMember(p, "uri")
		if !ok {
			return
		}
		merged = server + gateway.URISeparator + uri
		p["uri"], _ = json.Marshal(merged)
		params, _ = json.Marshal(p)
	} else if !listChanged[method] {
		return
	} else {
		params = json.RawMessage(`{}`)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.watchers {
		if h.opts.Policy != nil && !h.opts.Policy.AllowServer(w.id, server) {
			continue
		}
		if merged != "" && !h.subs[w.session][merged] {
			continue
		}
		select {
		case w.ch <- note{method, params}:
		default:
		}
	}
}

// maxSubscriptions bounds the resource subscriptions of one legacy session.
const maxSubscriptions = 1024

// maySubscribe reports whether session may subscribe to one more URI.
func (h *Hub) maySubscribe(session, merged string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	subs := h.subs[session]
	return subs[merged] || len(subs) < maxSubscriptions
}

// subscribe records a legacy session's resources/subscribe or unsubscribe.
func (h *Hub) subscribe(session, merged string, on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if on {
		if h.subs[session] == nil {
			h.subs[session] = map[string]bool{}
		}
		h.subs[session][merged] = true
		return
	}
	delete(h.subs[session], merged)
}

// EndSession forgets a legacy session's subscriptions.
func (h *Hub) EndSession(session string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, session)
}

// Watch emits a legacy session's notifications until ctx ends.
func (h *Hub) Watch(ctx context.Context, session string, id *gateway.Identity, emit func(method string, params json.RawMessage) error) {
	w := &watcher{session: session, id: id, ch: make(chan note, watchBuffer)}
	h.mu.Lock()
	h.watchers[w] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.watchers, w)
		h.mu.Unlock()
	}()
	for {
		select {
		case n := <-w.ch:
			if emit(n.method, n.params) != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// Listen serves a 2026-07-28 subscriptions/listen across the backends.
func (h *Hub) Listen(ctx context.Context, r *gateway.Request, emit func(method string, params json.RawMessage) error) (json.RawMessage, error) {
	var id jsonrpc.ID
	if err := json.Unmarshal(r.ID, &id); err != nil || !id.IsValid() {
		return nil, invalidParams("subscriptions/listen needs a request ID")
	}
	params, _, err := h.decode(r)
	if err != nil {
		return nil, err
	}
	var filter snodo.SubscriptionFilter
	if raw, ok := params["notifications"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &filter); err != nil {
			return nil, invalidParams("invalid notifications filter: %v", err)
		}
	}
	byServer := map[string][]string{}
	for _, u := range filter.ResourceSubscriptions {
		server, uri, ok := split(u, gateway.URISeparator)
		if !ok || h.backends[server] == nil || !h.allowServer(r, server) {
			return nil, invalidParams("resource subscription %q names no server of the gateway: it must be {server}+{uri}", u)
		}
		byServer[server] = append(byServer[server], uri)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	subs, acc := h.openListens(ctx, r, filter, byServer)
	defer func() {
		for _, s := range subs {
			s.sub.Close()
		}
	}()
	ack, err := json.Marshal(map[string]any{"_meta": map[string]jsonrpc.ID{metaPrefix + "subscriptionId": id}, "notifications": acc})
	if err != nil {
		return nil, err
	}
	if err := emit("notifications/subscriptions/acknowledged", ack); err != nil {
		return nil, err
	}
	events := make(chan note)
	var wg sync.WaitGroup
	for _, s := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.pump(ctx, s, id, events)
		}()
	}
	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	defer func() { cancel(); <-ended }()
	for {
		select {
		case n := <-events:
			if err := emit(n.method, n.params); err != nil {
				return nil, err
			}
		case <-ended:
			return json.Marshal(map[string]any{"resultType": "complete", "_meta": map[string]jsonrpc.ID{metaPrefix + "subscriptionId": id}})
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// opened is a backend's subscription.
type opened struct {
	server string
	sub    *snodo.Subscription
}

// openListens opens the subscription on every allowed server that is up,
// at once (a slow one delays the acknowledgement, not the others'
// opening), and returns them with the union of what they accepted, URIs
// in the merged name space.
func (h *Hub) openListens(ctx context.Context, r *gateway.Request, filter snodo.SubscriptionFilter, byServer map[string][]string) ([]opened, snodo.SubscriptionFilter) {
	type result struct {
		got snodo.SubscriptionFilter
		sub *snodo.Subscription
	}
	results := make([]result, len(h.names))
	var wg sync.WaitGroup
	for i, name := range h.names {
		rt, err := h.backends[name].runner()
		if err != nil || !h.allowServer(r, name) {
			continue
		}
		f := snodo.SubscriptionFilter{ToolsListChanged: filter.ToolsListChanged, PromptsListChanged: filter.PromptsListChanged,
			ResourcesListChanged: filter.ResourcesListChanged, ResourceSubscriptions: byServer[name]}
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, sub, err := rt.Client().Listen(ctx, f)
			if err != nil {
				h.log.Warn("listen skips a server", "server", name, "error", err)
				return
			}
			results[i] = result{got, sub}
		}()
	}
	wg.Wait()
	var subs []opened
	acc := snodo.SubscriptionFilter{ResourceSubscriptions: []string{}}
	for i, res := range results {
		if res.sub == nil {
			continue
		}
		name, got := h.names[i], res.got
		subs = append(subs, opened{name, res.sub})
		acc.ToolsListChanged = acc.ToolsListChanged || got.ToolsListChanged
		acc.PromptsListChanged = acc.PromptsListChanged || got.PromptsListChanged
		acc.ResourcesListChanged = acc.ResourcesListChanged || got.ResourcesListChanged
		for _, u := range got.ResourceSubscriptions {
			acc.ResourceSubscriptions = append(acc.ResourceSubscriptions, name+gateway.URISeparator+u)
		}
	}
	return subs, acc
}

// pump carries a backend subscription's events to events, URIs in the
// merged name space and tagged with the host's subscription ID, until it
// ends or ctx ends.
func (h *Hub) pump(ctx context.Context, s opened, id jsonrpc.ID, events chan<- note) {
	for {
		ev, err := s.sub.Next(ctx)
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				h.log.Warn("a backend's subscription ended", "server", s.server, "error", err)
			}
			return
		}
		p := ev.Params
		if ev.Method == "notifications/resources/updated" {
			var m map[string]json.RawMessage
			if json.Unmarshal(p, &m) != nil || m == nil {
				continue
			}
			uri, ok := stringMember(m, "uri")
			if !ok {
				continue
			}
			m["uri"], _ = json.Marshal(s.server + gateway.URISeparator + uri)
			p, _ = json.Marshal(m)
		}
		tagged, ok := proxy.TagEvent(p, id)
		if !ok {
			continue
		}
		select {
		case events <- note{ev.Method, tagged}:
		case <-ctx.Done():
			return
		}
	}
}
