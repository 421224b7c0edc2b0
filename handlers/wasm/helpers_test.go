package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
)

// examples is where scripts/build-examples.sh builds (and where the small
// non-Go modules are committed beside their source).
const examples = "../../examples/handlers"

// blockBound bounds the wait for a host call that must not block (a sleep
// of poll_oneoff that must be cut, an open of a FIFO): far under the 20 s
// the hostile modules would otherwise wait, and far over what a loaded
// machine needs.
const blockBound = 10 * time.Second

// wasmFile returns the bytes of an example module, failing with what to
// run when it is missing.
func wasmFile(t testing.TB, rel string) []byte {
	t.Helper()
	path := filepath.Join(examples, rel)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("example module %s is missing (%v): run scripts/build-examples.sh (make examples) first", path, err)
	}
	return b
}

// newHost returns a host whose compilation cache is shared by the tests
// of this run (in the directory TestMain made), so that each module is
// compiled once per run.
func newHost(t testing.TB) *Host {
	t.Helper()
	h, err := NewHost(HostConfig{CacheDir: filepath.Join(goGuestDir, "cache"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

func load(t testing.TB, h *Host, cfg ModuleConfig) *Module {
	t.Helper()
	m, err := h.Load(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Load(%s): %v", cfg.Name, err)
	}
	return m
}

// wantHandlerError checks that err is a *jsonrpc.Error of kind handler with
// the code, whose message contains every one of parts.
func wantHandlerError(t testing.TB, err error, code int64, parts ...string) *jsonrpc.Error {
	t.Helper()
	var e *jsonrpc.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *jsonrpc.Error", err, err)
	}
	if e.Kind != jsonrpc.KindHandler || e.Code != code {
		t.Fatalf("error %v: kind %q code %d, want kind handler code %d", e, e.Kind, e.Code, code)
	}
	for _, p := range parts {
		if !strings.Contains(e.Message, p) {
			t.Fatalf("error message %q does not contain %q", e.Message, p)
		}
	}
	return e
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

func newJSONLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
