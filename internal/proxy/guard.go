package proxy

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/snodo/snodo/internal/safetext"
)

// Directions and decisions of the audit log.
const (
	DirHostToServer = "host-to-server"
	DirServerToHost = "server-to-host"
	// DirServerToModule: a server request a Wasm module answered.
	DirServerToModule = "server-to-module"
	DecisionAllow     = "allow"
	DecisionDeny      = "deny"
	// DirIntercept: a decision of an interceptor module on a request the
	// client sends the server (phase "request") or on its answer (phase
	// "result"), other than letting it through.
	DirIntercept = "interceptor"
	// Decisions of interceptors, besides deny.
	DecisionRewrite = "rewrite"
	DecisionReplace = "replace"
	DecisionFail    = "fail" // the interceptor failed: the call failed closed
)

// AuditRecord is one line of the audit log: a host request forwarded to
// the server (or refused), a server request forwarded to the host, or a
// server request a Wasm module answered.
type AuditRecord struct {
	Time       string  `json:"time"` // RFC 3339, UTC, when the request arrived
	Direction  string  `json:"direction"`
	Method     string  `json:"method"`
	ID         string  `json:"id,omitempty"`     // the host's request ID
	Tool       string  `json:"tool,omitempty"`   // tools/call
	Module     string  `json:"module,omitempty"` // the Wasm module that answered
	Decision   string  `json:"decision"`         // allow or deny
	DurationMS float64 `json:"durationMs"`
	ErrorCode  int64   `json:"errorCode,omitempty"` // the JSON-RPC error answered, if any
	// Cancelled: the host cancelled its request, or the server its
	// request while a module was answering it.
	Cancelled bool `json:"cancelled,omitempty"`
	// InputRequired: the response was an input_required result carrying
	// the server's requests to a 2026-07-28 host.
	InputRequired bool `json:"inputRequired,omitempty"`
	// Phase is an interceptor decision's phase: request or result.
	Phase string `json:"phase,omitempty"`
	// Reason is an interceptor's denial message, or its failure.
	Reason string `json:"reason,omitempty"`
}

// auditLog writes AuditRecords as JSON lines.
type auditLog struct {
	mu sync.Mutex
	w  interface{ Write([]byte) (int, error) }
}

func (a *auditLog) write(r AuditRecord, started time.Time) {
	if a.w == nil {
		return
	}
	r.Time = started.UTC().Format(time.RFC3339Nano)
	r.DurationMS = float64(time.Since(started).Microseconds()) / 1000
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	// The tool name is the host's text, and an audit log is read on a
	// terminal: its control, bidi and invisible characters are escaped.
	b = safetext.JSON(b)
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = a.w.Write(append(b, '\n'))
}
