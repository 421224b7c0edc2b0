package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/snodo/snodo/bench/internal/driver"
	"github.com/snodo/snodo/bench/internal/harness"
)

type reportInfo struct {
	pin       *harness.Pinning
	rounds    int
	scale     float64
	elapsed   time.Duration
	snodo     bool
	snodoErr  error
	failures  []string
	versions  []string
	machine   string
	rawResult string
}

// figure is one row of the report: a number taken from one case's results.
type figure struct {
	label  string
	caseID string
	value  func(driver.Result) float64
	higher bool // higher is better
	digits int
}

func median(r driver.Result) float64 { return r.MedianUS }
func p99(r driver.Result) float64    { return r.P99US }
func calls(r driver.Result) float64  { return r.CallsPerS }
func mbps(r driver.Result) float64   { return r.MBPerS }
func cpu(r driver.Result) float64    { return r.CPUPerCallUS }
func cpuMS(r driver.Result) float64  { return r.CPUPerCallUS / 1000 }
func rss(r driver.Result) float64    { return r.PeakRSSMiB }
func wall(r driver.Result) float64   { return r.WallMS }
func conns(r driver.Result) float64  { return float64(r.ConnsOpened) }
func progress(r driver.Result) float64 {
	return 100 * float64(r.Progress) / float64(max(r.ProgressWant, 1))
}

// httpFigures are the rows of the Streamable HTTP table.
func httpFigures() []figure {
	const (
		hl = harness.HTTP + "/" + harness.Lean + "/legacy/"
		hm = harness.HTTP + "/" + harness.Lean + "/modern/"
	)
	return []figure{
		{"sequential echo tools/call, median µs", hl + "seq", median, false, 1},
		{"sequential echo tools/call, p99 µs", hl + "seq", p99, false, 0},
		{"64 concurrent callers, calls/s", hl + "conc", calls, true, 0},
		{"8 MiB tool result, MB/s", hl + "blob", mbps, true, 0},
		{"elicitation round trip (SSE stream, answer POSTed), median µs", hl + "elicit", median, false, 0},
		{"client CPU per call, sequential, µs", hl + "seq", cpu, false, 1},
		{"client CPU per call, 64 concurrent, µs", hl + "conc", cpu, false, 1},
		{"client CPU per elicitation round trip, µs", hl + "elicit", cpu, false, 0},
		{"client CPU per 8 MiB result, ms", hl + "blob", cpuMS, false, 1},
		{"client peak RSS, sequential echo, MiB", hl + "seq", rss, false, 0},
		{"client peak RSS, 64 concurrent, MiB", hl + "conc", rss, false, 0},
		{"client peak RSS, 8 MiB results, MiB", hl + "blob", rss, false, 0},
		{"TCP connections opened, sequential (1 caller)", hl + "seq", conns, false, 0},
		{"TCP connections opened, 64 concurrent callers", hl + "conc", conns, false, 0},
		{"modern era: sequential echo, median µs", hm + "seq", median, false, 1},
		{"modern era: 64 concurrent callers, calls/s", hm + "conc", calls, true, 0},
		{"modern era: client CPU per call, sequential, µs", hm + "seq", cpu, false, 1},
		{"modern era: client CPU per call, 64 concurrent, µs", hm + "conc", cpu, false, 1},
		{"modern era: elicitation (MRTR retry), median µs", hm + "elicit", median, false, 0},
		{"modern era: TCP connections opened, 64 concurrent callers", hm + "conc", conns, false, 0},
	}
}

