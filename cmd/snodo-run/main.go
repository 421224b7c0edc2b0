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
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/snodo/snodo/runtime"
)

func main() {
	// The init of the server's PID namespace is snodo-run run again.
	runtime.Init()
	memoryDefaults()
	stdin, restore := pollableStdin(os.Stdin)
	restoreStdin = restore // before a signal's exit may call it
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	stderr := &gatedWriter{w: os.Stderr}
	go onSignals(sigs, cancel, stderr)
	code := run(ctx, os.Args[1:], stdin, os.Stdout, stderr)
	exiting.Lock() // a second signal's exit, under way, goes first
	restoreStdin()
	os.Exit(code)
}

// restoreStdin gives standard input back the flags pollableStdin changed,
// before the process exits.
var restoreStdin = func() {}

// snodo-run's garbage collector settings, where the environment does not
// set GOGC or GOMEMLIMIT (which keep their meaning, as Go defines them).
const (
	defaultGOGC        = 50
	defaultMemoryLimit = 256 << 20
)

// memoryDefaults applies snodo-run's garbage collector settings. MCP
// messages are mostly small and what snodo-run keeps between them is
// little, so collecting at 50% growth instead of 100% keeps the peak
// resident memory near what the process holds, for a little more CPU; the
// soft limit of 256 MiB makes the collector work harder before a run of
// large messages (up to the 16 MiB line limit each) grows the heap past
// it. Neither caps the heap: a process that needs more gets it.
func memoryDefaults() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGOGC)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
}

// exiting is held by whoever exits the process.
var exiting sync.Mutex

// gatedWriter writes to w until closed; then it drops what it is given, so
// that the one error object of a second signal is the last line.
type gatedWriter struct {
	mu     sync.Mutex
	closed bool
	w      *os.File
}

// File is the file g writes to, for the progress bar's terminal check.
func (g *gatedWriter) File() *os.File { return g.w }

func (g *gatedWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return len(p), nil
	}
	return g.w.Write(p)
}

// close stops g and returns what it wrote to.
func (g *gatedWriter) close() *os.File {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	return g.w
}

// signalCause is the cause of the context a signal cancelled.
type signalCause struct{ sig os.Signal }

func (c signalCause) Error() string { return "received " + c.sig.String() }

// onSignals makes the first SIGINT or SIGTERM cancel ctx, which cancels the
// request in flight — a Wasm module's call with it, at its next check or
// at once in a sleep — and shuts the server down in order. The second
// kills the server's process group and descendants and exits at once, even
// while a call cannot be interrupted or the server takes its whole
// shutdown grace. If snodo-run has not exited stopBound after the first,
// it does the same without waiting for a second (a trusted Wasm module
// that loops cannot be stopped, and what waits for its call never ends).
func onSignals(sigs <-chan os.Signal, cancel context.CancelCauseFunc, stderr *gatedWriter) {
	first := <-sigs
	cancel(signalCause{first})
	bound := time.Duration(stopBound.Load())
	fmt.Fprintf(stderr, "snodo-run: %v: stopping the server; send it again to kill the server and exit at once\n", first)
	var sig os.Signal
	var err error
	t := time.NewTimer(bound)
	select {
	case sig = <-sigs:
		err = fmt.Errorf("%v received twice: the server's process group and descendants were killed", sig)
	case <-t.C:
		sig = first
		err = fmt.Errorf("%v received, and snodo-run did not stop within %s (a call that cannot be stopped, such as a trusted Wasm module that loops): the server's process group and descendants were killed", first, bound)
	}
	exiting.Lock() // never unlocked: the process ends here
	w := stderr.close()
	runtime.KillAll()
	code := signalExitCode(sig)
	reportError(w, &cliError{code: code, kind: "interrupted", err: err})
	restoreStdin()
	os.Exit(code)
}

// stopBound is how long the first signal gives snodo-run to stop in order
// before it exits as a second signal would: the bound on shutting the
// runner down (app.closeTimeout, set once the settings are known) and
// stopMargin for what comes before and after it.
var stopBound atomic.Int64

const stopMargin = 2 * time.Second

func init() {
	stopBound.Store(int64(closeTimeout(runtime.DefaultShutdownGrace, runtime.DefaultConnectTimeout) + stopMargin))
}

// signalExitCode is the shell's convention: 128 + the signal's number.
func signalExitCode(sig os.Signal) int {
	if sig == syscall.SIGTERM {
		return exitTerminated
	}
	return exitInterrupt
}
