package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/snodo/snodo/handlers/wasm"
	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/internal/safetext"
	"github.com/snodo/snodo/jsonrpc"
)

// Exit codes, documented in --help and docs/CLI.md.
const (
	exitOK         = 0   // success
	exitServer     = 1   // the server answered with an error, or a tool result with isError
	exitUsage      = 2   // usage or configuration error
	exitConnection = 3   // connection or transport failure
	exitTimeout    = 4   // a request timed out
	exitHandler    = 5   // a handler module failed (load, check, or while answering)
	exitInterrupt  = 130 // SIGINT (Ctrl-C)
	exitTerminated = 143 // SIGTERM
)

const exitCodesHelp = `Exit codes:
  0  success
  1  the server answered with an error, or a tool result with isError
  2  usage or configuration error (also a tool refused by the guard, a
     request or answer an --interceptor denied (-32030), or input asked
     for that no handler is configured to give)
  3  connection or transport failure (server not found, exited, closed)
  4  timeout
  5  handler failure (a Wasm module missing, invalid, or failing)
  130 interrupted (Ctrl-C, SIGINT): the request in flight was cancelled on
      the server, and the server shut down; a second Ctrl-C kills the server
      and exits at once
  143 terminated (SIGTERM): the same as 130
  listen and proxy run until stopped: a first Ctrl-C or SIGTERM is their
  normal end, exit 0`

// cliError is an error with the exit code and kind it is reported with.
type cliError struct {
	code int
	kind string // usage, config, guard, handler, interrupted
	err  error
	data any
}

func (e *cliError) Error() string { return e.err.Error() }
func (e *cliError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &cliError{code: exitUsage, kind: "usage", err: fmt.Errorf(format, args...)}
}

func configErr(format string, args ...any) error {
	return &cliError{code: exitUsage, kind: "config", err: fmt.Errorf(format, args...)}
}

func handlerErr(err error) error {
	return &cliError{code: exitHandler, kind: "handler", err: err}
}

// moduleErr is the error for a module that failed to load: a handler
// failure, except a compilation cache others could change (--cache-dir,
// or the cache key file), which is the configuration's.
func moduleErr(err error) error {
	var ue *wasm.UnsafeCacheError
	if errors.As(err, &ue) {
		return configErr("%v", ue)
	}
	return handlerErr(err)
}

// exitCode is the process exit code for err.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ce *cliError
	if errors.As(err, &ce) {
		return ce.code
	}
	if errors.Is(err, context.Canceled) {
		return exitInterrupt
	}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		if je.Code == intercept.CodeDenied && je.Kind == jsonrpc.KindHandler {
			// A policy's refusal, as the guard's.
			return exitUsage
		}
		switch je.Kind {
		case jsonrpc.KindServer:
			return exitServer
		case jsonrpc.KindHandler:
			return exitHandler
		case jsonrpc.KindTransport:
			if je.Code == jsonrpc.CodeRequestTimeout {
				return exitTimeout
			}
			return exitConnection
		case jsonrpc.KindProtocol:
			return exitConnection
		}
		return exitServer
	}
	return exitConnection
}

// errorObject is the one JSON object an error is reported as on stderr.
type errorObject struct {
	Error    errorBody `json:"error"`
	ExitCode int       `json:"exitCode"`
}

type errorBody struct {
	Kind    string          `json:"kind"`
	Code    int64           `json:"code,omitempty"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// reportError writes err to w as one JSON object on one line.
func reportError(w io.Writer, err error) int {
	code := exitCode(err)
	body := errorBody{Message: err.Error()}
	var ce *cliError
	var je *jsonrpc.Error
	switch {
	case errors.Is(err, context.Canceled) && !errors.As(err, &ce):
		body.Kind, body.Message = "interrupted", "interrupted: the request in flight was cancelled on the server"
	case errors.As(err, &ce):
		body.Kind = ce.kind
		if errors.As(ce.err, &je) {
			body.Code, body.Data = je.Code, je.Data
		}
		if ce.data != nil {
			body.Data, _ = json.Marshal(ce.data)
		}
	case errors.As(err, &je):
		body.Kind, body.Code, body.Data = string(je.Kind), je.Code, je.Data
		if err == error(je) { // kind and code have fields of their own
			body.Message = je.Detail()
		}
		if body.Kind == "" {
			body.Kind = "server"
		}
	default:
		body.Kind = "transport"
	}
	// The message and data may hold a server's text: its control, bidi
	// and invisible characters are written as \u escapes.
	b, _ := json.Marshal(errorObject{Error: body, ExitCode: code})
	fmt.Fprintf(w, "%s\n", safetext.JSON(b))
	return code
}