// figures are the rows of the stdio table.
func figures() []figure {
	const (
		ll = harness.Lean + "/legacy/"
		lm = harness.Lean + "/modern/"
		sl = harness.SDK + "/legacy/"
		sm = harness.SDK + "/modern/"
	)
	return []figure{
		{"sequential echo tools/call, median µs", ll + "seq", median, false, 1},
		{"sequential echo tools/call, p99 µs", ll + "seq", p99, false, 0},
		{"64 concurrent callers, calls/s", ll + "conc", calls, true, 0},
		{"8 MiB tool result, MB/s", ll + "blob", mbps, true, 0},
		{"elicitation round trip (native handler), median µs", ll + "elicit", median, false, 0},
		{"elicitation round trip (native handler), p99 µs", ll + "elicit", p99, false, 0},
		{"client CPU per call, sequential, µs", ll + "seq", cpu, false, 1},
		{"client CPU per call, 64 concurrent, µs", ll + "conc", cpu, false, 1},
		{"client CPU per elicitation round trip, µs", ll + "elicit", cpu, false, 0},
		{"client CPU per 8 MiB result, ms", ll + "blob", cpuMS, false, 1},
		{"client peak RSS, sequential echo, MiB", ll + "seq", rss, false, 0},
		{"client peak RSS, 8 MiB results, MiB", ll + "blob", rss, false, 0},
		{"64 parallel 200 ms calls, wall ms (200 = no serialisation)", ll + "slow", wall, false, 0},
		{"progress notifications delivered, %", ll + "slow", progress, true, 0},
		{"client CPU per slow call with 4 progress notifications, µs", ll + "slow", cpu, false, 0},
		{"modern era: sequential echo, median µs", lm + "seq", median, false, 1},
		{"modern era: 64 concurrent callers, calls/s", lm + "conc", calls, true, 0},
		{"modern era: client CPU per call, sequential, µs", lm + "seq", cpu, false, 1},
		{"modern era: elicitation (MRTR retry), median µs", lm + "elicit", median, false, 0},
		{"modern era: 64 parallel 200 ms calls, wall ms", lm + "slow", wall, false, 0},
		{"modern era: progress delivered, %", lm + "slow", progress, true, 0},
		{"go-sdk server: sequential echo, median µs", sl + "seq", median, false, 0},
		{"go-sdk server: 64 concurrent callers, calls/s", sl + "conc", calls, true, 0},
		{"go-sdk server: elicitation round trip, median µs", sl + "elicit", median, false, 0},
		{"go-sdk server, modern era: 64 concurrent callers, calls/s", sm + "conc", calls, true, 0},
	}
}

type stat struct {
	ok            bool
	med, min, max float64
}

