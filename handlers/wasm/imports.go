package wasm

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/snodo/snodo/abi"
)

// callKey carries the *instance whose guest code is running to the host
// functions it calls (ABI.md section 4).
type callKey struct{}

func instanceFrom(ctx context.Context) *instance {
	inst, _ := ctx.Value(callKey{}).(*instance)
	return inst
}

// violation is a breach of the ABI by the guest inside a host function. The
// host function panics with it; wazero turns the panic into the call's error.
type violation struct{ msg string }

func (v *violation) Error() string { return v.msg }

func fail(inst *instance, format string, args ...any) {
	v := &violation{msg: fmt.Sprintf(format, args...)}
	if inst != nil {
		inst.violation = v
	}
	panic(v)
}

var i32 = api.ValueTypeI32

// instantiateSnodo defines the snodo host module in rt.
func instantiateSnodo(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(abi.HostModule)
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(setOutput), []api.ValueType{i32, i32}, nil).
		WithParameterNames("ptr", "len").Export(abi.ImportSetOutput)
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(logMessage), []api.ValueType{i32, i32, i32}, nil).
		WithParameterNames("level", "ptr", "len").Export(abi.ImportLog)
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(readConfig), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("ptr", "cap").Export(abi.ImportConfig)
	// Not part of the ABI: only the checks instrumented into a module call
	// it (interrupt.go, checkCompiled).
	b.NewFunctionBuilder().
		WithGoFunction(api.GoFunc(yield), nil, nil).Export(yieldImport)
	_, err := b.Instantiate(ctx)
	return err
}

// hostSignatures are the types of the snodo imports, for the load-time check.
var hostSignatures = map[string]signature{
	abi.ImportSetOutput: {params: []api.ValueType{i32, i32}},
	abi.ImportLog:       {params: []api.ValueType{i32, i32, i32}},
	abi.ImportConfig:    {params: []api.ValueType{i32, i32}, results: []api.ValueType{i32}},
}

// setOutput copies the guest's output at once (ABI.md section 4).
func setOutput(ctx context.Context, mod api.Module, stack []uint64) {
	inst := instanceFrom(ctx)
	if inst == nil {
		fail(nil, "set_output called outside a call")
	}
	ptr, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	if max := inst.mod.maxOutput; int64(n) > int64(max) {
		fail(inst, "output of %s exceeds the limit of %s", sizeString(int64(n)), sizeString(int64(max)))
	}
	b, ok := mod.Memory().Read(ptr, n)
	if !ok {
		fail(inst, "set_output(%d, %d) is outside the guest's memory of %s", ptr, n, sizeString(int64(mod.Memory().Size())))
	}
	inst.output = append(inst.output[:0], b...)
	inst.outputSet = true
}

// logMessage logs a guest message at its level (ABI.md section 4).
func logMessage(ctx context.Context, mod api.Module, stack []uint64) {
	inst := instanceFrom(ctx)
	if inst == nil {
		return
	}
	level, ptr, n := int32(api.DecodeI32(stack[0])), api.DecodeU32(stack[1]), api.DecodeU32(stack[2])
	inst.logs++
	if inst.logs > abi.MaxLogsPerCall {
		return
	}
	truncated := false
	if n > abi.MaxLogBytes {
		n, truncated = abi.MaxLogBytes, true
	}
	b, ok := mod.Memory().Read(ptr, n)
	if !ok {
		fail(inst, "log(%d, %d, %d) is outside the guest's memory", level, ptr, n)
	}
	msg := string(b)
	if !utf8.ValidString(msg) {
		msg = strings.ToValidUTF8(msg, "\uFFFD")
	}
	if truncated {
		msg += "…"
	}
	msg = SanitizeText(msg)
	var l slog.Level
	switch abi.Level(level) {
	case abi.LevelDebug:
		l = slog.LevelDebug
	case abi.LevelInfo:
		l = slog.LevelInfo
	case abi.LevelWarn:
		l = slog.LevelWarn
	default:
		l = slog.LevelError
	}
	inst.mod.logger.Log(ctx, l, msg)
}

// yield is the host side of the checks instrumented into a module
// (interrupt.go). It takes and returns nothing; called outside a call, it
// stops the guest.
func yield(ctx context.Context, _ []uint64) {
	inst := instanceFrom(ctx)
	if inst == nil {
		fail(nil, "%s called outside a call", yieldImport)
	}
	inst.yield()
}

// readConfig copies the module's configuration (ABI.md section 4).
func readConfig(ctx context.Context, mod api.Module, stack []uint64) {
	inst := instanceFrom(ctx)
	if inst == nil {
		fail(nil, "config called outside a call")
	}
	ptr, capacity := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	cfg := inst.mod.config
	n := uint32(len(cfg))
	if capacity > 0 {
		c := min(capacity, n)
		if !mod.Memory().Write(ptr, cfg[:c]) {
			fail(inst, "config(%d, %d) is outside the guest's memory", ptr, capacity)
		}
	}
	stack[0] = api.EncodeU32(n)
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
