package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// ToolName is the name of the tool a tools/call with params calls, for
// the guard. It fails closed: params must be an object with exactly one
// key "name" whose value is a string, and no other key that differs from
// "name" only in case (a server that decodes into a Go struct with
// encoding/json matches keys without regard to case, and takes the last
// duplicate).
func ToolName(params json.RawMessage) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(params))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return "", errors.New("tools/call params are not an object")
	}
	name, found := "", false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", errors.New("tools/call params are not valid JSON")
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", errors.New("tools/call params are not valid JSON")
		}
		if !strings.EqualFold(key, "name") {
			continue
		}
		if key != "name" {
			return "", fmt.Errorf("tools/call params have a key %q: only \"name\" names the tool", key)
		}
		if found {
			return "", errors.New(`tools/call params have "name" twice`)
		}
		if err := json.Unmarshal(v, &name); err != nil {
			return "", fmt.Errorf(`tools/call params have a "name" that is not a string (%s)`, v)
		}
		found = true
	}
	if !found {
		return "", errors.New(`tools/call params have no "name": the guard cannot tell which tool it calls`)
	}
	return name, nil
}

// FilterTools applies the guard to a tools/list result: a tool allow
// refuses, or whose name cannot be told for sure, is left out. A result
// that cannot be read is replaced by an empty list.
func FilterTools(result json.RawMessage, allow func(string) bool) json.RawMessage {
	var res map[string]json.RawMessage
	var tools []json.RawMessage
	if json.Unmarshal(result, &res) != nil || json.Unmarshal(res["tools"], &tools) != nil {
		return json.RawMessage(`{"tools":[]}`)
	}
	kept := make([]json.RawMessage, 0, len(tools))
	for _, t := range tools {
		if name, err := ToolName(t); err == nil && allow(name) {
			kept = append(kept, t)
		}
	}
	res["tools"], _ = json.Marshal(kept)
	out, _ := json.Marshal(res)
	return out
}

// Directions and decisions of the audit log.
const (
	DirHostToServer = "host-to-server"
	DirServerToHost = "server-to-host"
	DecisionAllow   = "allow"
	DecisionDeny    = "deny"
)

// AuditRecord is one line of the audit log: a host request forwarded to
// the server (or refused), or a server request forwarded to the host.
type AuditRecord struct {
	Time       string  `json:"time"` // RFC 3339, UTC, when the request arrived
	Direction  string  `json:"direction"`
	Method     string  `json:"method"`
	ID         string  `json:"id,omitempty"`   // the host's request ID
	Tool       string  `json:"tool,omitempty"` // tools/call
	Decision   string  `json:"decision"`       // allow or deny
	DurationMS float64 `json:"durationMs"`
	ErrorCode  int64   `json:"errorCode,omitempty"` // the JSON-RPC error answered, if any
	Cancelled  bool    `json:"cancelled,omitempty"` // the host cancelled it
	// InputRequired: the response was an input_required result carrying
	// the server's requests to a 2026-07-28 host.
	InputRequired bool `json:"inputRequired,omitempty"`
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
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = a.w.Write(append(b, '\n'))
}
