package wasm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/snodo/snodo/abi"
)

// signature is a function type, for the ABI checks.
type signature struct {
	params, results []api.ValueType
}

func (s signature) String() string {
	return "(" + typeList(s.params) + ") -> " + resultList(s.results)
}

func typeList(ts []api.ValueType) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = api.ValueTypeName(t)
	}
	return strings.Join(names, ", ")
}

func resultList(ts []api.ValueType) string {
	switch len(ts) {
	case 0:
		return "()"
	case 1:
		return api.ValueTypeName(ts[0])
	}
	return "(" + typeList(ts) + ")"
}

func (s signature) matches(d api.FunctionDefinition) bool {
	return slices.Equal(s.params, d.ParamTypes()) && slices.Equal(s.results, d.ResultTypes())
}

func sigOf(d api.FunctionDefinition) signature {
	return signature{params: d.ParamTypes(), results: d.ResultTypes()}
}

// Export types of ABI.md section 1.
var (
	sigInitialize = signature{}
	sigDescribe   = signature{results: []api.ValueType{i32}}
	sigAlloc      = signature{params: []api.ValueType{i32}, results: []api.ValueType{i32}}
	sigEntry      = signature{params: []api.ValueType{i32, i32}, results: []api.ValueType{i32}}
)

// checkCompiled checks a compiled module's imports and exports against the
// ABI, before any of its code runs. Every problem is listed. instrumented
// says Snodo instrumented the module (interrupt.go): it then imports
// yieldImport once, which no module may import itself (instrument refuses a
// module that does, which then fails here).
func checkCompiled(cm wazero.CompiledModule, instrumented bool) error {
	var problems []string
	exports := cm.ExportedFunctions()

	if _, ok := exports[abi.ExportStart]; ok {
		if _, ok := exports[abi.ExportInitialize]; !ok {
			problems = append(problems, fmt.Sprintf("module is a WASI command (it exports %q and no %q); build it as a reactor (Go: GOOS=wasip1 -buildmode=c-shared; clang: -mexec-model=reactor)", abi.ExportStart, abi.ExportInitialize))
		}
	}
	if _, ok := cm.ExportedMemories()[abi.ExportMemory]; !ok {
		problems = append(problems, fmt.Sprintf("missing export %q (memory)", abi.ExportMemory))
	}
	want := []struct {
		name     string
		sig      signature
		required bool
	}{
		{abi.ExportInitialize, sigInitialize, false},
		{abi.ExportDescribe, sigDescribe, true},
		{abi.ExportAlloc, sigAlloc, true},
		{abi.ExportHandle, sigEntry, false},
		{abi.ExportProgress, sigEntry, false},
		{abi.ExportEvent, sigEntry, false},
		{abi.ExportInterceptRequest, sigEntry, false},
		{abi.ExportInterceptResult, sigEntry, false},
	}
	for _, w := range want {
		d, ok := exports[w.name]
		switch {
		case !ok && w.required:
			problems = append(problems, fmt.Sprintf("missing export %q %s", w.name, w.sig))
		case ok && !w.sig.matches(d):
			problems = append(problems, fmt.Sprintf("export %q has type %s, want %s", w.name, sigOf(d), w.sig))
		}
	}
	entries := []string{abi.ExportHandle, abi.ExportProgress, abi.ExportEvent, abi.ExportInterceptRequest, abi.ExportInterceptResult}
	if !slices.ContainsFunc(entries, func(name string) bool { _, ok := exports[name]; return ok }) {
		problems = append(problems, fmt.Sprintf("exports none of %q, %q, %q, %q, %q: the module can answer nothing", abi.ExportHandle, abi.ExportProgress, abi.ExportEvent, abi.ExportInterceptRequest, abi.ExportInterceptResult))
	}

	yields := false
	for _, d := range cm.ImportedFunctions() {
		mod, name, _ := d.Import()
		switch mod {
		case abi.WASIModule:
		case abi.EnvModule:
			if name != "abort" && name != "trace" && name != "seed" {
				problems = append(problems, fmt.Sprintf("imports %s.%s, which the host does not provide (from %q only AssemblyScript's abort, trace and seed)", mod, name, mod))
			}
		case abi.HostModule:
			s, ok := hostSignatures[name]
			switch {
			case name == yieldImport && instrumented && !yields && (signature{}).matches(d):
				yields = true
			case !ok:
				problems = append(problems, fmt.Sprintf("imports %s.%s, which ABI version %d does not define (it has %s, %s, %s)", mod, name, abi.Version, abi.ImportSetOutput, abi.ImportLog, abi.ImportConfig))
			case !s.matches(d):
				problems = append(problems, fmt.Sprintf("imports %s.%s with type %s, want %s", mod, name, sigOf(d), s))
			}
		default:
			problems = append(problems, fmt.Sprintf("imports %s.%s from module %q, which the host does not provide (only %q, %q and %q)", mod, name, mod, abi.HostModule, abi.WASIModule, abi.EnvModule))
		}
	}
	for _, d := range cm.ImportedMemories() {
		mod, name, _ := d.Import()
		problems = append(problems, fmt.Sprintf("imports memory %s.%s; a handler must define and export its own memory", mod, name))
	}
	if len(problems) == 0 {
		return nil
	}
	return abiError(problems)
}

// checkManifest checks that the exports a manifest relies on exist.
func checkManifest(m abi.Manifest, cm wazero.CompiledModule) error {
	exports := cm.ExportedFunctions()
	var problems []string
	need := func(cond bool, export, what string) {
		if _, ok := exports[export]; cond && !ok {
			problems = append(problems, fmt.Sprintf("manifest %s but the module does not export %q", what, export))
		}
	}
	for _, method := range m.Methods {
		need(true, abi.ExportHandle, fmt.Sprintf("lists %q", method))
	}
	need(m.Progress, abi.ExportProgress, `says "progress": true`)
	need(m.Events, abi.ExportEvent, `says "events": true`)
	if ic := m.Intercept; ic != nil {
		need(ic.Requests, abi.ExportInterceptRequest, `says "intercept": {"requests": true}`)
		need(ic.Results, abi.ExportInterceptResult, `says "intercept": {"results": true}`)
	}
	if len(problems) == 0 {
		return nil
	}
	return abiError(slices.Compact(problems))
}

type abiError []string

func (e abiError) Error() string {
	if len(e) == 1 {
		return "does not follow the Snodo ABI: " + e[0]
	}
	return "does not follow the Snodo ABI:\n  - " + strings.Join(e, "\n  - ")
}
