package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// CheckModule and TestModule read a module file the way Load does: a FIFO
// is refused at once (not waited on), an oversize file is refused naming
// its path, its size and the cap.
func TestCheckModuleAndTestModuleRefuseFilesThatAreNotModules(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.wasm")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	big := filepath.Join(dir, "big.wasm")
	if err := os.WriteFile(big, make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		mc    ModuleConfig
		parts []string
	}{
		{ModuleConfig{Path: fifo}, []string{fifo, "not a regular file"}},
		{ModuleConfig{Path: big, MaxModuleBytes: 1024}, []string{big, "2048 bytes", "over the module size cap of 1 KiB"}},
	}
	for _, c := range cases {
		for name, run := range map[string]func() error{
			"CheckModule": func() error { _, err := CheckModule(context.Background(), c.mc, t.TempDir()); return err },
			"TestModule": func() error {
				_, err := TestModule(context.Background(), c.mc, t.TempDir(), "elicitation/create", nil)
				return err
			},
		} {
			done := make(chan error, 1)
			go func() { done <- run() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				// Let a read blocked on the FIFO see end of file.
				if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
					w.Close()
				}
				<-done
				t.Fatalf("%s(%s) blocked", name, c.mc.Path)
			}
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("%s(%s): %v, want a *LoadError", name, c.mc.Path, err)
			}
			for _, p := range c.parts {
				if !strings.Contains(err.Error(), p) {
					t.Fatalf("%s: error %q does not contain %q", name, err, p)
				}
			}
		}
	}
}
