package proxy

// subscriptions/listen from a 2026-07-28 host.
//
// The proxy opens the matching subscription on the server with
// snodo.Client.Listen (a subscriptions/listen of its own to a 2026-07-28
// server; emulated over resources/subscribe and the list-changed
// notifications with a legacy server), then sends the host
// notifications/subscriptions/acknowledged with the filter the server
// accepted, and each event, with the host's listen request ID in
// _meta["io.modelcontextprotocol/subscriptionId"]. When the server's side
// ends cleanly the host gets the terminal result (resultType "complete");
// when it fails (the connection stopped, the buffer overflowed) the host
// gets the error. The host's notifications/cancelled for the listen
// request, or the end of its input, closes the subscription on the server
// and the host is not answered.
//
// Events wait in the subscription's bounded buffer (transport
// DefaultMaxBuffer events) while the host is written to; under the
// default overflow policy a host that falls that far behind has its
// subscription ended with an error rather than events silently lost.

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/jsonrpc"
)

const metaSubscriptionID = metaPrefix + "subscriptionId"

// listen serves one subscriptions/listen of a 2026-07-28 host until the
// subscription ends. It returns the terminal result or error; ctx ending
// (the host cancelled it) makes the caller answer nothing.
func (p *Proxy) listen(ctx context.Context, hr *hostRequest) (json.RawMessage, error) {
	var filter snodo.SubscriptionFilter
	if raw, ok := hr.params["notifications"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &filter); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid notifications filter: " + err.Error()}
		}
	}
	// The subscription lives as long as the host request, and no longer
	// than the host's input.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-p.hostGone:
			cancel(errHostGone)
		case <-ctx.Done():
		}
	}()
	accepted, sub, err := p.client.Listen(ctx, filter)
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	id := hr.req.ID
	ack, err := json.Marshal(struct {
		Meta          map[string]jsonrpc.ID    `json:"_meta"`
		Notifications snodo.SubscriptionFilter `json:"notifications"`
	}{map[string]jsonrpc.ID{metaSubscriptionID: id}, accepted})
	if err != nil {
		return nil, err
	}
	p.writeMsg(&jsonrpc.Notification{Method: "notifications/subscriptions/acknowledged", Params: ack})
	for {
		ev, err := sub.Next(ctx)
		if errors.Is(err, io.EOF) {
			return json.Marshal(map[string]any{
				"resultType": "complete",
				"_meta":      map[string]jsonrpc.ID{metaSubscriptionID: id},
			})
		}
		if err != nil {
			return nil, err
		}
		if params, ok := TagEvent(ev.Params, id); ok {
			p.writeMsg(&jsonrpc.Notification{Method: ev.Method, Params: params})
		}
	}
}

// TagEvent returns an event's params with the host's subscription ID in
// _meta in place of whatever the server put there; ok is false when the
// params are not a JSON object (absent params are an empty object).
func TagEvent(params json.RawMessage, id jsonrpc.ID) (json.RawMessage, bool) {
	obj := map[string]json.RawMessage{}
	if len(params) > 0 && string(params) != "null" {
		if json.Unmarshal(params, &obj) != nil || obj == nil {
			return nil, false
		}
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := obj["_meta"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &meta) != nil || meta == nil {
			meta = map[string]json.RawMessage{}
		}
	}
	meta[metaSubscriptionID] = id.AppendJSON(nil)
	var err error
	if obj["_meta"], err = json.Marshal(meta); err != nil {
		return nil, false
	}
	out, err := json.Marshal(obj)
	return out, err == nil
}
