package wasm

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// Host calls that could block.
//
// A guest's call runs in the caller's goroutine, and a host function it
// calls runs there too: the fuel checks (interrupt.go) cannot stop a guest
// while it waits inside one. So no import may wait for long, or it must
// wait on the call's context. Of WASI preview 1 as wazero implements it,
// with the stdio and filesystem Snodo gives a module:
//
//   - poll_oneoff sleeps: wazero sleeps through sys.Nanosleep, which has
//     no context. Snodo wraps it (pollOneoff): wazero's implementation
//     answers the subscriptions, and the sleep it asked for is slept here,
//     cut by the call's context. Without the clock grant the sleep is
//     wazero's fake one, which returns at once, as before.
//   - path_open of a FIFO blocks until the other end opens; of a device,
//     it may do anything. rootFS opens non-blocking and refuses whatever
//     is not a regular file or a directory (rootfs.go).
//   - fd_read and fd_write block only on what is not a regular file: a
//     mount has none to give (path_open refuses them), stdin is wazero's
//     empty reader (no WithStdin: always at EOF, and ready to poll),
//     stdout wazero's discard and stderr the instance's stderrBuffer,
//     which never waits. fd_pread and fd_pwrite, fd_readdir and the path_*
//     calls work on regular files, directories and paths only. The sock_*
//     functions have no socket to work on (no listener is ever
//     preopened): EBADF. sched_yield is wazero's fake, which
//     returns at once (no WithOsyield), and proc_raise a stub (ENOSYS).
//
// A file system that hangs (a stale NFS mount, a stuck FUSE server) can
// still block any call on it, a regular file's read included: mount only
// directories that answer. The snodo log import writes through the host's
// logger, which waits if the process's own log output does.

// instantiateWASI defines wasi_snapshot_preview1 in rt: wazero's functions,
// with poll_oneoff wrapped by pollOneoff. (HostModuleBuilder keeps one
// function per export name: the later Export replaces wazero's.)
func instantiateWASI(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	// wazero's poll_oneoff, from a compiled (never instantiated) copy.
	compiled, err := b.Compile(ctx)
	if err != nil {
		return err
	}
	def := compiled.ExportedFunctions()[pollOneoffName]
	var wazeroPoll api.GoModuleFunction
	if def != nil {
		wazeroPoll, _ = def.GoFunction().(api.GoModuleFunction)
	}
	if wazeroPoll == nil || !pollOneoffSignature.matches(def) {
		compiled.Close(ctx)
		return fmt.Errorf("wazero's %s is not the Go function of type %v it should be", pollOneoffName, pollOneoffSignature)
	}
	params, results := def.ParamTypes(), def.ResultTypes()
	names, resultNames := def.ParamNames(), def.ResultNames()
	if err := compiled.Close(ctx); err != nil {
		return err
	}
	b.NewFunctionBuilder().
		WithGoModuleFunction(pollOneoff(wazeroPoll), params, results).
		WithParameterNames(names...).WithResultNames(resultNames...).
		Export(pollOneoffName)
	_, err = b.Instantiate(ctx)
	return err
}

const pollOneoffName = "poll_oneoff"

// pollOneoffSignature is poll_oneoff's type in WASI preview 1: (in, out,
// nsubscriptions, result.nevents) -> errno.
var pollOneoffSignature = signature{params: []api.ValueType{i32, i32, i32, i32}, results: []api.ValueType{i32}}

// WASI preview 1's layout of poll_oneoff's arguments.
const (
	subscriptionSize = 48
	eventTypeOffset  = 8 // in a subscription, after its userdata
	eventTypeClock   = 0
	errnoFault       = 21 // EFAULT
)

// pollOneoff wraps wazero's poll_oneoff so that it never sleeps past the
// call's context. wazero answers the subscriptions as it always does —
// the events it writes (userdata, errno, type), its errno (EINVAL for no
// subscriptions or an unknown event type, ENOTSUP for the abstime flag,
// which it does not support, EBADF for a negative fd, EFAULT for memory
// out of bounds), the clock id it ignores (every clock sleeps relative to
// now), fd_read on stdin answered at once (stdin is always at EOF) — and
// then, when every subscription was answered without waiting, sleeps the
// shortest clock timeout. That sleep is what the module's Nanosleep (set
// per instance with the clock grant: recordSleep) hands back here instead,
// and sleep waits it out unless the call is stopped first.
//
// Two departures from wazero: subscriptions without a clock among them do
// not sleep at all (wazero sleeps "forever", 2^63-1 ns, which the real
// clock would really do); and a count of subscriptions whose 48 or 32
// bytes each overflow 32 bits is EFAULT (wazero's arithmetic wraps, and it
// panics reading past the short buffer that results).
func pollOneoff(wazeroPoll api.GoModuleFunction) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		inst := instanceFrom(ctx)
		if inst == nil {
			fail(nil, "%s called outside a call", pollOneoffName)
		}
		in, nsubs := api.DecodeU32(stack[0]), api.DecodeU32(stack[2])
		if uint64(nsubs)*subscriptionSize > math.MaxUint32 {
			stack[0] = errnoFault
			return
		}
		clocks := false
		if b, ok := mod.Memory().Read(in, nsubs*subscriptionSize); ok {
			for i := uint32(0); i < nsubs; i++ {
				if b[i*subscriptionSize+eventTypeOffset] == eventTypeClock {
					clocks = true
					break
				}
			}
		}
		inst.sleepFor = 0
		wazeroPoll.Call(ctx, mod, stack)
		ns := inst.sleepFor
		inst.sleepFor = 0
		if ns > 0 && clocks && stack[0] == 0 {
			inst.sleep(ctx, time.Duration(ns))
		}
	}
}

// recordSleep is the Nanosleep of a module granted the clock: it keeps
// what wazero's poll_oneoff asked for, which pollOneoff then sleeps.
// wazero calls Nanosleep from poll_oneoff only, in the call's goroutine.
func (inst *instance) recordSleep(ns int64) { inst.sleepFor = ns }

// sleep sleeps d for poll_oneoff, unless the call is stopped first: then
// it ends the call as a fuel check does, with the exit error classify
// names ("deadline of 5s exceeded", "call cancelled by the caller",
// "module closed during the call"), and the instance is thrown away.
//
// ctx is the call's context, inst.ctx: the deadline, the caller's context
// and Module.Close cancel it. A trusted module has no timer and no watch
// on its caller (a call of its costs nothing of the kind); its sleep
// checks them here.
func (inst *instance) sleep(ctx context.Context, d time.Duration) {
	var callerDone <-chan struct{}
	deadline := false
	if inst.mod.trusted {
		if inst.caller != nil {
			callerDone = inst.caller.Done()
		}
		if left := inst.mod.timeout - time.Since(inst.start); left < d {
			d, deadline = max(left, 0), true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		if !deadline {
			return
		}
		inst.cancel(errDeadline)
	case <-ctx.Done():
	case <-callerDone:
		inst.cancel(errCallerDone)
	}
	panic(sys.NewExitError(stopCode(inst.ctx)))
}
