package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/snodo/snodo/abi"
)

// instance is one instantiated copy of a module. It runs one call at a
// time (the pool guarantees it), so its buffers need no lock.
type instance struct {
	mod    *Module
	module api.Module
	memory api.Memory

	// Exported functions, looked up once: ExportedFunction costs
	// microseconds and allocates.
	describeFn, alloc, handle, progress, event api.Function
	interceptRequest, interceptResult          api.Function

	stack [2]uint64
	input []byte
	// inputPtr and inputCap are the buffer of the last snodo_alloc.
	inputPtr, inputCap uint32

	// Set by the host functions during a call.
	output    []byte
	outputSet bool
	violation *violation
	logs      int // log messages of this call

	stderr stderrBuffer

	// reserved is the host's memory budget this instance holds (its
	// module's memory limit), given back when it is closed.
	reserved int64

	// ctx is what every call of this instance runs under: it carries the
	// instance to the host functions and, unless the module is trusted,
	// is cancelled by the deadline timer or by the caller's context, which
	// stops the guest (through the fuel of an instrumented module, or
	// wazero's close-on-context-done). Made once per instance,
	// so a call allocates no context of its own. Once cancelled, the
	// instance is dead.
	ctx          context.Context
	cancel       context.CancelCauseFunc
	timer        *time.Timer
	onCallerDone func()
	stopCaller   func() bool
	// stopInterrupt unregisters the interrupt of an instrumented module
	// that any cancellation of ctx — Module.Close's included — triggers.
	stopInterrupt func() bool

	// A trusted module's call has no timer and no watch on its caller's
	// context: a sleep in poll_oneoff checks them itself (sleep).
	start  time.Time
	caller context.Context

	// sleepFor is what wazero's poll_oneoff asked to sleep, in ns, when
	// the module is granted the clock (recordSleep, hostcalls.go).
	sleepFor int64

	// fuel is the fuel of an instrumented module (interrupt.go), set once
	// the module is instantiated. fuelMu orders the host's stores to it:
	// yield's refills in the guest's goroutine, and the deadline timer's or
	// the caller's context's store of 0 along with cancelling ctx.
	fuelMu sync.Mutex
	fuel   api.MutableGlobal
}

// interrupt makes an instrumented guest call yield at its next function
// entry or loop iteration (or, if its own decrement overwrote the 0, within
// one refill's worth of checks), and yield stops it. The instance is dead
// from then on (its ctx is cancelled first).
func (inst *instance) interrupt() {
	inst.fuelMu.Lock()
	if inst.fuel != nil {
		inst.fuel.Set(0)
	}
	inst.fuelMu.Unlock()
}

// yield is called by an instrumented guest when its fuel runs out: it stops
// the guest if the deadline or the caller's cancellation fired, and refills
// the fuel otherwise. Being a call to Go, it is also where the Go runtime
// can preempt the guest's goroutine (interrupt.go).
func (inst *instance) yield() {
	inst.fuelMu.Lock()
	if inst.fuel == nil {
		inst.fuelMu.Unlock()
		fail(inst, "%s called before the instance was initialized", yieldImport)
	}
	if inst.ctx.Err() != nil {
		inst.fuelMu.Unlock()
		panic(sys.NewExitError(stopCode(inst.ctx)))
	}
	inst.fuel.Set(fuelRefill)
	inst.fuelMu.Unlock()
}

// Causes of an instance context's cancellation.
var (
	errDeadline     = errors.New("deadline exceeded")
	errCallerDone   = errors.New("caller's context done")
	errModuleClosed = errors.New("module closed")
)

// stopCode is the exit code that stops a guest whose context ended, as
// wazero's close-on-context-done has it; classify names the cause.
func stopCode(ctx context.Context) uint32 {
	switch context.Cause(ctx) {
	case errCallerDone, errModuleClosed:
		return sys.ExitCodeContextCanceled
	}
	return sys.ExitCodeDeadlineExceeded
}

