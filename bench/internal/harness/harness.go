// Package harness knows the benchmark's clients, servers and cases: how to
// build them, how to run one client against one server for one scenario, and
// how to read the JSON line it prints. cmd/compare runs the full comparison
// with it; the module's test runs every client once with it.
package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/snodo/snodo/bench/internal/driver"
)

// Client names, in the order tables show them.
const (
	Floor = "floor"
	GoSDK = "go-sdk"
	MCPGo = "mcp-go"
	TSSDK = "ts-sdk"
	Snodo = "snodo"
	// Snodo with the elicitation answered by a Wasm handler module.
	SnodoWasmGo  = "snodo wasm-go"
	SnodoWasmWAT = "snodo wasm-wat"
)

// Peers are the clients Snodo is compared with.
var Peers = []string{GoSDK, MCPGo, TSSDK}

// Client is one benchmark client executable.
type Client struct {
	Name   string
	Argv   []string // command line before the driver flags
	Modern bool     // speaks the 2026-07-28 era
	// ElicitOnly limits the client to the lean server's elicit cases (the
	// Wasm handler variants, which differ from their client only there).
	ElicitOnly bool
}

// Paths locates the module's directories.
type Paths struct {
	Root string // the bench module's directory
	Bin  string // where the Go executables are built
	// Pin, when set, runs every server on one CPU and every client on
	// another (taskset from util-linux), so that the two do not compete
	// for a core with each other and the scheduler moves neither.
	Pin *Pinning
}

// Pinning is the CPUs servers and clients run on, as taskset -c takes them.
type Pinning struct {
	Server, Client string
}

// NewPinning pins servers to the first CPU this process may use and
// clients to the second; it fails when taskset is missing or fewer than
// two CPUs are available.
func NewPinning() (*Pinning, error) {
	if _, err := exec.LookPath("taskset"); err != nil {
		return nil, fmt.Errorf("PIN needs taskset (Debian package util-linux): %v", err)
	}
	cpus, err := allowedCPUs()
	if err != nil {
		return nil, err
	}
	if len(cpus) < 2 {
		return nil, fmt.Errorf("PIN needs two CPUs, this process may use %d", len(cpus))
	}
	return &Pinning{Server: strconv.Itoa(cpus[0]), Client: strconv.Itoa(cpus[1])}, nil
}

// parseCPUList parses a Linux CPU list ("0-1", "0,2-3").
func parseCPUList(list string) ([]int, error) {
	var cpus []int
	for part := range strings.SplitSeq(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		z := a
		var err2 error
		if isRange {
			z, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || z < a {
			return nil, fmt.Errorf("PIN: cannot read the CPU list %q", list)
		}
		for c := a; c <= z; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// allowedCPUs lists the CPUs of this process's affinity mask, from
// /proc/self/status (Cpus_allowed_list, e.g. "0-1" or "0,2-3").
func allowedCPUs() ([]int, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, fmt.Errorf("PIN: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		list, ok := strings.CutPrefix(line, "Cpus_allowed_list:")
		if !ok {
			continue
		}
		return parseCPUList(strings.TrimSpace(list))
	}
	return nil, fmt.Errorf("PIN: no Cpus_allowed_list in /proc/self/status")
}

// FindRoot returns the bench module's directory, searching upwards from the
// working directory for a go.mod naming it.
func FindRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/snodo/snodo/bench\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("not inside the bench module (github.com/snodo/snodo/bench)")
		}
		dir = parent
	}
}

// GoPrograms are the module's executables: servers, then clients.
var GoPrograms = []string{"./cmd/leanserver", "./cmd/sdkserver", "./cmd/floorchild",
	"./clients/floor", "./clients/gosdk", "./clients/mcpgo"}

// SnodoProgram is the Snodo client; it is built when it compiles, twice:
// without the Wasm host (-tags nowasm, p.Snodo) for the native cases, as a
// program that uses no Wasm handler links Snodo, and with it (p.SnodoWasm)
// for the Wasm handler cases.
const SnodoProgram = "./clients/snodo"

// Build compiles the Go executables into p.Bin. It reports whether the Snodo
// client was built too (it is left out if it does not compile yet), with the
// compiler's complaint if not. With Snodo it also builds the Go Wasm handler
// module (wasm/answer) into p.Bin/answer.wasm.
func Build(ctx context.Context, p Paths) (snodo bool, snodoErr error, err error) {
	if err := os.MkdirAll(p.Bin, 0o755); err != nil {
		return false, nil, err
	}
	args := append([]string{"build", "-o", p.Bin + string(os.PathSeparator)}, GoPrograms...)
	if err := goCmd(ctx, p, nil, args...); err != nil {
		return false, nil, err
	}
	if _, err := os.Stat(filepath.Join(p.Root, SnodoProgram)); err != nil {
		return false, fmt.Errorf("%s does not exist", SnodoProgram), nil
	}
	if err := goCmd(ctx, p, nil, "build", "-tags", "nowasm", "-o", p.Snodo(), SnodoProgram); err != nil {
		return false, err, nil
	}
	if err := goCmd(ctx, p, nil, "build", "-o", p.SnodoWasm(), SnodoProgram); err != nil {
		return false, err, nil
	}
	if err := goCmd(ctx, p, []string{"GOOS=wasip1", "GOARCH=wasm"},
		"build", "-buildmode=c-shared", "-o", p.WasmGo(), "./wasm/answer"); err != nil {
		return false, err, nil
	}
	return true, nil, nil
}

