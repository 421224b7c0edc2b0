package hub

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/snodo/snodo/intercept"
	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/jsonrpc"
)

// A server's interceptor modules see each request the gateway sends it,
// with the host identity as the caller, and each decision other than
// letting it through is in the audit log with that identity.
func TestInterceptorDecisionsAudited(t *testing.T) {
	deny, err := filepath.Abs("../../../examples/handlers/c/tool-deny/tool-deny.wasm")
	if err != nil {
		t.Fatal(err)
	}
	guarded := demo("legacy")
	guarded["interceptors"] = []string{deny}
	audit := &records{}
	h := newHub(t, map[string]any{
		"mcpServers": map[string]any{"g": guarded},
		"modules":    map[string]any{"tool-deny": map[string]any{"config": map[string]any{"deny": []string{"echo"}}}},
	}, Options{Auditor: audit})
	r := request("tools/call", map[string]any{"name": "g__echo", "arguments": map[string]any{"text": "x"}})
	r.Identity = &gateway.Identity{Name: "alice"}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	_, err = h.Handle(ctx, r)
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != intercept.CodeDenied {
		t.Fatalf("a denied tool: %v, want the interceptor's -32030", err)
	}
	audit.mu.Lock()
	defer audit.mu.Unlock()
	var found *gateway.AuditRecord
	for i, rec := range audit.recs {
		if rec.Direction == "interceptor" {
			found = &audit.recs[i]
		}
	}
	if found == nil {
		b, _ := json.Marshal(audit.recs)
		t.Fatalf("no interceptor decision in the audit log: %s", b)
	}
	if found.Identity != "alice" || found.Server != "g" || found.Decision != "deny" || found.Module != "tool-deny" || found.ErrorCode != intercept.CodeDenied {
		t.Errorf("the interceptor's record: %+v", *found)
	}
}
