// Package hub is the gateway's gateway.Hub: it runs the backend MCP
// servers of the config file's mcpServers section and serves host requests
// from them under one merged name space.
//
// # Naming
//
// A tool or prompt is listed as "{server}__{name}" and a resource URI or
// URI template as "{server}+{uri}" (see package gateway). The hub rewrites
// names on the way out (tools/list, prompts/list, resources/list,
// resources/templates/list, resources/updated events) and back on the way
// in (tools/call, prompts/get, resources/read, resources/subscribe and
// unsubscribe, completion/complete's ref/prompt name and ref/resource uri).
// Two servers with a tool of the same name are told apart by their prefix.
// A merged name whose server is unknown, or not allowed to the identity, is
// refused with -32602 naming it.
//
// A list is paginated across servers, in the order of their names: each
// page is one page of one server, and its nextCursor is an opaque token
// naming (server, that server's cursor). A cursor the hub did not make
// (not base64url JSON of that shape, longer than 4 KiB, or naming a server
// unknown or not allowed) is refused with -32602. A server that is down is
// skipped in lists; its tools come back once it is up again.
//
// Policy.AllowServer hides a server entirely; Policy.AllowTool hides a tool
// from tools/list and refuses its tools/call with -32602 naming the policy
// (audited with decision deny). Every request to a backend goes through
// Policy.Admit first (its -32029 error reaches the host as is), runs in a
// Telemetry.ClientSpan, and each host request gives one AuditRecord (its
// decision is deny when the policy or an interceptor refused it). Each
// decision of a server's interceptors other than letting a request or a
// result through (deny, rewrite, replace), and each failure of one, gives
// an AuditRecord of direction interceptor naming the module, its reason
// starting with the phase (request or result).
//
// # Backends and restarts
//
// Each server is started (a command) or connected (a url) with
// runtime.Start, with its own Wasm handler modules and interceptors, all
// in parallel at New. A server that fails to start, or whose process
// exits, is started again after a delay that begins at 250 ms, doubles at
// each failure up to 30 s, is jittered by ±20 %, and is reset once the
// server has stayed up a minute. A server whose Wasm module cannot be
// loaded has failed for good (the config is wrong) and is not retried.
// While a server is down its own requests fail at once with a -32000
// error naming the server, why it is down and when the next attempt is;
// the other servers are not affected, and a slow server only slows the
// requests routed to it.
//
// # Server requests
//
// What a backend asks of the client (elicitation/create,
// sampling/createMessage, roots/list) is answered by that server's Wasm
// handler modules for the methods they answer. The other methods are
// forwarded to the host whose request caused them:
//
//   - A 2026-07-28 backend's input request, and a legacy backend's request
//     over Streamable HTTP on the stream of a call, carry that call's
//     context: they go to the host request that made the call.
//   - A legacy backend's request over stdio carries no link to a call (MCP
//     defines none): it is attributed to the oldest host request in flight
//     to that backend — exactly right when one call is in flight, the
//     usual case — skipping a held call (below) already waiting for its
//     host's answer to another request, as a server asks one thing at a
//     time in a call.
//
// When calls of more than one host (identity and session) are in flight
// to such a backend, the request is refused rather than risk asking a
// host about another host's call.
//
// A legacy host that declared the capability is asked with Request.Ask. A
// 2026-07-28 host's tools/call, prompts/get or resources/read to a
// 2026-07-28 backend goes through the stateless multi round-trip (package
// mrtr): the inputs the modules do not answer reach the host in an
// input_required result. A host that cannot be asked (it did not declare
// the capability; a 2026-07-28 host's other requests), or no request in
// flight, is answered -32601 naming the missing handler.
//
// # Held calls: a legacy backend and a 2026-07-28 host
//
// A legacy backend (2024-11-05 … 2025-11-25) asks its requests during the
// call and waits for the answer: it cannot be called again later with
// the answer, as a 2026-07-28 server is. So a 2026-07-28 host's
// tools/call, prompts/get or resources/read to a legacy backend is held
// open (package internal/exchange, which the one-server proxy shares):
// the call runs on the backend in a goroutine of its own, and a request
// the backend asks during it, that no Wasm module answers, reaches the
// host as an input of an input_required result whose requestState is a
// random 128-bit handle. The host's retry with that requestState and its
// inputResponses hands the answers to the backend, which goes on; the
// retry gets the call's result, or the backend's next requests.
//
// The handle is bound to the identity that started the call (anonymous
// hosts share one), the server, the method and a digest of the params
// (without _meta, inputResponses and requestState): a forged handle, or
// one presented by another identity or with other params, is refused with
// -32602 "requestState is not valid for this request; start over" and
// touches no call. A call the host does not retry within
// Options.ResumeTimeout (default 5 minutes) after its input_required
// result is cancelled on the backend, and its handle is refused from then
// on. One identity holds at most Options.MaxHeldCalls such calls at once
// (default 64); past it a new one is refused with -32029. Hub.Close
// cancels them all.
//
// Such a call lives in the replica that holds it: unlike a sealed
// requestState (mrtr), its handle is known to that replica only. A retry
// that a load balancer sends to another replica gets the -32602 above,
// naming why (the server is a legacy one, its call is held on one
// replica), and the host starts over. A Wasm handler module for the
// methods the backend asks (elicitation/create, sampling/createMessage,
// roots/list), or a single replica, avoids it.
//
// # Notifications
//
// Listen serves a 2026-07-28 subscriptions/listen by opening the matching
// subscription on every allowed backend that is up (snodo.Client.Listen),
// acknowledging once with the union of what they accepted, and merging
// their events with URIs rewritten and the host's request ID as the
// subscription ID. Watch fans in the list-changed notifications of every
// backend the identity may see (a 2026-07-28 backend sends them only on a
// subscription, which the hub holds while it is connected), and the
// resources/updated notifications of the URIs the legacy session
// subscribed to.
package hub
