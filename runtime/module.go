package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tetratelabs/wazero/api"

	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/handlers/wasm"
	"github.com/snodo/snodo/jsonrpc"
)

// ModuleReport is what CheckModule finds in a module that follows the ABI.
type ModuleReport struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
	// ABI is the version the module's manifest declares.
	ABI      int          `json:"abi"`
	Manifest abi.Manifest `json:"manifest"`
	// Imports are the functions the module imports, as
	// "module.name(params) results", each once; the one Snodo's fuel
	// checks add to an instrumented module is not among them.
	Imports []string `json:"imports"`
	// Exports are the functions the module exports, the same way.
	Exports []string `json:"exports"`
}

// CheckModule loads a module the way Start does — it must be valid Wasm,
// follow the ABI and match its sha256 pin — and reports what it declares,
// imports and exports. The error of a module that does not follow the ABI
// says exactly what is missing or wrong; it is a *LoadError.
func CheckModule(ctx context.Context, mc ModuleConfig, cacheDir string) (*ModuleReport, error) {
	if mc.Wasm == nil && mc.Path != "" {
		// Read once, the way Load reads (wasm.ReadModuleFile): the report
		// describes the very bytes that were loaded.
		bin, err := wasm.ReadModuleFile(mc.Path, mc.MaxModuleBytes)
		if err != nil {
			return nil, &LoadError{Module: wasm.ModuleName(mc), Path: mc.Path, Err: err}
		}
		mc.Wasm = bin
	}
	m, host, err := loadOne(ctx, mc, cacheDir)
	if err != nil {
		return nil, err
	}
	defer host.Close(ctx)
	bin := mc.Wasm
	sum := sha256.Sum256(bin)
	rep := &ModuleReport{Name: m.Name(), Path: mc.Path, Size: len(bin), SHA256: hex.EncodeToString(sum[:]),
		ABI: m.Manifest().ABI, Manifest: m.Manifest()}

	// The definitions come from the code Load compiled: compiling the
	// module a second time (even with the interpreter) cost as much memory
	// again.
	for _, d := range m.ImportedFunctions() {
		mod, name, _ := d.Import()
		rep.Imports = append(rep.Imports, mod+"."+name+signature(d))
	}
	for name, d := range m.ExportedFunctions() {
		rep.Exports = append(rep.Exports, name+signature(d))
	}
	sortStrings(rep.Imports)
	// A module may import one function more than once (Go's runtime
	// imports fd_write twice): the report names each once.
	rep.Imports = slices.Compact(rep.Imports)
	sortStrings(rep.Exports)
	return rep, nil
}

// TestModule runs one input through a module without a server: the
// handler author's inner loop. method is a request method (such as
// elicitation/create), "progress" for a progress consumer (params are a
// notifications/progress's params), or a notification method (such as
// notifications/tools/list_changed) for a subscription consumer.
//
// For a request it returns the module's result, or its error (a
// *jsonrpc.Error: the module's own JSON-RPC error, kind handler, or -32603
// for a crash). For a consumer it returns {"stop": bool}, or the error.
func TestModule(ctx context.Context, mc ModuleConfig, cacheDir, method string, params json.RawMessage) (json.RawMessage, error) {
	m, host, err := loadOne(ctx, mc, cacheDir)
	if err != nil {
		return nil, err
	}
	defer host.Close(ctx)
	switch {
	case abi.IsKnownMethod(method):
		if !m.Manifest().Answers(method) {
			return nil, &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeMethodNotFound,
				Message: fmt.Sprintf("module %s does not answer %s (it declares %v)", m.Name(), method, m.Manifest().Methods)}
		}
		return m.HandleRequest(ctx, method, params)
	case method == "progress":
		if !m.Manifest().Progress {
			return nil, &jsonrpc.Error{Kind: jsonrpc.KindHandler, Code: jsonrpc.CodeMethodNotFound,
				Message: fmt.Sprintf("module %s does not consume progress", m.Name())}
		}
		err := m.ProgressFunc(ctx)(params)
		if err != nil {
			return nil, err
		}
		return json.RawMessage(`{"stop":false}`), nil
	case strings.HasPrefix(method, "notifications/"):
		stop, err := m.ConsumeEvent(ctx, method, params)
		if err != nil {
			return nil, err
		}
		return json.RawMessage(fmt.Sprintf(`{"stop":%t}`, stop)), nil
	}
	return nil, fmt.Errorf("method must be one of %s, progress, or a notifications/… event method; not %q",
		strings.Join(abi.KnownMethods, ", "), method)
}

func loadOne(ctx context.Context, mc ModuleConfig, cacheDir string) (*wasm.Module, *wasm.Host, error) {
	name := wasm.ModuleName(mc)
	host, err := wasm.NewHost(wasm.HostConfig{CacheDir: cacheDir})
	if err != nil {
		return nil, nil, &LoadError{Module: name, Path: mc.Path, Err: err}
	}
	m, err := host.Load(ctx, mc)
	if err != nil {
		host.Close(ctx)
		return nil, nil, &LoadError{Module: name, Path: mc.Path, Err: err}
	}
	return m, host, nil
}

func signature(d api.FunctionDefinition) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, t := range d.ParamTypes() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(api.ValueTypeName(t))
	}
	b.WriteByte(')')
	if rs := d.ResultTypes(); len(rs) > 0 {
		b.WriteString(" -> ")
		for i, t := range rs {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(api.ValueTypeName(t))
		}
	}
	return b.String()
}

func sortStrings(s []string) { slices.Sort(s) }
