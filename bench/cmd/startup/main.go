// Command startup times snodo-run from exec to its first request written
// to the server: it runs `snodo-run [--handler MODULE]...
// [--interceptor MODULE]... tools list -- startup`, itself as the server, which notes the time at which the first
// byte of a request reaches its stdin and exits. It prints the median,
// minimum and maximum over --runs runs, with the Wasm compilation cache
// warm (one directory, filled by a run not counted) and cold (a new empty
// directory each run).
//
//	go build -o bin/ ./cmd/startup
//	bin/startup --snodo-run ../bin/snodo-run --runs 21 \
//	    --handler ../examples/handlers/go/elicit-policy/elicit-policy.wasm \
//	    --handler ../examples/handlers/go/sampling-echo/sampling-echo.wasm \
//	    --interceptor ../examples/handlers/go/confine-paths/confine-paths.wasm
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

const markEnv = "SNODO_STARTUP_MARK"

type handlers []string

func (h *handlers) String() string     { return strings.Join(*h, ",") }
func (h *handlers) Set(v string) error { *h = append(*h, v); return nil }

func main() {
	if mark := os.Getenv(markEnv); mark != "" {
		serve(mark)
		return
	}
	snodoRun := flag.String("snodo-run", "snodo-run", "the snodo-run binary to time")
	runs := flag.Int("runs", 21, "counted runs of each case")
	var hs, is handlers
	flag.Var(&hs, "handler", "a handler module to load (repeatable)")
	flag.Var(&is, "interceptor", "an interceptor module to load (repeatable)")
	flag.Parse()
	if *runs < 1 {
		fail(fmt.Errorf("--runs must be at least 1, not %d", *runs))
	}
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	tmp, err := os.MkdirTemp("", "snodo-startup-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(tmp)
	var args []string
	for _, h := range hs {
		args = append(args, "--handler", h)
	}
	for _, i := range is {
		args = append(args, "--interceptor", i)
	}
	warm := filepath.Join(tmp, "warm")
	once := func(cache string) time.Duration {
		d, err := run(*snodoRun, args, self, cache, filepath.Join(tmp, "mark"))
		if err != nil {
			fail(err)
		}
		return d
	}
	once(warm) // fills the warm cache
	var warmRuns, coldRuns []time.Duration
	for i := range *runs {
		warmRuns = append(warmRuns, once(warm))
		coldRuns = append(coldRuns, once(filepath.Join(tmp, "cold"+strconv.Itoa(i))))
	}
	fmt.Printf("exec to first request, %d handler and %d interceptor modules, %d runs each: median (min-max)\n", len(hs), len(is), *runs)
	for _, c := range []struct {
		name string
		ds   []time.Duration
	}{{"warm cache", warmRuns}, {"cold cache", coldRuns}} {
		slices.Sort(c.ds)
		fmt.Printf("%-10s %7.1f ms (%.1f-%.1f)\n", c.name, ms(c.ds[len(c.ds)/2]), ms(c.ds[0]), ms(c.ds[len(c.ds)-1]))
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// run runs snodo-run once and returns the time from its start to the
// server's first byte of input.
func run(snodoRun string, args []string, self, cache, mark string) (time.Duration, error) {
	os.Remove(mark)
	a := append([]string{"--cache-dir", cache}, args...)
	a = append(a, "tools", "list", "--", self)
	cmd := exec.Command(snodoRun, a...)
	cmd.Env = append(os.Environ(), markEnv+"="+mark)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	cmd.Run() // the server exits at the first request: snodo-run fails
	b, err := os.ReadFile(mark)
	if err != nil {
		return 0, fmt.Errorf("snodo-run sent no request: %v\n%s", err, out.String())
	}
	at, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("mark %q: %v", b, err)
	}
	return time.Unix(0, at).Sub(start), nil
}

// serve is the server: it waits for the first byte on stdin, writes the
// time to mark, and exits.
func serve(mark string) {
	if _, err := bufio.NewReader(os.Stdin).ReadByte(); err != nil {
		os.Exit(1)
	}
	now := time.Now().UnixNano()
	if err := os.WriteFile(mark, []byte(strconv.FormatInt(now, 10)), 0o600); err != nil {
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "startup:", err)
	os.Exit(1)
}
