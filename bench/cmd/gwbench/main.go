// Command gwbench measures what `snodo-run gateway` costs: the latency it
// adds to a tools/call, the calls per second one replica and two replicas
// behind haproxy (the shipped deploy/haproxy/haproxy.cfg) serve, and the
// memory an idle legacy host session and a backend server take in the
// gateway process. The backends are the lean server (cmd/leanserver) over
// stdio; the hosts are Snodo clients over Streamable HTTP, and raw HTTP
// sessions for the memory figures.
//
// From the bench directory:
//
//	go run ./cmd/gwbench --out results/gateway.md
//
// (make gateway does the same). It builds snodo-run and the lean server
// first, needs haproxy on PATH (../.ci/deps.d/70-haproxy.sh), and writes a
// Markdown report: the section between the "gwbench" markers of --out, or
// standard output. --smoke runs every measurement with tiny counts, to
// check that the harness works (its test does).
//
// Latency: rounds of sequential calls of the echo tool, interleaved over
// the cases (direct over stdio, direct over HTTP to the lean server's HTTP
// mode, through the gateway in a legacy session and with 2026-07-28
// stateless requests); the report quotes the median over the rounds of
// each case's p50 and p99. Throughput: callers clients at once, each
// making perCaller calls, in rounds interleaved over the cases; the report
// quotes the median calls/s. Memory: the gateway runs with
// GODEBUG=gctrace=1; before each reading it is pinged until it has run two
// GC cycles, and the reading is its VmRSS and the live heap of the last
// cycle (MB resolution).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/snodo/snodo"
)

type config struct {
	Root      string
	Rounds    int
	Warm      int
	Calls     int
	TRounds   int
	Callers   int
	PerCaller int
	Sessions  int
	More      int
	Backends  int
	Smoke     bool
}

func main() {
	var cfg config
	out := flag.String("out", "", "write the report into this Markdown file, between its gwbench markers (appended when it has none); empty: standard output")
	flag.StringVar(&cfg.Root, "root", "..", "the Snodo repository's root (snodo-run is built from it)")
	flag.IntVar(&cfg.Rounds, "rounds", 5, "latency rounds per case")
	flag.IntVar(&cfg.Warm, "warm", 200, "unmeasured calls before each latency round")
	flag.IntVar(&cfg.Calls, "calls", 5000, "measured sequential calls per latency round")
	flag.IntVar(&cfg.TRounds, "throughput-rounds", 3, "throughput rounds per case")
	flag.IntVar(&cfg.Callers, "callers", 64, "concurrent host callers in the throughput cases")
	flag.IntVar(&cfg.PerCaller, "per-caller", 200, "calls per caller per throughput round")
	flag.IntVar(&cfg.Sessions, "sessions", 1000, "idle legacy host sessions opened")
	flag.IntVar(&cfg.More, "more-sessions", 9000, "sessions opened on top of --sessions, for a finer per-session figure")
	flag.IntVar(&cfg.Backends, "backends", 50, "backend servers configured in the many-backends gateway")
	flag.BoolVar(&cfg.Smoke, "smoke", false, "tiny counts: check that the harness works, measure nothing")
	flag.Parse()
	if cfg.Smoke {
		cfg = smokeConfig(cfg.Root)
	}
	ctx := context.Background()
	report, err := run(ctx, cfg, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gwbench:", err)
		os.Exit(1)
	}
	if *out == "" {
		fmt.Print(report)
		return
	}
	if err := writeInto(*out, report); err != nil {
		fmt.Fprintln(os.Stderr, "gwbench:", err)
		os.Exit(1)
	}
}

func smokeConfig(root string) config {
	return config{Root: root, Rounds: 1, Warm: 2, Calls: 10, TRounds: 1, Callers: 4, PerCaller: 5,
		Sessions: 10, More: 10, Backends: 3, Smoke: true}
}

const (
	beginMarker = "<!-- gwbench: begin (written by go run ./cmd/gwbench) -->\n"
	endMarker   = "<!-- gwbench: end -->\n"
)

