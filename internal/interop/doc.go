// Package interop holds Snodo's interoperability tests: the client against
// MCP servers it did not write — servers built with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), in the legacy era and in the
// 2026-07-28 era, and @modelcontextprotocol/server-everything from npm —
// over the stdio transport, with every message the client writes validated
// against the JSON Schema of the protocol version in use.
//
// The Go SDK servers and the wire recorder are the test binary itself,
// re-executed in a role chosen by the SNODO_INTEROP_ROLE environment
// variable (the os/exec package's own trick). server-everything is installed
// by .ci/deps.d/20-npm-interop.sh into everything/node_modules.
package interop