// entry is one of the ABI's call entry points.
type entry int

const (
	entryHandle entry = iota
	entryProgress
	entryEvent
	entryInterceptRequest
	entryInterceptResult
)

var entryNames = [...]string{abi.ExportHandle, abi.ExportProgress, abi.ExportEvent, abi.ExportInterceptRequest, abi.ExportInterceptResult}

// intercepts reports whether e is an interceptor's entry point.
func (e entry) intercepts() bool { return e == entryInterceptRequest || e == entryInterceptResult }

// callFailure is why a call, or an instance's creation, failed.
type callFailure struct {
	cause  string
	err    error
	stderr string
}

func (f *callFailure) Error() string { return f.cause }

// newInstance instantiates the module, running _initialize under the
// module's deadline. The caller has reserved the module's memory limit in
// the host's budget (Host.reserve): the instance holds it until it is
// closed, or newInstance gives it back when it fails.
func (m *Module) newInstance(ctx context.Context) (*instance, error) {
	inst := &instance{mod: m, reserved: m.memoryLimit}
	// Module.Close cancels m.closing, and so every instance's context.
	base, cancel := context.WithCancelCause(m.closing)
	inst.ctx, inst.cancel = context.WithValue(base, callKey{}, inst), cancel
	if !m.trusted {
		inst.timer = time.AfterFunc(time.Duration(math.MaxInt64), func() { cancel(errDeadline); inst.interrupt() })
		inst.timer.Stop()
		inst.onCallerDone = func() { cancel(errCallerDone); inst.interrupt() }
		if m.interruptible {
			// After base is cancelled, whoever cancelled it: yield then
			// sees the cancellation and stops the guest.
			inst.stopInterrupt = context.AfterFunc(base, inst.interrupt)
		}
	}
	modCfg := m.modCfg.WithStderr(&inst.stderr)
	if m.clock {
		modCfg = modCfg.WithNanosleep(inst.recordSleep)
	}
	inst.begin(ctx)
	mod, err := m.rt.InstantiateModule(inst.ctx, m.compiled, modCfg)
	if err == nil && m.interruptible {
		if err = inst.initialize(mod); err != nil {
			mod.Close(context.Background())
		}
	}
	inst.flushLogs()
	live := inst.end()
	if err == nil && !live {
		mod.Close(context.Background())
		err = sys.NewExitError(sys.ExitCodeDeadlineExceeded)
	}
	if err != nil {
		f := inst.classify(ctx, err)
		f.cause = "instantiate: " + f.cause
		inst.disarm()
		m.host.budget.release(inst.reserved)
		return nil, f
	}
	inst.module = mod
	inst.memory = mod.Memory()
	inst.describeFn = mod.ExportedFunction(abi.ExportDescribe)
	inst.alloc = mod.ExportedFunction(abi.ExportAlloc)
	inst.handle = mod.ExportedFunction(abi.ExportHandle)
	inst.progress = mod.ExportedFunction(abi.ExportProgress)
	inst.event = mod.ExportedFunction(abi.ExportEvent)
	inst.interceptRequest = mod.ExportedFunction(abi.ExportInterceptRequest)
	inst.interceptResult = mod.ExportedFunction(abi.ExportInterceptResult)
	return inst, nil
}

// initialize reaches the fuel of an instrumented module, then calls its
// _initialize (which wazero did not: no guest code may run before the fuel
// can be reached). The fuel starts at 0: the first check calls yield, which
// stops the guest if the deadline already fired.
func (inst *instance) initialize(mod api.Module) error {
	g, ok := mod.ExportedGlobal(fuelExport).(api.MutableGlobal)
	if !ok {
		return errors.New("instrumented module without its fuel")
	}
	inst.fuelMu.Lock()
	inst.fuel = g
	inst.fuelMu.Unlock()
	if fn := mod.ExportedFunction(abi.ExportInitialize); fn != nil {
		return fn.CallWithStack(inst.ctx, nil)
	}
	return nil
}

