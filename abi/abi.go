// Package abi is the contract between Snodo's Wasm host (handlers/wasm) and
// handler modules: export and import names, call statuses, the manifest and
// the JSON envelopes that cross guest memory. ABI.md beside this file is its
// specification; this package holds the Go names of what it defines, so that
// the host and the Go guest SDK (abi/guest) cannot drift apart.
//
// It imports only the standard library, so it builds for GOOS=wasip1.
package abi

import "strconv"

// Version is the newest ABI version this package describes; a manifest's
// "abi" may be any version from 1 to Version. Version 2 adds interceptors
// (ABI.md section 8); a version-1 module keeps working unchanged.
const Version = 2

// VersionInterceptors is the first ABI version with interceptors.
const VersionInterceptors = 2

// Names of the guest's exports (ABI.md section 1).
const (
	ExportMemory     = "memory"
	ExportInitialize = "_initialize"
	ExportStart      = "_start"
	ExportDescribe   = "snodo_describe"
	ExportAlloc      = "snodo_alloc"
	ExportHandle     = "snodo_handle"
	ExportProgress   = "snodo_progress"
	ExportEvent      = "snodo_event"
	// ExportInterceptRequest and ExportInterceptResult are the interceptor
	// entry points of ABI version 2 (ABI.md section 8).
	ExportInterceptRequest = "snodo_intercept_request"
	ExportInterceptResult  = "snodo_intercept_result"
)

// Host imports (ABI.md section 4): module HostModule, functions below.
const (
	HostModule      = "snodo"
	ImportSetOutput = "set_output"
	ImportLog       = "log"
	ImportConfig    = "config"
)

// Other modules a guest may import from.
const (
	WASIModule = "wasi_snapshot_preview1"
	// EnvModule is AssemblyScript's "env" (abort, trace, seed).
	EnvModule = "env"
)

// Status is what an entry point returns (ABI.md section 3).
type Status uint32

const (
	// StatusOK: success; the output is the result (requests) or nothing
	// (consumers go on).
	StatusOK Status = 0
	// StatusError: the output is a JSON-RPC error object.
	StatusError Status = 1
	// StatusStop: consumers only; cancel the request (progress) or end the
	// subscription (events).
	StatusStop Status = 2
	// StatusReplace: interceptors only (ABI version 2); the output replaces
	// the request's params (snodo_intercept_request) or the result or
	// error the server answered (snodo_intercept_result).
	StatusReplace Status = 3
)

// String returns the status's ABI name.
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "OK"
	case StatusError:
		return "ERROR"
	case StatusStop:
		return "STOP"
	case StatusReplace:
		return "REPLACE"
	}
	return "invalid status " + strconv.FormatUint(uint64(s), 10)
}

// Log levels of the log import.
type Level int32

const (
	LevelDebug Level = 0
	LevelInfo  Level = 1
	LevelWarn  Level = 2
	LevelError Level = 3
)

// The methods a server asks of a client, which a module may answer in ABI
// version 1. They are the one spelling of these MCP method names in Snodo:
// the client's snodo.Options.Handlers take them too, for native Go handlers.
const (
	MethodElicitationCreate = "elicitation/create"
	MethodSamplingCreate    = "sampling/createMessage"
	MethodRootsList         = "roots/list"
)

// KnownMethods lists the methods of ABI version 1.
var KnownMethods = []string{MethodElicitationCreate, MethodSamplingCreate, MethodRootsList}

// IsKnownMethod reports whether ABI version 1 lets a module answer method.
func IsKnownMethod(method string) bool {
	for _, m := range KnownMethods {
		if m == method {
			return true
		}
	}
	return false
}

// Default limits of the host (ABI.md section 5).
const (
	DefaultTimeoutMillis  = 5000
	DefaultMemoryLimit    = 128 << 20
	DefaultMaxOutputBytes = 8 << 20
	// MaxLogBytes is where a log message is cut.
	MaxLogBytes = 4 << 10
	// MaxLogsPerCall is how many log messages one call may write; later
	// ones are dropped, and one warning says how many.
	MaxLogsPerCall = 100
	// MaxStderrBytes is how much of a call's stderr the host keeps.
	MaxStderrBytes = 4 << 10
)