// writeInto replaces the text between the markers of path with report, or
// appends it between new markers.
func writeInto(path, report string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	body := beginMarker + report + endMarker
	s := string(old)
	if i := strings.Index(s, beginMarker); i >= 0 {
		j := strings.Index(s[i:], endMarker)
		if j < 0 {
			return fmt.Errorf("%s: a begin marker without an end marker; restore %q", path, strings.TrimSpace(endMarker))
		}
		s = s[:i] + body + s[i+j+len(endMarker):]
	} else {
		s += body
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

// result is one run's figures.
type result struct {
	lat  map[string][2][]time.Duration // case -> p50s, p99s
	tput map[string][]float64          // case -> calls/s
	// One backend: the probe session only; cfg.Sessions idle sessions;
	// their GET streams open too; cfg.More sessions more.
	mem1, memS, memSG, memSM memory
	// cfg.Backends: the probe session only; cfg.Sessions sessions with
	// their GET streams open.
	memB, memBS memory
	readyB      time.Duration // start to /readyz 200 with cfg.Backends
	childrenB   int64         // the backends' RSS, summed
	callsB      int           // backends answering a call with every session open
}

var latCases = []string{"direct stdio", "direct HTTP", "gateway, legacy session", "gateway, 2026-07-28"}

func run(ctx context.Context, cfg config, log io.Writer) (string, error) {
	dir, err := os.MkdirTemp("", "gwbench-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	defer hostHTTP.CloseIdleConnections()
	fmt.Fprintln(log, "gwbench: building snodo-run and the lean server")
	snodoRun, lean, err := build(cfg.Root, dir)
	if err != nil {
		return "", err
	}
	res := &result{lat: map[string][2][]time.Duration{}, tput: map[string][]float64{}}
	key := newStateKey()
	if err := runLatencyAndThroughput(ctx, cfg, snodoRun, lean, dir, key, res, log); err != nil {
		return "", err
	}
	if err := runMemory(ctx, cfg, snodoRun, lean, dir, key, res, log); err != nil {
		return "", err
	}
	return report(cfg, res), nil
}

func runLatencyAndThroughput(ctx context.Context, cfg config, snodoRun, lean, dir, key string, res *result, log io.Writer) error {
	gwA, err := startGateway(snodoRun, dir, gatewayConfig(lean, 1, key))
	if err != nil {
		return err
	}
	defer gwA.Stop()
	lh, err := startLeanHTTP(lean)
	if err != nil {
		return err
	}
	defer lh.Stop()
	type latCase struct {
		c    *snodo.Client
		tool string
	}
	cases := map[string]latCase{}
	for _, name := range latCases {
		var c *snodo.Client
		tool := "echo"
		switch name {
		case "direct stdio":
			c, err = dialStdio(ctx, lean)
		case "direct HTTP":
			c, err = dialHTTP(ctx, lh.URL, snodo.EraLegacy)
		case "gateway, legacy session":
			c, err = dialHTTP(ctx, gwA.URL, snodo.EraLegacy)
			tool = "lean__echo"
		default:
			c, err = dialHTTP(ctx, gwA.URL, snodo.EraModern)
			tool = "lean__echo"
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		defer c.Close()
		cases[name] = latCase{c, tool}
	}
	for r := range cfg.Rounds {
		for _, name := range latCases {
			fmt.Fprintf(log, "gwbench: latency round %d/%d: %s\n", r+1, cfg.Rounds, name)
			p50, p99, err := latency(ctx, cases[name].c, cases[name].tool, cfg.Warm, cfg.Calls)
			if err != nil {
				return fmt.Errorf("latency, %s: %w", name, err)
			}
			v := res.lat[name]
			v[0], v[1] = append(v[0], p50), append(v[1], p99)
			res.lat[name] = v
		}
	}
	for _, c := range cases {
		c.c.Close()
	}

	gwB, err := startGateway(snodoRun, dir, gatewayConfig(lean, 1, key))
	if err != nil {
		return err
	}
	defer gwB.Stop()
	lb1, stop1, err := startHAProxy(gwA)
	if err != nil {
		return err
	}
	defer stop1()
	lb2, stop2, err := startHAProxy(gwA, gwB)
	if err != nil {
		return err
	}
	defer stop2()
	type tCase struct {
		name, url, tool string
		era             snodo.Era
	}
	tcases := []tCase{
		{"direct HTTP (lean server)", lh.URL, "echo", snodo.EraLegacy},
		{"1 replica, legacy sessions", gwA.URL, "lean__echo", snodo.EraLegacy},
		{"1 replica, 2026-07-28", gwA.URL, "lean__echo", snodo.EraModern},
		{"haproxy + 1 replica, legacy sessions", lb1, "lean__echo", snodo.EraLegacy},
		{"haproxy + 1 replica, 2026-07-28", lb1, "lean__echo", snodo.EraModern},
		{"haproxy + 2 replicas, legacy sessions", lb2, "lean__echo", snodo.EraLegacy},
		{"haproxy + 2 replicas, 2026-07-28", lb2, "lean__echo", snodo.EraModern},
	}
	for r := range cfg.TRounds {
		for _, tc := range tcases {
			fmt.Fprintf(log, "gwbench: throughput round %d/%d: %s\n", r+1, cfg.TRounds, tc.name)
			cps, err := throughput(ctx, tc.url, tc.era, tc.tool, cfg.Callers, cfg.PerCaller)
			if err != nil {
				return fmt.Errorf("throughput, %s: %w", tc.name, err)
			}
			res.tput[tc.name] = append(res.tput[tc.name], cps)
		}
	}
	return nil
}

func runMemory(ctx context.Context, cfg config, snodoRun, lean, dir, key string, res *result, log io.Writer) error {
	fmt.Fprintf(log, "gwbench: memory, one backend, %d sessions, their GET streams, %d sessions more\n", cfg.Sessions, cfg.More)
	if err := memoryOneBackend(ctx, cfg, snodoRun, lean, dir, key, res); err != nil {
		return err
	}
	fmt.Fprintf(log, "gwbench: memory, %d backends, then %d sessions with their GET streams\n", cfg.Backends, cfg.Sessions)
	return memoryManyBackends(ctx, cfg, snodoRun, lean, dir, key, res)
}

func memoryOneBackend(ctx context.Context, cfg config, snodoRun, lean, dir, key string, res *result) error {
	g, err := startGateway(snodoRun, dir, gatewayConfig(lean, 1, key))
	if err != nil {
		return err
	}
	defer g.Stop()
	probe, err := openSession(ctx, g.URL)
	if err != nil {
		return err
	}
	if err := callEcho(ctx, g.URL, probe, "lean__echo", "probe"); err != nil {
		return err
	}
	if res.mem1, err = settle(ctx, g, probe); err != nil {
		return err
	}
	sids, err := openSessions(ctx, g.URL, cfg.Sessions)
	if err != nil {
		return err
	}
	if res.memS, err = settle(ctx, g, probe); err != nil {
		return err
	}
	st, err := openStreams(ctx, g.URL, sids)
	if err != nil {
		return err
	}
	defer st.Close()
	if res.memSG, err = settle(ctx, g, probe); err != nil {
		return err
	}
	if _, err := openSessions(ctx, g.URL, cfg.More); err != nil {
		return err
	}
	res.memSM, err = settle(ctx, g, probe)
	return err
}

func memoryManyBackends(ctx context.Context, cfg config, snodoRun, lean, dir, key string, res *result) error {
	start := time.Now()
	g, err := startGateway(snodoRun, dir, gatewayConfig(lean, cfg.Backends, key))
	if err != nil {
		return err
	}
	defer g.Stop()
	res.readyB = time.Since(start)
	probe, err := openSession(ctx, g.URL)
	if err != nil {
		return err
	}
	if err := callEcho(ctx, g.URL, probe, "b1__echo", "probe"); err != nil {
		return err
	}
	if res.memB, err = settle(ctx, g, probe); err != nil {
		return err
	}
	sids, err := openSessions(ctx, g.URL, cfg.Sessions)
	if err != nil {
		return err
	}
	st, err := openStreams(ctx, g.URL, sids)
	if err != nil {
		return err
	}
	defer st.Close()
	if res.memBS, err = settle(ctx, g, probe); err != nil {
		return err
	}
	// With every session and its stream open, a call through each
	// backend, each from another session.
	for i := 1; i <= cfg.Backends; i++ {
		sid := sids[(i*7919)%len(sids)]
		if err := callEcho(ctx, g.URL, sid, fmt.Sprintf("b%d__echo", i), fmt.Sprintf("via-b%d", i)); err != nil {
			return fmt.Errorf("with %d sessions open: %w", cfg.Sessions, err)
		}
		res.callsB++
	}
	kids, err := children(g.cmd.Process.Pid)
	if err != nil {
		return err
	}
	if len(kids) != cfg.Backends {
		return fmt.Errorf("the gateway has %d child processes; want its %d backends", len(kids), cfg.Backends)
	}
	for _, pid := range kids {
		r, err := rss(pid)
		if err != nil {
			return err
		}
		res.childrenB += r
	}
	return nil
}

// children returns the PIDs of pid's child processes (each thread's).
func children(pid int) ([]int, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err != nil {
			continue // the thread has exited
		}
		for _, f := range strings.Fields(string(b)) {
			n, err := strconv.Atoi(f)
			if err != nil {
				return nil, err
			}
			out = append(out, n)
		}
	}
	return out, nil
}

func median[T int64 | float64 | time.Duration](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }

func kib(b float64) string {
	if b >= 1<<20 || b <= -(1<<20) {
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", b/1024)
}

func report(cfg config, r *result) string {
	var b bytes.Buffer
	if cfg.Smoke {
		b.WriteString("_Smoke run (--smoke): tiny counts, the figures mean nothing._\n\n")
	}
	fmt.Fprintf(&b, "Measured %s on %s; commit %s; %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), machine(), commit(cfg.Root), runtime.Version())
	fmt.Fprintf(&b, "### Latency of a tools/call, sequential\n\n")
	fmt.Fprintf(&b, "One caller, echo on the lean server; %d rounds of %d calls (after %d unmeasured) per case, interleaved; median over the rounds of each round's p50 and p99.\n\n", cfg.Rounds, cfg.Calls, cfg.Warm)
	b.WriteString("| Path | p50 | p99 | p50 added vs direct stdio | p50 added vs direct HTTP |\n|---|---:|---:|---:|---:|\n")
	dStdio, dHTTP := median(r.lat["direct stdio"][0]), median(r.lat["direct HTTP"][0])
	for _, name := range latCases {
		p50, p99 := median(r.lat[name][0]), median(r.lat[name][1])
		add := func(base time.Duration) string {
			if base == p50 {
				return "—"
			}
			return fmt.Sprintf("%+.0f µs (×%.2f)", float64(p50-base)/1e3, float64(p50)/float64(base))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name, us(p50), us(p99), add(dStdio), add(dHTTP))
	}
	b.WriteString("\nDirect stdio: a Snodo client runs the lean server as its child. Direct HTTP: a Snodo client over Streamable HTTP to the lean server's HTTP mode. Gateway: a Snodo client over Streamable HTTP to `snodo-run gateway` (no identities, no telemetry export), which calls the lean server over stdio.\n\n")

	fmt.Fprintf(&b, "### Calls per second, %d concurrent host callers\n\n", cfg.Callers)
	fmt.Fprintf(&b, "Each caller a Snodo client over Streamable HTTP (its own legacy session, or stateless 2026-07-28 requests) making %d calls of echo; %d rounds per case, interleaved; median. Each replica is a `snodo-run gateway` with its own lean server over stdio; haproxy runs deploy/haproxy/haproxy.cfg (via internal/gateway/lbtest).\n\n", cfg.PerCaller, cfg.TRounds)
	b.WriteString("| Path | calls/s | vs 1 replica |\n|---|---:|---:|\n")
	base := map[string]float64{"legacy": median(r.tput["1 replica, legacy sessions"]), "modern": median(r.tput["1 replica, 2026-07-28"])}
	for _, name := range []string{"direct HTTP (lean server)", "1 replica, legacy sessions", "1 replica, 2026-07-28",
		"haproxy + 1 replica, legacy sessions", "haproxy + 1 replica, 2026-07-28",
		"haproxy + 2 replicas, legacy sessions", "haproxy + 2 replicas, 2026-07-28"} {
		v := median(r.tput[name])
		ratio := "—"
		if strings.Contains(name, "haproxy") {
			era := "modern"
			if strings.Contains(name, "legacy") {
				era = "legacy"
			}
			ratio = fmt.Sprintf("×%.2f", v/base[era])
		}
		fmt.Fprintf(&b, "| %s | %.0f | %s |\n", name, v, ratio)
	}

	fmt.Fprintf(&b, "\n### Memory\n\n")
	fmt.Fprintf(&b, "The gateway process alone (its backends are separate processes). Each reading is taken after the gateway has run two GC cycles (it is pinged until it has): VmRSS, and the live heap and goroutine stacks of the last cycle as gctrace reports them (whole MB, truncated).\n\n")
	b.WriteString("| Gateway | RSS | live heap | stacks |\n|---|---:|---:|---:|\n")
	row := func(name string, m memory) {
		fmt.Fprintf(&b, "| %s | %s | %.0f MB | %.0f MB |\n", name, kib(float64(m.RSS)), m.LiveMB, m.StackMB)
	}
	row("1 backend, 1 session", r.mem1)
	row(fmt.Sprintf("1 backend, 1 + %d idle legacy sessions", cfg.Sessions), r.memS)
	row(fmt.Sprintf("… and their %d GET streams open", cfg.Sessions), r.memSG)
	row(fmt.Sprintf("… and %d idle legacy sessions more", cfg.More), r.memSM)
	row(fmt.Sprintf("%d backends, 1 session", cfg.Backends), r.memB)
	row(fmt.Sprintf("%d backends, 1 + %d legacy sessions with their GET streams open", cfg.Backends, cfg.Sessions), r.memBS)
	per := func(a, z memory, n int) (rss, heap string) {
		return kib(float64(z.RSS-a.RSS) / float64(n)), kib((z.LiveMB + z.StackMB - a.LiveMB - a.StackMB) * (1 << 20) / float64(n))
	}
	s1R, s1H := per(r.mem1, r.memS, cfg.Sessions)
	smR, smH := per(r.memSG, r.memSM, cfg.More)
	gR, gH := per(r.memS, r.memSG, cfg.Sessions)
	bR, bH := per(r.mem1, r.memB, cfg.Backends-1)
	fmt.Fprintf(&b, "\n- Per idle legacy session (initialize and notifications/initialized, no GET stream): %s RSS, %s heap and stacks over the first %d; **%s RSS, %s heap and stacks** over the %d more (a finer figure: the heap is read in whole MB).\n", s1R, s1H, cfg.Sessions, smR, smH, cfg.More)
	fmt.Fprintf(&b, "- Per open GET stream of a legacy session (what a host such as Snodo's client holds while it is connected): **%s RSS, %s heap and stacks**.\n", gR, gH)
	fmt.Fprintf(&b, "- Per backend server (the gateway's own growth from 1 to %d backends): **%s RSS, %s heap and stacks**; each lean server child is %s RSS besides.\n", cfg.Backends, bR, bH, kib(float64(r.childrenB)/float64(cfg.Backends)))
	fmt.Fprintf(&b, "- %d backends were ready (/readyz 200) %.1f s after the gateway started. With the %d sessions and their GET streams open, a call through each of the %d backends from another session: %d of %d answered.\n",
		cfg.Backends, r.readyB.Seconds(), cfg.Sessions, cfg.Backends, r.callsB, cfg.Backends)
	return b.String()
}

func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
				mem = fmt.Sprintf(", %.0f GiB RAM", kb/(1<<20))
			}
		}
	}
	return fmt.Sprintf("%s, %d CPUs%s, %s/%s (shared machine: other work ran at the same time)", cpu, runtime.NumCPU(), mem, runtime.GOOS, runtime.GOARCH)
}

func commit(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += " (with uncommitted changes)"
	}
	return c
}
