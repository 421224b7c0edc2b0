// Command snodo-run starts an MCP server, answers what it asks of the
// client with sandboxed WebAssembly handlers, and does what it is told: list
// and call tools, read resources, get prompts, complete arguments, listen
// for changes, send raw requests. It speaks both protocol eras, the
// initialize handshake (2024-11-05 … 2025-11-25) and 2026-07-28.
//
//	snodo-run --handler elicit.wasm tools call register -- ./server --flag
//
// See docs/CLI.md for every command, setting and exit code.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