func goCmd(ctx context.Context, p Paths, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = p.Root
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// Snodo is the Snodo client built without the Wasm host.
func (p Paths) Snodo() string { return filepath.Join(p.Bin, "snodo") }

// SnodoWasm is the Snodo client built with the Wasm host.
func (p Paths) SnodoWasm() string { return filepath.Join(p.Bin, "snodo-wasm") }

// WasmGo is the Go handler module, built from wasm/answer.
func (p Paths) WasmGo() string { return filepath.Join(p.Bin, "answer.wasm") }

// WasmWAT is the WAT handler module of Snodo's examples, which accepts with
// its configuration as the content.
func (p Paths) WasmWAT() string {
	return filepath.Join(p.Root, "..", "examples", "handlers", "wat", "accept", "accept.wasm")
}

// NodeClientDir is where the TypeScript SDK client and its lockfile live.
func (p Paths) NodeClientDir() string { return filepath.Join(p.Root, "clients", "node") }

// CheckNode reports what is missing for the node client, with what to run.
func CheckNode(p Paths) error {
	if _, err := exec.LookPath("node"); err != nil {
		return fmt.Errorf("node is not installed (install Node.js 20 or later), then run `make -C bench deps`")
	}
	pkg := filepath.Join(p.NodeClientDir(), "node_modules", "@modelcontextprotocol", "sdk", "package.json")
	if _, err := os.Stat(pkg); err != nil {
		return fmt.Errorf("the TypeScript SDK is not installed in %s: run `make -C bench deps` (npm ci)", p.NodeClientDir())
	}
	return nil
}

// Clients returns the clients to run; Snodo only if withSnodo. The Wasm
// handler variants run the Snodo client built with the Wasm host, the
// others the one without.
func Clients(p Paths, withSnodo bool) []Client {
	cs := []Client{
		{Name: Floor, Argv: []string{filepath.Join(p.Bin, "floor")}},
		{Name: GoSDK, Argv: []string{filepath.Join(p.Bin, "gosdk")}, Modern: true},
		{Name: MCPGo, Argv: []string{filepath.Join(p.Bin, "mcpgo")}, Modern: true},
		{Name: TSSDK, Argv: []string{"node", filepath.Join(p.NodeClientDir(), "client.mjs")}},
	}
	if withSnodo {
		cs = append(cs,
			Client{Name: Snodo, Argv: []string{p.Snodo()}, Modern: true},
			Client{Name: SnodoWasmGo, Argv: []string{p.SnodoWasm(), "--wasm", p.WasmGo()}, Modern: true, ElicitOnly: true})
		if _, err := os.Stat(p.WasmWAT()); err == nil {
			cs = append(cs, Client{Name: SnodoWasmWAT, Modern: true, ElicitOnly: true,
				Argv: []string{p.SnodoWasm(), "--wasm", p.WasmWAT(), "--wasm-config", `{"answer":"wat"}`, "--wasm-answer", "wat"}})
		}
	}
	return cs
}

// Server names.
const (
	Lean = "lean"
	SDK  = "go-sdk server"
)

// Transports.
const (
	Stdio = "stdio"
	HTTP  = "http"
)

// Case is one scenario against one server in one era, over one transport.
type Case struct {
	Server    string // Lean or SDK
	Era       string // legacy or modern
	Scenario  string
	N         int
	Size      int    // blob bytes
	Transport string // Stdio ("" too) or HTTP
}

// Key names the case in results: "lean/legacy/seq" over stdio,
// "http/lean/legacy/seq" over HTTP.
func (c Case) Key() string {
	k := c.Server + "/" + c.Era + "/" + c.Scenario
	if c.Transport == HTTP {
		k = HTTP + "/" + k
	}
	return k
}

// Applies reports whether client cl runs in case c.
func (c Case) Applies(cl Client) bool {
	if cl.ElicitOnly && (c.Server != Lean || c.Scenario != "elicit" || c.Transport == HTTP) {
		return false
	}
	if c.Era == "modern" && !cl.Modern && cl.Name != Floor {
		return false
	}
	if cl.Name == Floor {
		// The floor has no MCP: over stdio it runs echo and blob against
		// the line echoer, over HTTP the same POSTs against the lean
		// server, once, beside the lean server's legacy cases.
		return c.Server == Lean && c.Era == "legacy" && (c.Scenario == "seq" || c.Scenario == "conc" || c.Scenario == "blob")
	}
	return true
}

// Scale sets the number of calls per case; 1 is the full comparison.
func Cases(scale float64) []Case {
	n := func(full int) int { return max(1, int(float64(full)*scale)) }
	size := 8 << 20
	return []Case{
		{Server: Lean, Era: "legacy", Scenario: "seq", N: n(4000)},
		{Server: Lean, Era: "legacy", Scenario: "conc", N: n(20000)},
		{Server: Lean, Era: "legacy", Scenario: "blob", N: n(5), Size: size},
		{Server: Lean, Era: "legacy", Scenario: "elicit", N: n(2000)},
		{Server: Lean, Era: "legacy", Scenario: "slow", N: 64},
		{Server: Lean, Era: "modern", Scenario: "seq", N: n(4000)},
		{Server: Lean, Era: "modern", Scenario: "conc", N: n(20000)},
		{Server: Lean, Era: "modern", Scenario: "elicit", N: n(2000)},
		{Server: Lean, Era: "modern", Scenario: "slow", N: 64},
		{Server: SDK, Era: "legacy", Scenario: "seq", N: n(1500)},
		{Server: SDK, Era: "legacy", Scenario: "conc", N: n(4000)},
		{Server: SDK, Era: "legacy", Scenario: "elicit", N: n(600)},
		{Server: SDK, Era: "modern", Scenario: "conc", N: n(4000)},
		{Server: Lean, Era: "legacy", Scenario: "seq", N: n(3000), Transport: HTTP},
		{Server: Lean, Era: "legacy", Scenario: "conc", N: n(12000), Transport: HTTP},
		{Server: Lean, Era: "legacy", Scenario: "blob", N: n(5), Size: size, Transport: HTTP},
		{Server: Lean, Era: "legacy", Scenario: "elicit", N: n(1500), Transport: HTTP},
		{Server: Lean, Era: "modern", Scenario: "seq", N: n(3000), Transport: HTTP},
		{Server: Lean, Era: "modern", Scenario: "conc", N: n(12000), Transport: HTTP},
		{Server: Lean, Era: "modern", Scenario: "elicit", N: n(1500), Transport: HTTP},
	}
}

// ServerArgv is the server command line for a client in a case.
func ServerArgv(p Paths, c Case, cl Client) string {
	if cl.Name == Floor && c.Transport != HTTP {
		return p.pinned(p.Pin.server()) + filepath.Join(p.Bin, "floorchild")
	}
	bin := "leanserver"
	if c.Server == SDK {
		bin = "sdkserver"
	}
	return p.pinned(p.Pin.server()) + filepath.Join(p.Bin, bin) + " --era " + c.Era
}

func (pin *Pinning) server() string {
	if pin == nil {
		return ""
	}
	return pin.Server
}

// pinned is the taskset prefix of a command line for cpu ("" for none).
func (p Paths) pinned(cpu string) string {
	if cpu == "" {
		return ""
	}
	return "taskset -c " + cpu + " "
}

// Run runs one client in one case and returns its result; a run that fails
// or prints no result has Error set.
func Run(ctx context.Context, p Paths, c Case, cl Client, timeout time.Duration) driver.Result {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := append(append([]string(nil), cl.Argv[1:]...),
		"--server", ServerArgv(p, c, cl), "--scenario", c.Scenario, "--n", strconv.Itoa(c.N), "--era", c.Era)
	if c.Size > 0 {
		args = append(args, "--size", strconv.Itoa(c.Size))
	}
	if c.Transport == HTTP {
		args = append(args, "--transport", HTTP)
	}
	argv0 := cl.Argv[0]
	if p.Pin != nil {
		// The server is the client's child: its own taskset in the server
		// command line moves it to its CPU.
		args = append([]string{"-c", p.Pin.Client, argv0}, args...)
		argv0 = "taskset"
	}
	cmd := exec.CommandContext(ctx, argv0, args...)
	cmd.Dir = p.Root
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	runErr := cmd.Run()
	var res driver.Result
	line := bytes.TrimSpace(stdout.Bytes())
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	if err := json.Unmarshal(line, &res); err != nil {
		res = driver.Result{Client: cl.Name, Scenario: c.Scenario, Era: c.Era, N: c.N}
		res.Error = fmt.Sprintf("no result (%v): %s", runErr, tail(stdout.String()+stderr.String()))
		return res
	}
	if res.Error == "" && runErr != nil {
		res.Error = fmt.Sprintf("%v: %s", runErr, tail(stderr.String()))
	}
	if res.Error == "" && res.OK != c.N {
		res.Error = fmt.Sprintf("%d of %d calls answered correctly", res.OK, c.N)
	}
	if res.Error == "" && c.Transport == HTTP && res.ConnsOpened == 0 {
		res.Error = "the HTTP server counted no connection (was the client run with --transport http?)"
	}
	res.Client = cl.Name
	return res
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 800 {
		s = "…" + s[len(s)-800:]
	}
	return s
}
