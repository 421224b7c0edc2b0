// Package clienthook attaches consumers to a Snodo client for Snodo's own
// packages (runtime's Wasm progress and subscription consumers), without
// the root package exporting them: they are machinery of the runtime, not
// part of the client's API.
//
// Package snodo sets the functions at init; each sets an unexported field
// of the *snodo.Options given, typed any here because this package cannot
// import the root package.
package clienthook

import (
	"context"
	"encoding/json"
)

// SetProgressConsumer makes every call of a client connected with opts (a
// *snodo.Options) ask for progress and gives each of its
// notifications/progress, params as sent (progressToken included), to f,
// in the calling goroutine, before any WithProgress function of the call.
// ctx is the call's. An error from f cancels the call on the server
// (notifications/cancelled) and the call returns that error.
var SetProgressConsumer func(opts any, f func(ctx context.Context, params json.RawMessage) error)

// SetEventConsumer makes every event of every subscription (Listen) of a
// client connected with opts (a *snodo.Options) pass to f, in the
// goroutine that calls Next, before Next returns it. stop ends the
// subscription cleanly (Next returns io.EOF, the server is told); an error
// ends it with that error. ctx is the one given to Next.
var SetEventConsumer func(opts any, f func(ctx context.Context, method string, params json.RawMessage) (stop bool, err error))

// SetDeprecatedUse makes a client connected with opts (a *snodo.Options)
// call f each time the connection uses a feature the 2026-07-28 revision
// deprecates: feature is "sampling", "roots" or "logging", method the
// message that used it (sampling/createMessage or roots/list, as a server
// request or an input request; notifications/message from the server;
// logging/setLevel sent to it). f runs in the transport's reader or a
// caller's goroutine: it must not block.
var SetDeprecatedUse func(opts any, f func(feature, method string))

// OneRound returns a snodo.CallOption (typed any here) for a call that
// sends one round only. To a 2026-07-28 server, Client.Request with it
// sends the params as given, inputResponses and requestState included
// (the caller's, which the interceptors must keep and the client does not
// touch), and returns an input_required result as the server sent it,
// after checking that the protocol allows it (the method and the input
// requests' methods), instead of answering its inputs with the client's
// handlers; the result interceptors do not see such a result. A complete
// result, or an error, is returned as without the option. In the legacy
// era, which has no input rounds, the option changes nothing.
var OneRound func() any