// disarm stops the instance's timer and interrupt and cancels its
// context, for good.
func (inst *instance) disarm() {
	if inst.timer != nil {
		inst.timer.Stop()
	}
	if inst.stopInterrupt != nil {
		inst.stopInterrupt()
	}
	inst.cancel(nil)
}

func (inst *instance) close(ctx context.Context) {
	inst.disarm()
	if inst.module != nil {
		inst.module.Close(ctx)
	}
	if n := inst.reserved; n != 0 {
		inst.reserved = 0
		inst.mod.host.budget.release(n)
	}
}

// begin arms the deadline and the caller's cancellation for one call.
func (inst *instance) begin(caller context.Context) {
	if inst.mod.trusted {
		inst.start, inst.caller = time.Now(), caller
		return
	}
	inst.timer.Reset(inst.mod.timeout)
	if caller.Done() != nil {
		inst.stopCaller = context.AfterFunc(caller, inst.onCallerDone)
	}
}

// end disarms what begin armed and reports whether the instance is still
// alive: a deadline or cancellation that fired, even just after the call
// returned, has closed it.
func (inst *instance) end() bool {
	if inst.mod.trusted {
		inst.caller = nil
		// A sleep in poll_oneoff that was cut cancelled ctx.
		return inst.ctx.Err() == nil
	}
	live := inst.timer.Stop()
	if inst.stopCaller != nil {
		if !inst.stopCaller() {
			live = false
		}
		inst.stopCaller = nil
	}
	return live && inst.ctx.Err() == nil
}

// describe calls snodo_describe and parses the manifest.
func (inst *instance) describe(ctx context.Context) (abi.Manifest, error) {
	inst.reset()
	inst.begin(ctx)
	err := inst.describeFn.CallWithStack(inst.ctx, inst.stack[:])
	inst.flushLogs()
	if !inst.end() && err == nil {
		err = sys.NewExitError(sys.ExitCodeDeadlineExceeded)
	}
	if err != nil {
		return abi.Manifest{}, fmt.Errorf("%s: %s", abi.ExportDescribe, inst.classify(ctx, err))
	}
	if st := abi.Status(uint32(inst.stack[0])); st != abi.StatusOK {
		return abi.Manifest{}, fmt.Errorf("%s returned status %s, want OK", abi.ExportDescribe, st)
	}
	return abi.ParseManifest(inst.output)
}

func (inst *instance) reset() {
	inst.logs = 0
	inst.output = inst.output[:0]
	inst.outputSet = false
	inst.violation = nil
	inst.stderr.reset()
}

// flushLogs ends a call's log budget, saying how many messages it dropped.
func (inst *instance) flushLogs() {
	if dropped := inst.logs - abi.MaxLogsPerCall; dropped > 0 {
		inst.mod.logger.Warn(fmt.Sprintf("dropped %d log messages over the limit of %d per call", dropped, abi.MaxLogsPerCall))
	}
	inst.logs = 0
}

// callResult is what a call that ran to its end returned.
type callResult struct {
	status abi.Status
	output []byte // a copy, owned by the caller; nil when none was set
}

// call runs one call on a pooled instance.
func (m *Module) call(ctx context.Context, e entry, method string, params []byte) (callResult, error) {
	return m.callWith(ctx, e, method, params, nil)
}

// callWith is call with ix, the input of an interceptor's entry point.
func (m *Module) callWith(ctx context.Context, e entry, method string, params []byte, ix *abi.InterceptResult) (callResult, error) {
	inst, err := m.pool.get(ctx)
	if err != nil {
		var f *callFailure
		if errors.As(err, &f) {
			return callResult{}, m.failure(f.cause, f.err, f.stderr)
		}
		return callResult{}, m.failure("no instance: "+err.Error(), err, "")
	}
	res, f, healthy := inst.run(ctx, e, method, params, ix)
	m.pool.put(inst, healthy)
	if f != nil {
		return res, m.failure(f.cause, f.err, f.stderr)
	}
	return res, nil
}

