package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
)

// Compiling in a child process.
//
// Compiling a module to native code takes time and memory in proportion to
// its code, and nothing can stop wazero's compiler once it has started: a
// module at the edge of its limits could hold the host for seconds and
// gigabytes. With HostConfig.CompileIn set, the host compiles each module
// that is not in its compilation cache in a child process instead — its
// own executable started again, whose main calls ServeCompile first — under
// a wall-clock timeout and a memory bound, and kills it past either. The
// child writes the native code to the host's on-disk cache; the host then
// compiles the module itself, which is a cache hit: it reads the code back
// instead of compiling it. A module the child cannot compile in its bounds
// does not load, and the error says which bound it passed.

// compileEnv, set to "1" in a child's environment, makes ServeCompile
// compile; the other variables are its parameters.
const (
	compileEnv          = "SNODO_WASM_COMPILE"
	compileEnvDir       = "SNODO_WASM_COMPILE_DIR"
	compileEnvEnsure    = "SNODO_WASM_COMPILE_ENSURE_TERMINATION"
	compileEnvMemory    = "SNODO_WASM_COMPILE_MEMORY"
	compileEnvMaxBinary = "SNODO_WASM_COMPILE_MAX_BYTES"
	// compileEnvValidate, set to "1", makes the child validate the module
	// (Host.validate) instead of compiling it.
	compileEnvValidate = "SNODO_WASM_COMPILE_VALIDATE"
)

// Defaults of ChildCompile.
const (
	DefaultCompileTimeout = 2 * time.Minute
	DefaultCompileMemory  = 4 << 30
)

// ChildCompile says how to compile modules in a child process.
type ChildCompile struct {
	// Executable is the program started as the child: one whose main calls
	// ServeCompile before anything else. "" means os.Executable().
	Executable string
	// Timeout bounds one compilation (default DefaultCompileTimeout).
	Timeout time.Duration
	// MaxMemory bounds the child's resident memory, in bytes (default
	// DefaultCompileMemory). It is checked every few milliseconds on Linux,
	// and is the child's garbage collector's target elsewhere.
	MaxMemory int64
}

// ServeCompile compiles a module and exits when the process was started
// as a compile child (see HostConfig.CompileIn), and returns at once
// otherwise. A program whose host compiles in a child calls it first thing
// in main.
func ServeCompile() {
	if os.Getenv(compileEnv) != "1" {
		return
	}
	if err := serveCompile(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(0)
}

func serveCompile(stdin io.Reader) error {
	validate := os.Getenv(compileEnvValidate) == "1"
	dir := os.Getenv(compileEnvDir)
	if dir == "" && !validate {
		return errors.New("no cache directory")
	}
	if mem, err := strconv.ParseInt(os.Getenv(compileEnvMemory), 10, 64); err == nil && mem > 0 {
		// Make the collector work to stay under the bound the parent
		// enforces.
		debug.SetMemoryLimit(mem / 2)
	}
	maxBytes, err := strconv.ParseInt(os.Getenv(compileEnvMaxBinary), 10, 64)
	if err != nil || maxBytes <= 0 {
		return errors.New("no module size bound")
	}
	bin, err := io.ReadAll(io.LimitReader(stdin, maxBytes+1))
	if err != nil {
		return err
	}
	if int64(len(bin)) > maxBytes {
		return fmt.Errorf("module over %d bytes", maxBytes)
	}
	ctx := context.Background()
	if validate {
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
		defer rt.Close(ctx)
		_, err := rt.CompileModule(ctx, bin)
		return err
	}
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return err
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCompilationCache(cache).
		WithCloseOnContextDone(os.Getenv(compileEnvEnsure) == "1"))
	defer rt.Close(ctx)
	_, err = rt.CompileModule(ctx, bin)
	return err
}

// compileInChild compiles bin in a child process into the on-disk cache
// dir, with wazero's close-on-context-done set as closeOnDone, within cc's
// bounds; with dir "", it validates bin instead (Host.validate). What the
// child's compiler or validator refuses is a *childError.
func compileInChild(ctx context.Context, cc ChildCompile, dir string, closeOnDone bool, bin []byte) error {
	verb := "compiling"
	if dir == "" {
		verb = "validating"
	}
	exe := cc.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("compile child: %w", err)
		}
	}
	timeout := cc.Timeout
	if timeout <= 0 {
		timeout = DefaultCompileTimeout
	}
	maxMem := cc.MaxMemory
	if maxMem <= 0 {
		maxMem = DefaultCompileMemory
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	ensure := "0"
	if closeOnDone {
		ensure = "1"
	}
	validate := "0"
	if dir == "" {
		validate = "1"
	}
	cmd.Env = append(childEnv(),
		compileEnv+"=1",
		compileEnvValidate+"="+validate,
		compileEnvDir+"="+dir,
		compileEnvEnsure+"="+ensure,
		compileEnvMemory+"="+strconv.FormatInt(maxMem, 10),
		compileEnvMaxBinary+"="+strconv.Itoa(len(bin)),
	)
	cmd.Stdin = bytes.NewReader(bin)
	var stderr stderrBuffer // its head, as a guest's
	cmd.Stderr = &stderr
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("compile child %s: %w", exe, err)
	}
	over := watchMemory(cmd.Process, maxMem)
	err := cmd.Wait()
	switch {
	case over():
		return fmt.Errorf("%s took more than %s of memory (the compile child's bound)", verb, sizeString(maxMem))
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		return fmt.Errorf("%s took longer than %s (the compile child's bound)", verb, timeout)
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", verb, context.Cause(ctx))
	case err != nil:
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return &childError{msg: msg}
	}
	return nil
}

// childError is what a compile child's compiler or validator refused.
type childError struct{ msg string }

func (e *childError) Error() string { return "compile child: " + e.msg }

// childEnv is the environment a compile child starts with: this process's,
// without any compile parameters of its own.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, compileEnv) {
			env = append(env, kv)
		}
	}
	return env
}
