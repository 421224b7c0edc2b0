package front

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTSSDKHost: the official TypeScript SDK's Client, over its
// StreamableHTTPClientTransport, connects through the front with a bearer
// token, lists tools, calls one with progress and another, and ends its
// session.
func TestTSSDKHost(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: the TypeScript SDK host needs node 20 and bash .ci/deps.d/20-npm-interop.sh")
	}
	sdk, err := filepath.Abs("../../interop/everything/node_modules/@modelcontextprotocol/sdk")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sdk, "package.json")); err != nil {
		t.Fatalf("the TypeScript SDK is not installed (run bash .ci/deps.d/20-npm-interop.sh): %v", err)
	}
	_, srv, hub := testFront(t, "", fakePolicy{})
	cmd := exec.Command(node, "testdata/tshost.mjs", srv.URL+"/mcp", "alice")
	cmd.Env = append(os.Environ(), "TS_SDK_DIR="+sdk)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	var events []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("host printed %q", l)
		}
		events = append(events, m)
	}
	if len(events) != 4 {
		t.Fatalf("events %v\nstderr:\n%s", events, stderr.String())
	}
	if s, _ := events[0]["session"].(string); len(s) != 32 {
		t.Errorf("session %v", events[0]["session"])
	}
	if names, _ := events[1]["names"].([]any); !slices.Equal(names, []any{"demo__echo"}) {
		t.Errorf("tools %v", events[1])
	}
	if events[2]["text"] != "done" || len(events[2]["progress"].([]any)) != 2 {
		t.Errorf("progress call %v", events[2])
	}
	if events[3]["text"] != `{"n":3}` {
		t.Errorf("echo %v", events[3])
	}
	if r := hub.last(); r.Identity == nil || r.Identity.Name != "alice" || !strings.Contains(string(r.ClientInfo), "ts-host") {
		t.Errorf("hub request %+v", r)
	}
	if hub.ended.Load() != 1 {
		t.Errorf("the session was not ended by the host's DELETE")
	}
}
