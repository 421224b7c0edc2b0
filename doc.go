// Package snodo is a Model Context Protocol client runtime.
//
// A Client talks to one MCP server over any transport.Transport (the stdio
// transport is in transport/stdio), speaks both protocol eras — the legacy
// initialize handshake (2024-11-05 … 2025-11-25) and the stateless
// 2026-07-28 revision — and answers what the server asks of the client
// (elicitation, sampling, roots) with Handlers, which may be native Go or
// sandboxed WebAssembly modules (handlers/wasm).
package snodo
