// Command compare runs the side-by-side benchmark: it builds the servers and
// clients, runs every client in every case in interleaved rounds (each case
// runs A B C D, then the next case, and the whole list again each round),
// and prints medians, min–max, and ratios to the floor and to the best peer
// as a Markdown report for BENCHMARKS.md.
//
//	go run ./cmd/compare [--rounds 3] [--scale 1] [--out results]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/snodo/snodo/bench/internal/driver"
	"github.com/snodo/snodo/bench/internal/harness"
)

func main() {
	rounds := flag.Int("rounds", 5, "interleaved rounds (at least 3 for the report)")
	scale := flag.Float64("scale", 1, "multiplies the number of calls in every case")
	out := flag.String("out", "results", "directory for the raw results and the report")
	only := flag.String("only", "", "comma-separated client names to run (default all)")
	from := flag.String("from", "", "render the report from this raw results file instead of running")
	doc := flag.String("doc", "", "also put the report into this Markdown file, between the side-by-side markers")
	pin := flag.Bool("pin", false, "run the servers on one CPU and the clients on another (taskset)")
	flag.Parse()

	root, err := harness.FindRoot()
	check(err)
	p := harness.Paths{Root: root, Bin: filepath.Join(root, "bin")}
	if *pin {
		p.Pin, err = harness.NewPinning()
		check(err)
	}
	ctx := context.Background()
	if *from != "" {
		report, err := rerender(p, *from)
		check(err)
		fmt.Print(report)
		if *doc != "" {
			check(intoDoc(*doc, report))
		}
		return
	}

	start := time.Now()
	fmt.Fprintln(os.Stderr, "building…")
	withSnodo, snodoErr, err := harness.Build(ctx, p)
	check(err)
	if !withSnodo {
		fmt.Fprintf(os.Stderr, "Snodo client left out: %v\n", snodoErr)
	}
	check(harness.CheckNode(p))

	clients := harness.Clients(p, withSnodo)
	if *only != "" {
		keep := strings.Split(*only, ",")
		clients = slices.DeleteFunc(clients, func(c harness.Client) bool { return !slices.Contains(keep, c.Name) })
	}
	cases := harness.Cases(*scale)

	if !filepath.IsAbs(*out) {
		*out = filepath.Join(root, *out)
	}
	check(os.MkdirAll(*out, 0o755))
	stamp := time.Now().UTC().Format("20060102T150405Z")
	rawPath := filepath.Join(*out, "raw-"+stamp+".jsonl")
	raw, err := os.Create(rawPath)
	check(err)
	defer raw.Close()

	results := map[string]map[string][]driver.Result{} // case key -> client -> rounds
	var failures []string
	for round := 1; round <= *rounds; round++ {
		for _, c := range cases {
			for _, cl := range clients {
				if !c.Applies(cl) {
					continue
				}
				res := harness.Run(ctx, p, c, cl, 3*time.Minute)
				line, _ := json.Marshal(struct {
					Round int    `json:"round"`
					Case  string `json:"case"`
					driver.Result
				}{round, c.Key(), res})
				raw.Write(append(line, '\n'))
				status := "ok"
				if res.Error != "" {
					status = "FAILED: " + res.Error
					failures = append(failures, fmt.Sprintf("round %d, %s, %s: %s", round, c.Key(), cl.Name, res.Error))
				}
				fmt.Fprintf(os.Stderr, "[%4.0fs] round %d  %-28s %-7s %s\n", time.Since(start).Seconds(), round, c.Key(), cl.Name, status)
				if results[c.Key()] == nil {
					results[c.Key()] = map[string][]driver.Result{}
				}
				results[c.Key()][cl.Name] = append(results[c.Key()][cl.Name], res)
			}
		}
	}
	elapsed := time.Since(start)

	names := make([]string, 0, len(clients))
	for _, cl := range clients {
		names = append(names, cl.Name)
	}
	report := render(results, names, reportInfo{
		rounds:    *rounds,
		scale:     *scale,
		pin:       p.Pin,
		elapsed:   elapsed,
		snodo:     withSnodo,
		snodoErr:  snodoErr,
		failures:  failures,
		versions:  versions(p),
		machine:   machine(),
		rawResult: display(root, rawPath),
	})
	mdPath := filepath.Join(*out, "compare.md")
	check(os.WriteFile(mdPath, []byte(report), 0o644))
	fmt.Print(report)
	fmt.Fprintf(os.Stderr, "report: %s\nraw results: %s\n", mdPath, rawPath)
	if *doc != "" {
		check(intoDoc(*doc, report))
		fmt.Fprintf(os.Stderr, "report put into %s\n", *doc)
	}
	if len(failures) > 0 {
		os.Exit(1)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

// versions lists what was measured.
func versions(p harness.Paths) []string {
	var v []string
	v = append(v, "Go "+strings.TrimPrefix(runtime.Version(), "go"))
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		v = append(v, "node "+strings.TrimSpace(string(out)))
	}
	if b, err := os.ReadFile(filepath.Join(p.Root, "go.mod")); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && (f[0] == "github.com/modelcontextprotocol/go-sdk" || f[0] == "github.com/mark3labs/mcp-go") {
				v = append(v, f[0]+" "+f[1])
			}
		}
	}
	var pkg struct{ Version string }
	if b, err := os.ReadFile(filepath.Join(p.NodeClientDir(), "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err == nil && json.Unmarshal(b, &pkg) == nil {
		v = append(v, "@modelcontextprotocol/sdk "+pkg.Version)
	}
	if out, err := exec.Command("git", "-C", p.Root, "log", "-1", "--format=%h %cs").Output(); err == nil {
		v = append(v, "Snodo at commit "+strings.TrimSpace(string(out)))
	}
	return v
}