// run runs one call: input through snodo_alloc, then the entry point. An
// instance that failed in any way is unhealthy and must not be reused.
func (inst *instance) run(ctx context.Context, e entry, method string, params []byte, ix *abi.InterceptResult) (res callResult, f *callFailure, healthy bool) {
	m := inst.mod
	fn := inst.entry(e)
	if fn == nil {
		return res, &callFailure{cause: "does not export " + entryNames[e]}, true
	}
	inst.reset()
	switch e {
	case entryHandle, entryEvent:
		inst.input = abi.AppendRequest(inst.input[:0], method, params)
	case entryProgress:
		inst.input = abi.AppendProgress(inst.input[:0], params)
	case entryInterceptRequest:
		inst.input = abi.AppendInterceptRequest(inst.input[:0], &ix.InterceptRequest)
	case entryInterceptResult:
		inst.input = abi.AppendInterceptResult(inst.input[:0], ix)
	}

	inst.begin(ctx)
	res, f, healthy = inst.call(ctx, e, fn)
	inst.flushLogs()
	if !inst.end() {
		// The deadline or the caller's cancellation fired, perhaps just
		// after the call returned: the instance is closed (an answer that
		// was complete is still given).
		healthy = false
	}
	if f == nil && m.trusted && time.Since(inst.start) > m.timeout {
		return res, inst.failed(fmt.Sprintf("deadline of %s exceeded (trusted module, checked after the call)", m.timeout)), true
	}
	return res, f, healthy
}

// call writes the input and calls the entry point fn under inst.ctx.
func (inst *instance) call(ctx context.Context, e entry, fn api.Function) (res callResult, f *callFailure, healthy bool) {
	cctx := inst.ctx

	// ABI.md §3: the buffer of the last snodo_alloc is reused while the
	// input fits, which saves a call (and, with the deadline mechanism, a
	// goroutine) per call.
	ptr := inst.inputPtr
	if ptr == 0 || uint32(len(inst.input)) > inst.inputCap {
		inst.stack[0] = uint64(len(inst.input))
		if err := inst.alloc.CallWithStack(cctx, inst.stack[:]); err != nil {
			return res, inst.classify(ctx, err), false
		}
		ptr = uint32(inst.stack[0])
		if ptr == 0 {
			return res, inst.failed(fmt.Sprintf("out of memory: %s returned 0 for %s of input", abi.ExportAlloc, sizeString(int64(len(inst.input))))), false
		}
		inst.inputPtr, inst.inputCap = ptr, uint32(len(inst.input))
	}
	if !inst.memory.Write(ptr, inst.input) {
		return res, inst.failed(fmt.Sprintf("%s returned %d, and %s of input from there is outside the guest's memory of %s", abi.ExportAlloc, ptr, sizeString(int64(len(inst.input))), sizeString(int64(inst.memory.Size())))), false
	}
	inst.stack[0], inst.stack[1] = uint64(ptr), uint64(len(inst.input))
	if err := fn.CallWithStack(cctx, inst.stack[:]); err != nil {
		return res, inst.classify(ctx, err), false
	}
	res.status = abi.Status(uint32(inst.stack[0]))
	if e.intercepts() {
		if cause := checkInterceptOutput(e, res.status, inst.output, inst.outputSet); cause != "" {
			return res, inst.failed("invalid output: " + cause), false
		}
	} else if res.status > abi.StatusStop || (e == entryHandle && res.status == abi.StatusStop) {
		return res, inst.failed(fmt.Sprintf("invalid output: %s returned status %s", entryNames[e], res.status)), false
	}
	// Invalid output is a failure of the instance, like a trap.
	switch {
	case e == entryHandle && res.status == abi.StatusOK:
		if err := abi.CheckResult(inst.output); err != nil {
			return res, inst.failed("invalid output: " + err.Error()), false
		}
	case res.status == abi.StatusError && len(bytes.TrimSpace(inst.output)) > 0:
		if _, err := abi.ParseErrorObject(inst.output); err != nil {
			return res, inst.failed("invalid output: " + err.Error()), false
		}
	}
	if inst.outputSet {
		res.output = bytes.Clone(inst.output)
		if res.output == nil {
			res.output = []byte{}
		}
	}
	return res, nil, true
}

