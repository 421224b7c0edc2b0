package guest

import (
	"encoding/json"
	"testing"

	"github.com/snodo/snodo/abi"
)

// ABI.md §8.1: a module without interceptors stays version 1; one with
// them declares version 2 and what it intercepts.
func TestManifestDeclaresInterceptors(t *testing.T) {
	reset()
	HandleRoots(func(Context, RootsRequest) (RootsResult, error) { return RootsResult{}, nil })
	if m, err := abi.ParseManifest(Manifest()); err != nil || m.ABI != 1 || m.Intercept != nil {
		t.Fatalf("%+v %v", m, err)
	}
	InterceptResults(func(Context, InterceptResult) (Decision, error) { return Pass(), nil }, "tools/call")
	m, err := abi.ParseManifest(Manifest())
	if err != nil || m.ABI != 2 || m.Intercept == nil || m.Intercept.Requests || !m.Intercept.Results || len(m.Intercept.Methods) != 1 {
		t.Fatalf("%+v %v", m, err)
	}
	reset()
}

// ABI.md §8.2, §8.3: Pass is OK without output, an error is ERROR with
// the error object, RewriteParams and ReplaceResult/ReplaceError are
// REPLACE with what the host expects.
func TestInterceptDecisions(t *testing.T) {
	reset()
	defer reset()
	InterceptRequests(func(_ Context, r InterceptRequest) (Decision, error) {
		var p struct{ Name string }
		_ = json.Unmarshal(r.Params, &p)
		switch p.Name {
		case "deny":
			return Decision{}, &Error{Code: 7, Message: "no " + r.Server}
		case "rewrite":
			return RewriteParams(json.RawMessage(`{"name":"rewrite","arguments":{}}`)), nil
		}
		return Pass(), nil
	})
	InterceptResults(func(_ Context, r InterceptResult) (Decision, error) {
		if r.Error != nil {
			return ReplaceError(&Error{Code: -1, Message: "hidden"}), nil
		}
		return ReplaceResult(json.RawMessage(`{"content":[]}`)), nil
	})
	env := func(name string) []byte {
		return abi.AppendInterceptRequest(nil, &abi.InterceptRequest{Method: "tools/call", Params: json.RawMessage(`{"name":"` + name + `"}`), Server: "fs", Era: "legacy"})
	}
	for name, want := range map[string]struct {
		st  abi.Status
		out string
	}{
		"ok":      {abi.StatusOK, ""},
		"deny":    {abi.StatusError, `{"code":7,"message":"no fs"}`},
		"rewrite": {abi.StatusReplace, `{"name":"rewrite","arguments":{}}`},
	} {
		st, out := Call(abi.ExportInterceptRequest, env(name))
		if st != want.st || string(out) != want.out {
			t.Errorf("%s: %s %s", name, st, out)
		}
	}
	res := abi.InterceptResult{InterceptRequest: abi.InterceptRequest{Method: "tools/call"}, Result: json.RawMessage(`{"content":[{"type":"text","text":"x"}]}`)}
	st, out := Call(abi.ExportInterceptResult, abi.AppendInterceptResult(nil, &res))
	if r, err := abi.ParseReplacement(out); st != abi.StatusReplace || err != nil || string(r.Result) != `{"content":[]}` {
		t.Fatalf("%s %s %v", st, out, err)
	}
	res.Result, res.Error = nil, json.RawMessage(`{"code":1,"message":"m"}`)
	st, out = Call(abi.ExportInterceptResult, abi.AppendInterceptResult(nil, &res))
	if r, err := abi.ParseReplacement(out); st != abi.StatusReplace || err != nil || r.Error == nil || r.Error.Message != "hidden" {
		t.Fatalf("%s %s %v", st, out, err)
	}
}
