package wasm

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/snodo/snodo/internal/interop/gosdkserver"
)

// goGuests are the Go handler modules the tests build from source, once
// per test run, with GOOS=wasip1 -buildmode=c-shared.
var goGuests = map[string]string{
	"goguest":        "./testdata/goguest",
	"elicit-policy":  "../../examples/handlers/go/elicit-policy",
	"sampling-echo":  "../../examples/handlers/go/sampling-echo",
	"confine-paths":  "../../examples/handlers/go/confine-paths",
	"redact-secrets": "../../examples/handlers/go/redact-secrets",
}

// exampleGoGuests are more Go examples the tests build, for their own
// tests only: the instrumentation test, which disassembles every module
// of goGuests, has Go guests enough there.
var exampleGoGuests = map[string]string{
	"shell-guard": "../../examples/handlers/go/shell-guard",
	"add-meta":    "../../examples/handlers/go/add-meta",
}

var goGuestDir string

// serverRoleEnv makes the test binary an MCP server built with the
// official Go SDK (legacy or 2026-07-28), for the tests that put a Wasm
// handler behind a real client.
const serverRoleEnv = "SNODO_WASM_TEST_SERVER"

func TestMain(m *testing.M) {
	ServeCompile() // when a test's host runs this binary to compile
	switch os.Getenv(serverRoleEnv) {
	case "gosdk-modern":
		os.Exit(gosdkserver.Run(false))
	case "gosdk-legacy":
		os.Exit(gosdkserver.Run(true))
	}
	dir, err := os.MkdirTemp("", "snodo-wasm-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	goGuestDir = dir
	os.Setenv("SNODO_WASM_TEST_GUESTS", dir)
	// The compilation cache's key file (DefaultCacheKeyFile) goes here,
	// not into the user's configuration directory.
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	if os.Getenv(gcChildEnv) != "" {
		// One test, which needs no Go guest (the directory holds the
		// compilation cache).
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	if err := buildGoGuests(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

func buildGoGuests(dir string) error {
	goTool := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	all := maps.Clone(goGuests)
	maps.Copy(all, exampleGoGuests)
	for name, pkg := range all {
		out := filepath.Join(dir, name+".wasm")
		cmd := exec.Command(goTool, "build", "-buildmode=c-shared", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building Go guest %s (GOOS=wasip1 go build -buildmode=c-shared %s): %v\n%s", name, pkg, err, b)
		}
	}
	return nil
}

// goGuest returns the bytes of a Go guest built by TestMain.
func goGuest(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goGuestDir, name+".wasm"))
	if err != nil {
		t.Fatalf("Go guest %s was not built: %v", name, err)
	}
	return b
}
