package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// filesystemBin is @modelcontextprotocol/server-filesystem, pinned beside
// server-everything in internal/interop/everything.
var filesystemBin = filepath.Join("..", "..", "internal", "interop", "everything", "node_modules", ".bin", "mcp-server-filesystem")

// A legacy server asks for the roots after notifications/initialized and
// applies them asynchronously: the first request must see them. The
// reference filesystem server replaces the directories of its command line
// with the client's roots; without the wait, list_allowed_directories
// answers with the command line's.
func TestRootsApplyBeforeTheFirstRequest(t *testing.T) {
	fs, err := filepath.Abs(filesystemBin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fs); err != nil {
		t.Fatalf("@modelcontextprotocol/server-filesystem is not installed at %s: run `bash .ci/deps.d/20-npm-interop.sh`", fs)
	}
	argDir, rootDir := t.TempDir(), t.TempDir()
	for i := 0; i < 3; i++ {
		r := ok(t, cli(t, "--handler", testkitWasm, "--handler-config", `{"roots":[{"uri":"file://`+rootDir+`"}]}`,
			"tools", "call", "list_allowed_directories", "-o", "text", "--", fs, argDir))
		if !strings.Contains(r.stdout, rootDir) || strings.Contains(r.stdout, argDir) {
			t.Fatalf("run %d: allowed directories %q, want the root %s only", i, r.stdout, rootDir)
		}
	}
}
