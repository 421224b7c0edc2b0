package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snodo/snodo/bench/internal/driver"
	"github.com/snodo/snodo/bench/internal/harness"
)

// TestIntoDocReplacesOnlyTheGeneratedBlock: the report goes between the
// markers of BENCHMARKS.md, and the text around them is kept.
func TestIntoDocReplacesOnlyTheGeneratedBlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	before := "# Benchmarks\n\n## Other\nkept\n\n## Side by side\nprose\n" + beginMarker + "\nold table\n" + endMarker + "\nmore prose\n"
	if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := intoDoc(path, "new table\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	want := "# Benchmarks\n\n## Other\nkept\n\n## Side by side\nprose\n" + beginMarker + "\nnew table\n" + endMarker + "\nmore prose\n"
	if string(b) != want {
		t.Fatalf("got\n%s\nwant\n%s", b, want)
	}
	if err := os.WriteFile(path, []byte("# no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := intoDoc(path, "x"); err == nil {
		t.Fatal("no error for a file without markers")
	}
}

// TestReportRatiosAndTargets: medians over rounds, ratios to the floor and
// to the best peer (lowest time, highest throughput), target verdicts, and
// the HTTP table with only the clients that ran over HTTP and the
// connections the server counted.
func TestReportRatiosAndTargets(t *testing.T) {
	seq := harness.Lean + "/legacy/seq"
	conc := harness.Lean + "/legacy/conc"
	r := func(median, calls, cpu float64) driver.Result {
		return driver.Result{MedianUS: median, CallsPerS: calls, CPUPerCallUS: cpu, OK: 1}
	}
	hconc := harness.HTTP + "/" + harness.Lean + "/legacy/conc"
	h := func(calls float64, conns int) driver.Result {
		return driver.Result{CallsPerS: calls, ConnsOpened: conns, OK: 1}
	}
	results := map[string]map[string][]driver.Result{
		hconc: {
			harness.Floor: {h(9000, 64), h(9000, 64), h(9000, 64)},
			harness.GoSDK: {h(3000, 900), h(3000, 800), h(3000, 700)},
			harness.Snodo: {h(8000, 64), h(8000, 70), h(8000, 90)},
		},
		seq: {
			harness.Floor: {r(5, 0, 5), r(6, 0, 5), r(7, 0, 5)},
			harness.GoSDK: {r(40, 0, 80), r(50, 0, 80), r(60, 0, 80)},
			harness.MCPGo: {r(20, 0, 30), r(30, 0, 30), r(90, 0, 30)},
			harness.Snodo: {r(12, 0, 9), r(15, 0, 9), r(18, 0, 9)},
		},
		conc: {
			harness.GoSDK: {r(0, 1000, 1), r(0, 1000, 1), r(0, 1000, 1)},
			harness.MCPGo: {r(0, 4000, 1), r(0, 4000, 1), r(0, 4000, 1)},
			harness.Snodo: {r(0, 10000, 1), r(0, 10000, 1), {Error: "boom"}},
		},
	}
	out := render(results, []string{harness.Floor, harness.GoSDK, harness.MCPGo, harness.Snodo}, reportInfo{rounds: 3, scale: 1, snodo: true})
	for _, want := range []string{
		"| sequential echo tools/call, median µs | 6.0 (5.0–7.0) | 50.0 (40.0–60.0) | 30.0 (20.0–90.0) | 15.0 (12.0–18.0) |",
		"| sequential echo tools/call, median µs | — | 8.33× floor, 1.67× best | 5.00× floor, 1.00× best | 2.50× floor, 0.50× best |",
		"| 64 concurrent callers, calls/s | — | 1,000 | 4,000 | 10,000 |",
		"stdio: client CPU per call, sequential, at most 0.33× the best peer's: 0.30× (9.0 vs 30.0): **met**",
		"stdio: 64-caller throughput at least 3× the best peer's: 2.50× (10,000 vs 4,000): **missed by 1.20×**",
		"stdio: sequential echo median at most 1.5× the floor's: 2.50× (15.0 vs 6.0): **missed by 1.67×**",
		"**Over Streamable HTTP**",
		"| TCP connections opened, 64 concurrent callers | 64 | 800 (700–900) | 70 (64–90) |",
		"| 64 concurrent callers, calls/s | — | 0.33× floor, 1.00× best | 0.89× floor, 2.67× best |",
		"HTTP: 64-caller throughput at least 2× the best peer's: 2.67× (8,000 vs 3,000): **met**",
		"HTTP: 64-caller throughput at least 0.7× the floor's: 0.89× (8,000 vs 9,000): **met**",
		"HTTP: connections opened by 64 callers at most 64: 70: **missed (70 > 64)**",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
