package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/handlers/wasm"
	"github.com/snodo/snodo/jsonrpc"
)

// waitBound bounds a wait for something that happens at once on an idle
// machine: far over what a loaded one needs.
const waitBound = 2 * time.Minute

// watch is a server's stderr, which the test waits on.
type watch struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newWatch() *watch { return &watch{changed: make(chan struct{})} }

func (w *watch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	close(w.changed)
	w.changed = make(chan struct{})
	return len(p), nil
}

// waitFor waits for a line of stderr that contains s and returns it.
func (w *watch) waitFor(t *testing.T, s string) string {
	t.Helper()
	timer := time.NewTimer(waitBound)
	defer timer.Stop()
	for {
		w.mu.Lock()
		text, changed := w.buf.String(), w.changed
		w.mu.Unlock()
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, s) {
				return line
			}
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("the server's stderr has no %q after %v; it has:\n%s", s, waitBound, text)
		}
	}
}

// primeManifest loads mc once in a host with the cache dir, which records
// its manifest there, as an earlier run would have.
func primeManifest(t *testing.T, cacheDir string, mc ModuleConfig) {
	t.Helper()
	h, err := wasm.NewHost(wasm.HostConfig{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if _, err := h.Load(context.Background(), mc); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := h.CachedManifest(mc); err != nil || !ok {
		t.Fatalf("no manifest recorded after a load: %v", err)
	}
}

// holdLoads makes every module load wait until the returned release is
// called (which the test's cleanup calls too).
func holdLoads(t *testing.T) (release func()) {
	held := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	beforeLoad = func(string) { <-held }
	t.Cleanup(func() {
		release()
		beforeLoad = nil
	})
	return release
}

type startResult struct {
	rt  *Runner
	err error
}

// starting is a Start running in a goroutine.
type starting struct {
	done chan startResult
	res  *startResult
}

// startAsync runs Start in a goroutine. The test's cleanup calls release
// (if not nil), waits for Start and closes what it started.
func startAsync(t *testing.T, cfg Config, release func()) *starting {
	s := &starting{done: make(chan startResult, 1)}
	go func() {
		rt, err := Start(context.Background(), cfg)
		s.done <- startResult{rt, err}
	}()
	t.Cleanup(func() {
		if release != nil {
			release()
		}
		if s.res == nil {
			r := <-s.done
			s.res = &r
		}
		if s.res.rt != nil {
			s.res.rt.Close(context.Background())
		}
	})
	return s
}

// wait waits for Start to return.
func (s *starting) wait(t *testing.T) startResult {
	t.Helper()
	select {
	case r := <-s.done:
		s.res = &r
		return r
	case <-time.After(waitBound):
		t.Fatalf("Start has not returned after %v", waitBound)
	}
	panic("unreachable")
}

// With the module's manifest in the compilation cache, the client
// connects while the module loads: the server gets initialize before the
// module is loaded, and its elicitation, asked at once, waits for the
// module and is answered by it.
func TestModuleLoadsWhileConnectingAndAnswersTheRequestThatWaitedForIt(t *testing.T) {
	examples(t)
	cache := t.TempDir()
	mc := ModuleConfig{Path: elicitWasm, Config: json.RawMessage(`{"values":{"name":"Ada Lovelace"}}`)}
	primeManifest(t, cache, mc)
	release := holdLoads(t)
	stderr := newWatch()
	started := startAsync(t, Config{
		Server:         Server{Command: os.Args[0], Env: []EnvVar{{Name: helperEnv, Value: "ask-at-init"}}},
		Protocol:       "legacy",
		CacheDir:       cache,
		Handlers:       []HandlerModule{{ModuleConfig: mc}},
		ServerStderr:   stderr,
		ConnectTimeout: time.Hour,
	}, release)
	// The module is held: the server was started and connected, and has
	// asked, before it was loaded.
	stderr.waitFor(t, "asked")
	release()
	r := started.wait(t)
	if r.err != nil {
		t.Fatalf("Start: %v", r.err)
	}
	line := stderr.waitFor(t, "answer: ")
	var answer struct {
		Result struct {
			Action  string            `json:"action"`
			Content map[string]string `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "answer: ")), &answer); err != nil {
		t.Fatalf("the server was answered %q: %v", line, err)
	}
	if answer.Result.Action != "accept" || answer.Result.Content["name"] != "Ada Lovelace" {
		t.Fatalf("the server was answered %s, want the module's accept with name Ada Lovelace", line)
	}
}

// A module that fails to load while the client connects fails Start with
// the *LoadError it fails with when it is loaded before the server is
// started (no manifest in the cache), at once: the connecting is cut
// short, though the server never answers and the connect timeout is an
// hour.
func TestModuleThatFailsToLoadWhileConnectingFailsStartWithTheSameError(t *testing.T) {
	examples(t)
	good := ModuleConfig{Path: elicitWasm}
	// The manifest record does not depend on the memory limit: this one
	// is foretold, and its first instance cannot start.
	bad := good
	bad.MemoryLimit = 2 * 65536
	cfg := func(cache string, stderr *watch) Config {
		return Config{
			Server:         Server{Command: os.Args[0], Env: []EnvVar{{Name: helperEnv, Value: "silent-init"}}},
			Protocol:       "legacy",
			CacheDir:       cache,
			Handlers:       []HandlerModule{{ModuleConfig: bad}},
			ServerStderr:   stderr,
			ConnectTimeout: time.Hour,
		}
	}

	// The module loaded before anything else: no manifest recorded.
	cold := startAsync(t, cfg(t.TempDir(), newWatch()), nil).wait(t)
	var want *LoadError
	if !errors.As(cold.err, &want) {
		t.Fatalf("Start with an empty cache: %v, want a *LoadError", cold.err)
	}

	cache := t.TempDir()
	primeManifest(t, cache, good)
	release := holdLoads(t)
	stderr := newWatch()
	started := startAsync(t, cfg(cache, stderr), release)
	stderr.waitFor(t, "got initialize") // connecting, the module held
	release()
	r := started.wait(t)
	var got *LoadError
	if !errors.As(r.err, &got) {
		t.Fatalf("Start: %v, want a *LoadError", r.err)
	}
	if got.Error() != want.Error() || got.Module != want.Module || got.Path != want.Path {
		t.Fatalf("Start while connecting: %v\nwant, as when the module is loaded first: %v", got, want)
	}
}

// A module that describes itself otherwise than its manifest record
// foretold (the server was told of the capabilities the record declares)
// fails to load, and a request waiting for it is not answered by it.
func TestModuleThatDescribesItselfOtherwiseThanForetoldFailsToLoad(t *testing.T) {
	examples(t)
	host, err := wasm.NewHost(wasm.HostConfig{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close(context.Background())
	r := &Runner{host: host, log: slog.New(slog.DiscardHandler)}
	s := newSlot(ModuleConfig{Path: elicitWasm}, 0)
	s.manifest, s.foretold = abi.Manifest{ABI: 1, Methods: []string{abi.MethodSamplingCreate}}, true
	r.slots = []*slot{s}
	_, err = r.loadSlots(context.Background())
	var le *LoadError
	if !errors.As(err, &le) || le.Module != "elicit-policy" || !strings.Contains(err.Error(), "describes itself as") || !strings.Contains(err.Error(), abi.MethodSamplingCreate) {
		t.Fatalf("loadSlots: %v, want a *LoadError saying the module describes itself otherwise", err)
	}
	res, err := s.HandleRequest(context.Background(), abi.MethodSamplingCreate, json.RawMessage(`{}`))
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError || !strings.Contains(je.Message, "failed to load") {
		t.Fatalf("a request of the module: %s, %v; want -32603, failed to load", res, err)
	}
}
