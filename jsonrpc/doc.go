// Package jsonrpc holds the JSON-RPC 2.0 layer of Snodo: message types,
// request IDs, the error type shared by every layer, the codec (built on
// github.com/bytedance/sonic) and a newline-delimited line reader with a
// maximum line length.
//
// It imports nothing else of Snodo's. Everything above it — transports, the
// client, the Wasm host — speaks in these types.
//
// See https://www.jsonrpc.org/specification and the MCP specification's
// basic/index.mdx for how MCP uses JSON-RPC.
package jsonrpc
