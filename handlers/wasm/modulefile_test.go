package wasm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loadPath loads the module file at path, failing the test when Load has
// not returned after a minute (a read blocked for ever), and returns Load's
// error. unblock, if not nil, is called then to let the blocked read go.
func loadPath(t *testing.T, cfg ModuleConfig, unblock func()) error {
	t.Helper()
	h := newHost(t)
	done := make(chan error, 1)
	go func() {
		m, err := h.Load(context.Background(), cfg)
		if err == nil {
			m.Close(context.Background())
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		if unblock != nil {
			unblock()
		}
		<-done
		t.Fatalf("Load(%s) blocked", cfg.Path)
		return nil
	}
}

func wantLoadError(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("Load succeeded")
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not contain %q", err, p)
		}
	}
}

// A module path that names a FIFO is refused at once: it is not a regular
// file, and opening it does not wait for a writer.
func TestModuleFileFIFOIsRefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "handler.wasm")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	err := loadPath(t, ModuleConfig{Path: fifo}, func() {
		// Let a reader blocked on the FIFO see end of file.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
	})
	wantLoadError(t, err, fifo, "not a regular file")
}

// /dev/zero is refused, not read until memory runs out.
func TestModuleFileDevZeroIsRefused(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip(err)
	}
	err := loadPath(t, ModuleConfig{Name: "zero", Path: "/dev/zero"}, nil)
	wantLoadError(t, err, "/dev/zero", "not a regular file")
}

// A module file bigger than the cap is refused without being read, with
// an error naming the path, the size and the cap; the cap is configurable.
func TestModuleFileOverTheSizeCapIsRefused(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.wasm")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: 64 MiB and one byte that take no room on disk.
	if err := f.Truncate(DefaultMaxModuleBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	err = loadPath(t, ModuleConfig{Path: big}, nil)
	wantLoadError(t, err, big, "67108865 bytes", "over the module size cap of 64 MiB")

	accept := filepath.Join(examples, "wat/accept/accept.wasm")
	err = loadPath(t, ModuleConfig{Path: accept, MaxModuleBytes: 64}, nil)
	wantLoadError(t, err, accept, "over the module size cap of 64 bytes")
	if err := loadPath(t, ModuleConfig{Path: accept}, nil); err != nil {
		t.Fatalf("a module under the cap: %v", err)
	}
	// Bytes given directly are held to the same cap.
	err = loadPath(t, ModuleConfig{Name: "bytes", Wasm: wasmFile(t, "wat/accept/accept.wasm"), MaxModuleBytes: 64}, nil)
	wantLoadError(t, err, "over the module size cap of 64 bytes")
}