func summarise(rs []driver.Result, value func(driver.Result) float64) stat {
	var vs []float64
	for _, r := range rs {
		if r.Error == "" {
			vs = append(vs, value(r))
		}
	}
	if len(vs) == 0 {
		return stat{}
	}
	slices.Sort(vs)
	med := vs[len(vs)/2]
	if len(vs)%2 == 0 {
		med = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	return stat{ok: true, med: med, min: vs[0], max: vs[len(vs)-1]}
}

func format(v float64, digits int) string {
	if math.Abs(v) >= 1000 {
		digits = 0
	}
	s := fmt.Sprintf("%.*f", digits, v)
	// Thousands separators for the integer part.
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	out := b.String()
	if frac != "" {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}

func ratio(v, ref float64) string {
	if ref == 0 {
		return "—"
	}
	r := v / ref
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f×", r)
	case r >= 10:
		return fmt.Sprintf("%.1f×", r)
	default:
		return fmt.Sprintf("%.2f×", r)
	}
}

func render(results map[string]map[string][]driver.Result, clients []string, info reportInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Medians of %d interleaved rounds (min–max in brackets); lean server unless the row says otherwise; legacy era (2025-11-25) unless it says modern (2026-07-28). A dash: the client does not run that case (the floor has no MCP, so no elicitation; the TypeScript SDK 1.32.2 does not speak the modern era); \"fail\": every round failed.\n\n", info.rounds)
	b.WriteString("**Over stdio** (the server a child process; the floor a line echoer over the same pipes):\n\n")
	table(&b, results, clients, figures())
	b.WriteString("\n**Over Streamable HTTP** (the lean server with `--http` on 127.0.0.1: JSON replies, an SSE stream only for the legacy elicitation; each client with its library's default HTTP client; the floor POSTs the same bodies with net/http alone and one idle connection per caller; connections are those the server accepted over the whole run):\n\n")
	table(&b, results, clients, httpFigures())

	for _, era := range []string{"legacy", "modern"} {
		key := harness.Lean + "/" + era + "/elicit"
		native := summarise(results[key][harness.Snodo], median)
		if !native.ok {
			continue
		}
		var parts []string
		for _, w := range []string{harness.SnodoWasmGo, harness.SnodoWasmWAT} {
			if st := summarise(results[key][w], median); st.ok {
				parts = append(parts, fmt.Sprintf("%s %s", w, ratio(st.med, native.med)))
			}
		}
		if len(parts) > 0 {
			fmt.Fprintf(&b, "\nElicitation answered by a Wasm handler ÷ by Snodo's native handler, median round trip, %s era: %s.\n", era, strings.Join(parts, ", "))
		}
	}

	if lines := targets(results); len(lines) > 0 {
		b.WriteString("\nSnodo against the targets (medians of this run; the best peer per row as above):\n\n")
		for _, l := range lines {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}

	fmt.Fprintf(&b, "\n- Machine: %s, shared with other builds and tests while measuring: figures are noisy; compare clients only within one run.\n", info.machine)
	fmt.Fprintf(&b, "- Versions: %s.\n", strings.Join(info.versions, ", "))
	if info.pin != nil {
		fmt.Fprintf(&b, "- Command: `make bench-compare PIN=1` (= `make -C bench compare PIN=1`: `npm ci`, then `go run ./cmd/compare --rounds %d --pin`; servers on CPU %s, clients on CPU %s, with taskset)", info.rounds, info.pin.Server, info.pin.Client)
	} else {
		fmt.Fprintf(&b, "- Command: `make bench-compare` (= `make -C bench compare`: `npm ci`, then `go run ./cmd/compare --rounds %d`)", info.rounds)
	}
	if info.elapsed > 0 {
		fmt.Fprintf(&b, "; %d rounds took %s", info.rounds, info.elapsed.Round(time.Second))
	}
	b.WriteString(".\n")
	if info.scale != 1 {
		fmt.Fprintf(&b, "- Calls per case scaled by %g.\n", info.scale)
	}
	if !info.snodo {
		fmt.Fprintf(&b, "- Snodo's client was not measured: %s.\n", firstLine(info.snodoErr))
	}
	if len(info.failures) > 0 {
		fmt.Fprintf(&b, "- Failed runs (%d):\n", len(info.failures))
		for _, f := range info.failures {
			fmt.Fprintf(&b, "  - %s\n", firstLine(f))
		}
	}
	fmt.Fprintf(&b, "- Raw results, one JSON line per run: `%s`.\n", info.rawResult)
	return b.String()
}

// table writes the values of figs for clients, then their ratios.
// Clients that ran none of figs' cases get no column.
func table(b *strings.Builder, results map[string]map[string][]driver.Result, all []string, figs []figure) {
	var clients []string
	for _, c := range all {
		if slices.ContainsFunc(figs, func(f figure) bool { _, ran := results[f.caseID][c]; return ran }) {
			clients = append(clients, c)
		}
	}
	header := func() {
		b.WriteString("| figure |")
		for _, c := range clients {
			fmt.Fprintf(b, " %s |", c)
		}
		b.WriteString("\n|---|")
		for range clients {
			b.WriteString("--:|")
		}
		b.WriteString("\n")
	}
	header()
	for _, f := range figs {
		fmt.Fprintf(b, "| %s |", f.label)
		for _, c := range clients {
			rs, ran := results[f.caseID][c]
			st := summarise(rs, f.value)
			switch {
			case !ran:
				b.WriteString(" — |")
			case !st.ok:
				b.WriteString(" fail |")
			case st.min == st.max:
				fmt.Fprintf(b, " %s |", format(st.med, f.digits))
			default:
				fmt.Fprintf(b, " %s (%s–%s) |", format(st.med, f.digits), format(st.min, f.digits), format(st.max, f.digits))
			}
		}
		b.WriteString("\n")
	}

	b.WriteString("\nRatios of the medians: each client's figure ÷ the floor's, then ÷ the best peer's (best of go-sdk, mcp-go and ts-sdk on that row: lowest for times, CPU, memory and connections, highest for throughput). Below 1× is less, above 1× is more, whichever way is better for the row.\n\n")
	header()
	for _, f := range figs {
		floor := summarise(results[f.caseID][harness.Floor], f.value)
		best, haveBest := bestPeer(results, f.caseID, f.value, f.higher)
		fmt.Fprintf(b, "| %s |", f.label)
		for _, c := range clients {
			st := summarise(results[f.caseID][c], f.value)
			if !st.ok || c == harness.Floor {
				b.WriteString(" — |")
				continue
			}
			var parts []string
			if floor.ok {
				parts = append(parts, ratio(st.med, floor.med)+" floor")
			}
			if haveBest {
				parts = append(parts, ratio(st.med, best)+" best")
			}
			fmt.Fprintf(b, " %s |", strings.Join(parts, ", "))
		}
		b.WriteString("\n")
	}
}

func firstLine(v any) string {
	s := fmt.Sprint(v)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// bestPeer is the best peer median for a case and value.
func bestPeer(results map[string]map[string][]driver.Result, caseID string, value func(driver.Result) float64, higher bool) (float64, bool) {
	best, ok := 0.0, false
	for _, peer := range harness.Peers {
		st := summarise(results[caseID][peer], value)
		if !st.ok {
			continue
		}
		if !ok || (higher && st.med > best) || (!higher && st.med < best) {
			best, ok = st.med, true
		}
	}
	return best, ok
}

// targets checks Snodo's medians against the performance targets, each a
// ratio to the best peer (or to Snodo's native handler).
func targets(results map[string]map[string][]driver.Result) []string {
	const (
		ll = harness.Lean + "/legacy/"
		hl = harness.HTTP + "/" + harness.Lean + "/legacy/"
		hm = harness.HTTP + "/" + harness.Lean + "/modern/"
	)
	type target struct {
		label  string
		caseID string
		value  func(driver.Result) float64
		higher bool    // higher is better
		limit  float64 // Snodo ÷ reference must be at most (or, if higher, at least) this
		ref    string  // "" for the best peer, absolute for the limit itself, else a client name
		strict bool    // below the limit, not equal to it
		client string  // the Snodo client measured; "" for the native one
	}
	const absolute = "="
	callers := float64(driver.Callers)
	ts := []target{
		{"stdio: sequential echo median at most 0.33× the best peer's", ll + "seq", median, false, 0.33, "", false, ""},
		{"stdio: sequential echo median at most 1.5× the floor's", ll + "seq", median, false, 1.5, harness.Floor, false, ""},
		{"stdio: 64-caller throughput at least 3× the best peer's", ll + "conc", calls, true, 3, "", false, ""},
		{"stdio: client CPU per call, sequential, at most 0.33× the best peer's", ll + "seq", cpu, false, 0.33, "", false, ""},
		{"stdio: client CPU per call, 64 concurrent, at most 1/3 of the best peer's", ll + "conc", cpu, false, 1.0 / 3, "", false, ""},
		{"stdio: client CPU per 8 MiB result at most 1/5 of the best peer's", ll + "blob", cpuMS, false, 1.0 / 5, "", false, ""},
		{"stdio: elicitation round trip (native handler) at most 1/2 of the best peer's median", ll + "elicit", median, false, 0.5, "", false, ""},
		{"stdio: elicitation answered by the Go Wasm module within 1.5× of native", ll + "elicit", median, false, 1.5, harness.Snodo, false, harness.SnodoWasmGo},
		{"stdio: elicitation answered by the WAT Wasm module within 1.5× of native", ll + "elicit", median, false, 1.5, harness.Snodo, false, harness.SnodoWasmWAT},
		{"stdio: peak RSS (sequential echo) below every peer's", ll + "seq", rss, false, 1, "", true, ""},
		{"stdio: peak RSS (8 MiB results) below every peer's", ll + "blob", rss, false, 1, "", true, ""},
		{"HTTP: sequential echo median at most 1.3× the floor's", hl + "seq", median, false, 1.3, harness.Floor, false, ""},
		{"HTTP: sequential echo median at most 0.7× the best peer's", hl + "seq", median, false, 0.7, "", false, ""},
		{"HTTP: 64-caller throughput at least 2× the best peer's", hl + "conc", calls, true, 2, "", false, ""},
		{"HTTP: 64-caller throughput at least 0.7× the floor's", hl + "conc", calls, true, 0.7, harness.Floor, false, ""},
		{"HTTP: client CPU per call, sequential, at most 0.5× the best peer's", hl + "seq", cpu, false, 0.5, "", false, ""},
		{"HTTP: client CPU per call, 64 concurrent, at most 0.5× the best peer's", hl + "conc", cpu, false, 0.5, "", false, ""},
		{"HTTP: connections opened by 1 sequential caller at most 1", hl + "seq", conns, false, 1, absolute, false, ""},
		{"HTTP: connections opened by 64 callers at most 64", hl + "conc", conns, false, callers, absolute, false, ""},
		{"HTTP, modern era: sequential echo median at most 0.7× the best peer's", hm + "seq", median, false, 0.7, "", false, ""},
		{"HTTP, modern era: 64-caller throughput at least 2× the best peer's", hm + "conc", calls, true, 2, "", false, ""},
		{"HTTP, modern era: client CPU per call, sequential, at most 0.5× the best peer's", hm + "seq", cpu, false, 0.5, "", false, ""},
		{"HTTP, modern era: client CPU per call, 64 concurrent, at most 0.5× the best peer's", hm + "conc", cpu, false, 0.5, "", false, ""},
		{"HTTP, modern era: connections opened by 64 callers at most 64", hm + "conc", conns, false, callers, absolute, false, ""},
	}
	var lines []string
	for _, t := range ts {
		client := harness.Snodo
		if t.client != "" {
			client = t.client
		}
		mine := summarise(results[t.caseID][client], t.value)
		if !mine.ok {
			continue
		}
		var ref float64
		var ok bool
		if t.ref == absolute {
			// The limit is the figure itself.
			verdict := "met"
			if mine.med > t.limit {
				verdict = fmt.Sprintf("missed (%s > %s)", format(mine.med, 0), format(t.limit, 0))
			}
			lines = append(lines, fmt.Sprintf("%s: %s: **%s**", t.label, format(mine.med, 0), verdict))
			continue
		}
		if t.ref == "" {
			ref, ok = bestPeer(results, t.caseID, t.value, t.higher)
		} else {
			st := summarise(results[t.caseID][t.ref], t.value)
			ref, ok = st.med, st.ok
		}
		if !ok || ref == 0 {
			continue
		}
		r := mine.med / ref
		met := r <= t.limit
		if t.strict {
			met = r < t.limit
		}
		if t.higher {
			met = r >= t.limit
		}
		verdict := "met"
		if !met {
			switch {
			case t.strict && r == t.limit:
				verdict = "missed: equal"
			case t.higher:
				verdict = "missed by " + factor(t.limit/r)
			default:
				verdict = "missed by " + factor(r/t.limit)
			}
		}
		lines = append(lines, fmt.Sprintf("%s: %s (%s vs %s): **%s**", t.label, ratio(mine.med, ref), format(mine.med, 1), format(ref, 1), verdict))
	}
	return lines
}

// factor formats how far a figure misses its limit, with a third digit when
// two would round it to 1.00×.
func factor(f float64) string {
	if f < 1.005 {
		return fmt.Sprintf("%.3f×", f)
	}
	return fmt.Sprintf("%.2f×", f)
}
