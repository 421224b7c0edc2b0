// Package driver runs the benchmark scenarios against one MCP client library
// and prints one JSON line of results, so that every client (each Go library,
// the floor, and the node script, which mirrors this file) is measured alike.
//
// A client executable is invoked as
//
//	client --server 'CMD ARGS…' --scenario seq|conc|blob|elicit|slow --n N [--era legacy|modern] [--transport stdio|http]
//
// With --transport http the driver starts the server itself, with --http
// added to its command line (cmd/leanserver): the server prints its
// endpoint's URL as its first line, which the client connects to
// (Config.URL), and when its standard input is closed after the run, the
// number of TCP connections it accepted, which the result reports.
//
// Scenarios:
//   - seq: N sequential echo calls after a warm-up; median and p99 latency.
//   - conc: 64 callers share N echo calls; calls per second.
//   - blob: N sequential calls returning --size bytes each; MB/s (10^6 bytes).
//   - elicit: N sequential ask calls, each answered by a native elicitation
//     handler in the client; median and p99 round trip.
//   - slow: N calls at once, each lasting --slow-ms with --steps progress
//     notifications; the wall time shows whether calls were serialised, and
//     the progress count whether every notification was delivered.
//
// Every reply is checked; a wrong reply ends the run with an error.
package driver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Conn is one connected client session.
type Conn interface {
	// Echo calls the echo tool and returns the text it answered.
	Echo(ctx context.Context, text string) (string, error)
	// Blob calls the blob tool and returns the text it answered.
	Blob(ctx context.Context, n int) (string, error)
	// Ask calls the ask tool; the client's elicitation handler answers the
	// elicitation's message as the answer field. It returns the result text.
	Ask(ctx context.Context, q string) (string, error)
	// Slow calls the slow tool with a progress token, calling progress for
	// each progress notification received for this call.
	Slow(ctx context.Context, ms, steps int, progress func()) (string, error)
	Close() error
}

// ExpectedAnswerer is implemented by a Conn whose elicitation handler does
// not answer with the message itself (a Wasm module answering from its
// configuration): ExpectedAnswer is what it answers to q.
type ExpectedAnswerer interface {
	ExpectedAnswer(q string) string
}

// Config is what a client executable is asked to do.
type Config struct {
	Server   []string // the server's command line
	Scenario string
	N        int
	Era      string // legacy or modern
	Size     int    // bytes per blob
	SlowMS   int
	Steps    int
	// Transport is stdio or http. For http, URL is the server's endpoint
	// and Server the command line that serves it (started by Run).
	Transport string
	URL       string
	// CPUProfile, if set, is where a CPU profile of the scenario (after
	// connecting) is written.
	CPUProfile string
}

// Result is the JSON line a client prints.
type Result struct {
	Client       string  `json:"client"`
	Scenario     string  `json:"scenario"`
	Era          string  `json:"era"`
	Transport    string  `json:"transport,omitempty"`
	N            int     `json:"n"`
	OK           int     `json:"ok"`
	MedianUS     float64 `json:"median_us,omitempty"`
	P99US        float64 `json:"p99_us,omitempty"`
	CallsPerS    float64 `json:"calls_per_s,omitempty"`
	MBPerS       float64 `json:"mb_per_s,omitempty"`
	CPUPerCallUS float64 `json:"cpu_us_per_call"`
	WallMS       float64 `json:"wall_ms"`
	SlowMS       int     `json:"slow_ms,omitempty"`
	Progress     int     `json:"progress,omitempty"`
	ProgressWant int     `json:"progress_want,omitempty"`
	// ProgressAtReturn counts the notifications handled before the last
	// call returned.
	ProgressAtReturn int     `json:"progress_at_return,omitempty"`
	PeakRSSMiB       float64 `json:"peak_rss_mib"`
	// ConnsOpened is the number of TCP connections the HTTP server
	// accepted from the client over the whole run (connect and warm-up
	// included).
	ConnsOpened int    `json:"conns_opened,omitempty"`
	Error       string `json:"error,omitempty"`
}

// Main parses the command line, connects with connect, runs the scenario and
// prints the result. It exits non-zero if the run failed.
func Main(client string, connect func(ctx context.Context, cfg Config) (Conn, error)) {
	var cfg Config
	server := flag.String("server", "", "server command line (split on spaces)")
	flag.StringVar(&cfg.Scenario, "scenario", "seq", "seq, conc, blob, elicit or slow")
	flag.IntVar(&cfg.N, "n", 1000, "number of calls")
	flag.StringVar(&cfg.Era, "era", "legacy", "protocol era: legacy or modern")
	flag.IntVar(&cfg.Size, "size", 8<<20, "bytes per blob")
	flag.IntVar(&cfg.SlowMS, "slow-ms", 200, "duration of each slow call")
	flag.IntVar(&cfg.Steps, "steps", 4, "progress notifications per slow call")
	flag.StringVar(&cfg.Transport, "transport", "stdio", "stdio, or http: start the server with --http and connect to the URL it prints")
	flag.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the measured run to this file")
	flag.Parse()
	cfg.Server = strings.Fields(*server)
	if len(cfg.Server) == 0 {
		fmt.Fprintln(os.Stderr, client+": --server is required")
		os.Exit(2)
	}
	res := Run(client, cfg, connect)
	line, _ := json.Marshal(res)
	w := bufio.NewWriter(os.Stdout)
	w.Write(line)
	w.WriteByte('\n')
	w.Flush()
	if res.Error != "" {
		os.Exit(1)
	}
}