func (inst *instance) entry(e entry) api.Function {
	switch e {
	case entryProgress:
		return inst.progress
	case entryEvent:
		return inst.event
	case entryInterceptRequest:
		return inst.interceptRequest
	case entryInterceptResult:
		return inst.interceptResult
	}
	return inst.handle
}

func (inst *instance) failed(cause string) *callFailure {
	return &callFailure{cause: cause, stderr: inst.stderr.String()}
}

// classify names the cause of a failed call: the deadline, a
// cancellation, proc_exit, an ABI violation, a trap, with "out of memory"
// when the instance's memory stands at its limit, and the first line the
// guest wrote to stderr (a panic's message).
func (inst *instance) classify(caller context.Context, err error) *callFailure {
	m := inst.mod
	var cause string
	var exit *sys.ExitError
	deadlineOrCancel := false
	stopped := func() string {
		deadlineOrCancel = true
		switch context.Cause(inst.ctx) {
		case errModuleClosed:
			return "module closed during the call"
		case errDeadline:
			return fmt.Sprintf("deadline of %s exceeded", m.timeout)
		}
		if errors.Is(caller.Err(), context.DeadlineExceeded) {
			return "the caller's deadline passed during the call"
		}
		return "call cancelled by the caller"
	}
	switch {
	case inst.violation != nil:
		cause = inst.violation.msg
	case errors.As(err, &exit):
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded, sys.ExitCodeContextCanceled:
			cause = stopped()
		default:
			if m.pool.isClosed() {
				cause = "module closed during the call"
			} else {
				cause = fmt.Sprintf("proc_exit(%d)", exit.ExitCode())
			}
		}
	default:
		line, _, _ := strings.Cut(err.Error(), "\n")
		cause = "trap: " + line
	}
	stderr := inst.stderr.String()
	// A stack overflow is not for want of linear memory, however full.
	overflow := strings.Contains(cause, "stack overflow")
	if !deadlineOrCancel && !overflow && inst.memory != nil && int64(inst.memory.Size())+16*pageSize > m.linearLimit {
		limit := sizeString(m.memoryLimit)
		if m.tableBytes > 0 {
			limit += fmt.Sprintf(", %s of it for tables", sizeString(m.tableBytes))
		}
		cause = fmt.Sprintf("out of memory (memory at its limit of %s): %s", limit, cause)
	} else if !deadlineOrCancel && strings.Contains(stderr, "out of memory") {
		cause = "out of memory: " + cause
	}
	if line := firstLine(stderr); line != "" {
		cause += ": " + line
	}
	return &callFailure{cause: cause, err: err, stderr: stderr}
}

func firstLine(s string) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			if len(line) > 300 {
				line = line[:300] + "…"
			}
			return line
		}
	}
	return ""
}

// stderrBuffer keeps the first abi.MaxStderrBytes written to it: a guest's
// stderr, kept so that a failure can name its cause. Writes never fail, so
// a chatty guest cannot break itself by writing.
type stderrBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *stderrBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(t.buf)+len(p) > abi.MaxStderrBytes {
		// Keep the head: a panic's first line is what names the cause.
		room := abi.MaxStderrBytes - len(t.buf)
		if room <= 0 {
			return n, nil
		}
		p = p[:room]
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

func (t *stderrBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func (t *stderrBuffer) reset() {
	t.mu.Lock()
	t.buf = t.buf[:0]
	t.mu.Unlock()
}