func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = ", Linux " + strings.TrimSpace(string(b))
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb)
		mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
	}
	return fmt.Sprintf("%d × %s%s%s", runtime.NumCPU(), model, mem, kernel)
}

// Markers around the generated report in BENCHMARKS.md.
const (
	beginMarker = "<!-- side-by-side results: generated by bench/cmd/compare -->"
	endMarker   = "<!-- end of side-by-side results -->"
)

// intoDoc replaces what lies between the markers in the Markdown file path
// with report.
func intoDoc(path, report string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i := strings.Index(s, beginMarker)
	j := strings.Index(s, endMarker)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %q … %q markers", path, beginMarker, endMarker)
	}
	s = s[:i+len(beginMarker)] + "\n" + report + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}

// rerender renders the report of an earlier run from its raw results.
func rerender(p harness.Paths, path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	results := map[string]map[string][]driver.Result{}
	rounds := 0
	seen := map[string]bool{}
	var failures []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			Round int    `json:"round"`
			Case  string `json:"case"`
			driver.Result
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return "", fmt.Errorf("%s: %v", path, err)
		}
		rounds = max(rounds, r.Round)
		seen[r.Client] = true
		if results[r.Case] == nil {
			results[r.Case] = map[string][]driver.Result{}
		}
		results[r.Case][r.Client] = append(results[r.Case][r.Client], r.Result)
		if r.Error != "" {
			failures = append(failures, fmt.Sprintf("round %d, %s, %s: %s", r.Round, r.Case, r.Client, r.Error))
		}
	}
	var names []string
	for _, cl := range harness.Clients(p, true) {
		if seen[cl.Name] {
			names = append(names, cl.Name)
		}
	}
	return render(results, names, reportInfo{
		rounds: rounds, scale: 1, snodo: seen[harness.Snodo], snodoErr: fmt.Errorf("not in %s", path),
		failures: failures, versions: versions(p), machine: machine(), rawResult: display(p.Root, path),
	}), nil
}

// display names path relative to the repository (the bench module's parent)
// when it lies inside it.
func display(root, path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(filepath.Dir(root), abs); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}