// Run connects, runs cfg.Scenario and measures it.
func Run(client string, cfg Config, connect func(ctx context.Context, cfg Config) (Conn, error)) (res Result) {
	res = Result{Client: client, Scenario: cfg.Scenario, Era: cfg.Era, N: cfg.N}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	switch cfg.Transport {
	case "", "stdio":
	case "http":
		res.Transport = "http"
		srv, err := StartHTTPServer(cfg.Server)
		if err != nil {
			res.Error = "server: " + err.Error()
			return res
		}
		cfg.URL = srv.URL
		defer func() {
			n, err := srv.Stop()
			res.ConnsOpened = n
			if err != nil && res.Error == "" {
				res.Error = "server: " + err.Error()
			}
		}()
	default:
		res.Error = fmt.Sprintf("--transport must be stdio or http, not %q", cfg.Transport)
		return res
	}
	conn, err := connect(ctx, cfg)
	if err != nil {
		res.Error = "connect: " + err.Error()
		return res
	}
	if cfg.CPUProfile != "" {
		f, perr := os.Create(cfg.CPUProfile)
		if perr == nil {
			perr = pprof.StartCPUProfile(f)
		}
		if perr != nil {
			res.Error = "cpuprofile: " + perr.Error()
			conn.Close()
			return res
		}
		defer f.Close()
	}
	err = runScenario(ctx, conn, cfg, &res)
	if cfg.CPUProfile != "" {
		pprof.StopCPUProfile()
	}
	if cerr := conn.Close(); err == nil && cerr != nil && !benignClose(cerr) {
		err = fmt.Errorf("close: %w", cerr)
	}
	if err != nil {
		res.Error = err.Error()
	}
	res.PeakRSSMiB = PeakRSSMiB()
	return res
}

func benignClose(err error) bool {
	s := err.Error()
	return strings.Contains(s, "signal: killed") || strings.Contains(s, "file already closed") || errors.Is(err, os.ErrClosed)
}

func runScenario(ctx context.Context, conn Conn, cfg Config, res *Result) error {
	switch cfg.Scenario {
	case "seq":
		return latency(ctx, cfg.N, res, func(i int) error { return echoOnce(ctx, conn, i) })
	case "elicit":
		expected, fixed := conn.(ExpectedAnswerer)
		return latency(ctx, cfg.N, res, func(i int) error {
			q := "q-" + strconv.Itoa(i)
			got, err := conn.Ask(ctx, q)
			if err != nil {
				return err
			}
			want := "answer:" + q
			if fixed {
				want = "answer:" + expected.ExpectedAnswer(q)
			}
			if got != want {
				return fmt.Errorf("ask %q answered %q", q, got)
			}
			return nil
		})
	case "conc":
		return concurrent(ctx, conn, cfg.N, res)
	case "blob":
		return blob(ctx, conn, cfg, res)
	case "slow":
		return slow(ctx, conn, cfg, res)
	}
	return fmt.Errorf("unknown scenario %q", cfg.Scenario)
}

func echoOnce(ctx context.Context, conn Conn, i int) error {
	want := "hello-" + strconv.Itoa(i)
	got, err := conn.Echo(ctx, want)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("echo %q answered %q", want, got)
	}
	return nil
}

// latency runs n calls one after another, after a warm-up of n/10 (at least
// 20), and records each call's duration.
func latency(ctx context.Context, n int, res *Result, call func(i int) error) error {
	for i := range max(n/10, 20) {
		if err := call(-1 - i); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	durations := make([]time.Duration, 0, n)
	cpu0 := CPUTime()
	start := time.Now()
	for i := range n {
		t := time.Now()
		if err := call(i); err != nil {
			return err
		}
		durations = append(durations, time.Since(t))
		res.OK++
	}
	wall := time.Since(start)
	cpu := CPUTime() - cpu0
	slices.Sort(durations)
	res.MedianUS = us(durations[len(durations)/2])
	res.P99US = us(durations[min(len(durations)-1, len(durations)*99/100)])
	res.WallMS = ms(wall)
	res.CallsPerS = float64(n) / wall.Seconds()
	res.CPUPerCallUS = us(cpu) / float64(n)
	return nil
}

// Callers is the number of concurrent callers in the conc scenario.
const Callers = 64

func concurrent(ctx context.Context, conn Conn, n int, res *Result) error {
	run := func(total int) error {
		var next atomic.Int64
		var wg sync.WaitGroup
		var once sync.Once
		var first error
		for range Callers {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= total {
						return
					}
					if err := echoOnce(ctx, conn, i); err != nil {
						once.Do(func() { first = err })
						next.Store(int64(total))
						return
					}
				}
			})
		}
		wg.Wait()
		return first
	}
	if err := run(max(n/10, Callers*4)); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	cpu0 := CPUTime()
	start := time.Now()
	if err := run(n); err != nil {
		return err
	}
	wall := time.Since(start)
	cpu := CPUTime() - cpu0
	res.OK = n
	res.WallMS = ms(wall)
	res.CallsPerS = float64(n) / wall.Seconds()
	res.CPUPerCallUS = us(cpu) / float64(n)
	return nil
}

