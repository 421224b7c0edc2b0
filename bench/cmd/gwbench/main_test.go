package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// The harness, with tiny counts, runs every measurement end to end: the
// calls through the gateway and through haproxy in front of two replicas
// are answered, the sessions open, and each backend of the many-backends
// gateway answers with every session open. It leaves no goroutine behind
// (and stops every process it started: the gateways, haproxy and the lean
// servers are waited for).
func TestSmoke(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var log strings.Builder
	report, err := run(context.Background(), smokeConfig(filepath.Join("..", "..", "..")), &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	c := smokeConfig("")
	for _, want := range []string{
		"| gateway, legacy session |", "| gateway, 2026-07-28 |",
		"| haproxy + 2 replicas, legacy sessions |", "| haproxy + 2 replicas, 2026-07-28 |",
		fmt.Sprintf("%d of %d answered", c.Backends, c.Backends),
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}

// writeInto replaces the text between the markers and keeps the rest of
// the file; a file without markers gets the report appended.
func TestWriteInto(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.md")
	if err := os.WriteFile(p, []byte("# Title\n\nintro\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeInto(p, "first\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, append(b, "\n## After\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeInto(p, "second\n"); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(p)
	want := "# Title\n\nintro\n" + beginMarker + "second\n" + endMarker + "\n## After\n"
	if string(b) != want {
		t.Errorf("file:\n%s\nwant:\n%s", b, want)
	}
	if err := os.WriteFile(p, []byte(beginMarker+"x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeInto(p, "y\n"); err == nil || !strings.Contains(err.Error(), "without an end marker") {
		t.Errorf("begin marker alone: error %v; want one naming the missing end marker", err)
	}
}
