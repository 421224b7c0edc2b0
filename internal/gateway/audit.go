package gateway

import (
	"encoding/json"
	"io"
	"os"
	"sync"
)

// JSONAudit writes audit records as JSON lines to a writer, one write per
// record, serialized.
type JSONAudit struct {
	mu sync.Mutex
	w  io.Writer
}

// NewJSONAudit returns an Auditor writing JSON lines to w.
func NewJSONAudit(w io.Writer) *JSONAudit { return &JSONAudit{w: w} }

// Audit writes r as one line.
func (a *JSONAudit) Audit(r AuditRecord) {
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	b = append(b, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = a.w.Write(b)
}

// OpenAudit opens the audit section's file ({"file": PATH}, appended to,
// created 0600): the Auditor every part of the gateway writes to, and the
// function that closes it. With no audit section the Auditor is nil.
func OpenAudit(s Sections) (Auditor, func(), error) {
	var sec struct {
		File string `json:"file"`
	}
	if err := s.Decode("audit", &sec); err != nil {
		return nil, func() {}, err
	}
	if sec.File == "" {
		return nil, func() {}, nil
	}
	f, err := os.OpenFile(sec.File, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, func() {}, err
	}
	return NewJSONAudit(f), func() { f.Close() }, nil
}