func blob(ctx context.Context, conn Conn, cfg Config, res *Result) error {
	check := func() error {
		got, err := conn.Blob(ctx, cfg.Size)
		if err != nil {
			return err
		}
		if len(got) != cfg.Size || got[0] != 'x' || got[len(got)/2] != 'x' || got[len(got)-1] != 'x' {
			return fmt.Errorf("blob of %d bytes answered %d bytes", cfg.Size, len(got))
		}
		return nil
	}
	if err := check(); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	cpu0 := CPUTime()
	start := time.Now()
	for range cfg.N {
		if err := check(); err != nil {
			return err
		}
		res.OK++
	}
	wall := time.Since(start)
	cpu := CPUTime() - cpu0
	res.WallMS = ms(wall)
	res.MBPerS = float64(cfg.N) * float64(cfg.Size) / 1e6 / wall.Seconds()
	res.CPUPerCallUS = us(cpu) / float64(cfg.N)
	return nil
}

func slow(ctx context.Context, conn Conn, cfg Config, res *Result) error {
	// A warm-up call, with progress, so that first-use costs (codec
	// compilation, pools) are not charged to the measured calls.
	if got, err := conn.Slow(ctx, 1, 1, func() {}); err != nil || got != "done" {
		return fmt.Errorf("warm-up: slow answered %q, %v", got, err)
	}
	var progress atomic.Int64
	var ok atomic.Int64
	errs := make(chan error, cfg.N)
	cpu0 := CPUTime()
	start := time.Now()
	var wg sync.WaitGroup
	for range cfg.N {
		wg.Go(func() {
			got, err := conn.Slow(ctx, cfg.SlowMS, cfg.Steps, func() { progress.Add(1) })
			if err == nil && got != "done" {
				err = fmt.Errorf("slow answered %q", got)
			}
			if err != nil {
				errs <- err
				return
			}
			ok.Add(1)
		})
	}
	wg.Wait()
	wall := time.Since(start)
	res.ProgressAtReturn = int(progress.Load())
	// Notifications handled after their call returned still count as
	// delivered; wait a little for them.
	for deadline := time.Now().Add(time.Second); progress.Load() < int64(cfg.N*cfg.Steps) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	cpu := CPUTime() - cpu0
	res.OK = int(ok.Load())
	res.WallMS = ms(wall)
	res.SlowMS = cfg.SlowMS
	res.Progress = int(progress.Load())
	res.ProgressWant = cfg.N * cfg.Steps
	res.CPUPerCallUS = us(cpu) / float64(cfg.N)
	select {
	case err := <-errs:
		return err
	default:
	}
	// A shortfall in progress notifications is a measured figure (progress
	// against progress_want), not a failed run: some clients drop a
	// notification that arrives together with its call's result.
	return nil
}

// CPUTime is the user+system CPU time this process has used (all threads,
// not its children).
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PeakRSSMiB is this process's own peak resident set (VmHWM), in MiB.
func PeakRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// HTTPServer is a Streamable HTTP server started by StartHTTPServer.
type HTTPServer struct {
	URL    string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
}

// StartHTTPServer starts argv with --http added and reads the endpoint's URL
// from the first line it prints.
func StartHTTPServer(argv []string) (*HTTPServer, error) {
	cmd := exec.Command(argv[0], append(argv[1:len(argv):len(argv)], "--http")...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &HTTPServer{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(out)}
	line, err := s.stdout.ReadString('\n')
	url := strings.TrimSpace(line)
	if err != nil || !strings.HasPrefix(url, "http://") {
		s.Stop()
		return nil, fmt.Errorf("%s --http printed %q, not its URL (%v)", argv[0], line, err)
	}
	s.URL = url
	return s, nil
}

// Stop closes the server's standard input, reads the count of connections
// it accepted ("conns N") and waits for it to exit.
func (s *HTTPServer) Stop() (conns int, err error) {
	s.stdin.Close()
	line, rerr := s.stdout.ReadString('\n')
	io.Copy(io.Discard, s.stdout)
	werr := s.cmd.Wait()
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "conns ")
	n, cerr := strconv.Atoi(rest)
	switch {
	case werr != nil:
		return 0, werr
	case rerr != nil || !ok || cerr != nil:
		return 0, fmt.Errorf("server printed %q at exit, not \"conns N\"", line)
	}
	return n, nil
}

// ErrUnsupported is returned by a Conn for a scenario it cannot run.
var ErrUnsupported = errors.New("scenario not supported by this client")
