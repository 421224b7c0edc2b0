package wasm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
)

func content(t *testing.T, res json.RawMessage) map[string]any {
	t.Helper()
	var r struct {
		Action  string
		Content map[string]any
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatalf("result %s: %v", res, err)
	}
	return r.Content
}

func ask(t *testing.T, m *Module, message string) (map[string]any, error) {
	t.Helper()
	res, err := m.HandleRequest(context.Background(), "elicitation/create", elicit(message))
	if err != nil {
		return nil, err
	}
	return content(t, res), nil
}

// ABI.md §5: "By default nothing: no files" — a module cannot read
// /etc/passwd.
func TestSandboxGrantsNoFilesByDefault(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest")})
	_, err := ask(t, m, "read:/etc/passwd")
	wantHandlerError(t, err, jsonrpc.CodeInternalError, "read /etc/passwd")
	if strings.Contains(err.Error(), "root:") {
		t.Fatalf("the guest read the host's /etc/passwd: %v", err)
	}
}

// ABI.md §5: "directory mounts, read-only or read-write, at a guest path".
func TestSandboxMountGrants(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "note.txt"), []byte("granted"), 0o644)
	h := newHost(t)
	ro := load(t, h, ModuleConfig{Name: "ro", Wasm: goGuest(t, "goguest"),
		Grants: Grants{Mounts: []Mount{{HostDir: dir, GuestPath: "/data", ReadOnly: true}}}})
	c, err := ask(t, ro, "read:/data/note.txt")
	if err != nil || c["data"] != "granted" {
		t.Fatalf("read through a read-only mount: %v %v", c, err)
	}
	_, err = ask(t, ro, "write:/data/new.txt")
	wantHandlerError(t, err, jsonrpc.CodeInternalError, "write /data/new.txt")
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); err == nil {
		t.Fatal("a read-only mount was written")
	}

	rw := load(t, h, ModuleConfig{Name: "rw", Wasm: goGuest(t, "goguest"),
		Grants: Grants{Mounts: []Mount{{HostDir: dir, GuestPath: "/data"}}}})
	if _, err := ask(t, rw, "write:/data/new.txt"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "new.txt")); string(b) != "written by a guest" {
		t.Fatalf("read-write mount: file has %q", b)
	}
	_, err = ask(t, rw, "read:/etc/passwd")
	wantHandlerError(t, err, jsonrpc.CodeInternalError, "read /etc/passwd")
}

// ABI.md §5: "no environment variables" unless named.
func TestSandboxEnvironmentOnlyNamedVariables(t *testing.T) {
	t.Setenv("SNODO_WASM_GRANTED", "yes")
	t.Setenv("SNODO_WASM_SECRET", "no")
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest"), Grants: Grants{Env: []string{"SNODO_WASM_GRANTED"}}})
	c, err := ask(t, m, "env:SNODO_WASM_GRANTED")
	if err != nil || c["value"] != "yes" {
		t.Fatalf("granted variable: %v %v", c, err)
	}
	c, err = ask(t, m, "env:SNODO_WASM_SECRET")
	if err != nil || c["set"] != false {
		t.Fatalf("ungranted variable visible: %v %v", c, err)
	}
}

// ABI.md §5: "clocks that are fake" unless the clock is granted.
func TestSandboxClockIsFakeUnlessGranted(t *testing.T) {
	h := newHost(t)
	fake := load(t, h, ModuleConfig{Name: "fake", Wasm: goGuest(t, "goguest")})
	c, err := ask(t, fake, "clock")
	if err != nil || c["year"] != float64(2022) {
		t.Fatalf("ungranted clock: %v %v, want wazero's fake epoch, 2022", c, err)
	}
	real := load(t, h, ModuleConfig{Name: "real", Wasm: goGuest(t, "goguest"), Grants: Grants{Clock: true}})
	c, err = ask(t, real, "clock")
	if err != nil || c["year"] != float64(time.Now().Year()) {
		t.Fatalf("granted clock: %v %v, want this year", c, err)
	}
}

// ABI.md §4: "config — copies the module's configuration JSON".
func TestConfigReachesTheGuest(t *testing.T) {
	h := newHost(t)
	m := load(t, h, ModuleConfig{Name: "goguest", Wasm: goGuest(t, "goguest"), Config: json.RawMessage(`{"limit":3,"names":["a"]}`)})
	c, err := ask(t, m, "config")
	if err != nil {
		t.Fatal(err)
	}
	// The guest answers with its configuration re-encoded as a string
	// (form values are primitives).
	if s, _ := c["config"].(string); s != `{"limit":3,"names":["a"]}` {
		t.Fatalf("config %#v", c["config"])
	}
}

// ABI.md §5: "a deterministic random source" unless a cryptographic one
// is granted.
func TestSandboxRandomIsDeterministicUnlessGranted(t *testing.T) {
	h := newHost(t)
	draw := func(m *Module) string {
		c, err := ask(t, m, "rand")
		if err != nil {
			t.Fatal(err)
		}
		return c["hex"].(string)
	}
	a := load(t, h, ModuleConfig{Name: "a", Wasm: goGuest(t, "goguest")})
	b := load(t, h, ModuleConfig{Name: "b", Wasm: goGuest(t, "goguest")})
	if x, y := draw(a), draw(b); x != y {
		t.Fatalf("ungranted random differs between fresh instances: %s %s", x, y)
	}
	c := load(t, h, ModuleConfig{Name: "c", Wasm: goGuest(t, "goguest"), Grants: Grants{Random: true}})
	d := load(t, h, ModuleConfig{Name: "d", Wasm: goGuest(t, "goguest"), Grants: Grants{Random: true}})
	if x, y := draw(c), draw(d); x == y {
		t.Fatalf("granted random gave the same bytes twice: %s", x)
	}
}
