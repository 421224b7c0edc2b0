package guest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/snodo/snodo/abi"
)

func reset() {
	handlers = nil
	progress, events, name, samplingTools = nil, nil, "", false
	onRequest, onResult, interceptMethods = nil, nil, nil
	SetTestConfig([]byte("null"))
}

// ABI.md §2: the manifest lists what the module registered.
func TestManifestListsRegisteredHandlers(t *testing.T) {
	reset()
	SetName("t")
	HandleRoots(func(Context, RootsRequest) (RootsResult, error) { return RootsResult{}, nil })
	HandleElicitation(func(Context, ElicitRequest) (ElicitResult, error) { return ElicitResult{}, nil })
	HandleEvents(func(Context, Event) (Action, error) { return Continue, nil })
	m, err := abi.ParseManifest(Manifest())
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "t" || len(m.Methods) != 2 || m.Methods[0] != abi.MethodElicitationCreate || m.Methods[1] != abi.MethodRootsList || m.Progress || !m.Events {
		t.Fatalf("manifest %+v", m)
	}
}

// ABI.md §2: DeclareSamplingTools puts "samplingTools" in the manifest of a
// module that answers sampling, and only then.
func TestManifestDeclaresSamplingTools(t *testing.T) {
	reset()
	DeclareSamplingTools()
	HandleRoots(func(Context, RootsRequest) (RootsResult, error) { return RootsResult{}, nil })
	if m, err := abi.ParseManifest(Manifest()); err != nil || m.SamplingTools {
		t.Fatalf("without a sampling handler: %+v %v", m, err)
	}
	HandleSampling(func(_ Context, req SamplingRequest) (SamplingResult, error) { return SamplingResult{}, nil })
	m, err := abi.ParseManifest(Manifest())
	if err != nil || !m.SamplingTools {
		t.Fatalf("manifest %s: %v", Manifest(), err)
	}
}

// ABI.md §3.1: a typed handler gets the params and its result is the output.
func TestTypedElicitationHandler(t *testing.T) {
	reset()
	SetTestConfig([]byte(`{"name":"Ada"}`))
	HandleElicitation(func(ctx Context, req ElicitRequest) (ElicitResult, error) {
		var cfg struct{ Name string }
		if err := ctx.Config(&cfg); err != nil {
			return ElicitResult{}, err
		}
		if ctx.Method != abi.MethodElicitationCreate || req.RequestedSchema.Properties[0].Type != "string" {
			return ElicitResult{}, errors.New("bad request")
		}
		return ElicitResult{Action: Accept, Content: Fields{String("name", cfg.Name)}}, nil
	})
	st, out := Call(abi.ExportHandle, abi.AppendRequest(nil, abi.MethodElicitationCreate,
		json.RawMessage(`{"message":"?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`)))
	if st != abi.StatusOK || string(out) != `{"action":"accept","content":{"name":"Ada"}}` {
		t.Fatalf("%v %s", st, out)
	}
}

// ABI.md §3: ERROR with an error object; *Error keeps its code, other
// errors are -32603.
func TestHandlerErrorsBecomeErrorObjects(t *testing.T) {
	reset()
	HandleSampling(func(Context, SamplingRequest) (SamplingResult, error) {
		return SamplingResult{}, &Error{Code: -32042, Message: "no", Data: map[string]int{"n": 1}}
	})
	HandleRoots(func(Context, RootsRequest) (RootsResult, error) { return RootsResult{}, errors.New("plain") })
	for method, want := range map[string]string{
		abi.MethodSamplingCreate:    `{"code":-32042,"message":"no","data":{"n":1}}`,
		abi.MethodRootsList:         `{"code":-32603,"message":"plain"}`,
		abi.MethodElicitationCreate: `{"code":-32601,"message":"method not found: elicitation/create"}`,
	} {
		st, out := Call(abi.ExportHandle, abi.AppendRequest(nil, method, nil))
		if st != abi.StatusError || string(out) != want {
			t.Errorf("%s: %v %s, want %s", method, st, out, want)
		}
	}
	st, out := Call(abi.ExportHandle, abi.AppendRequest(nil, abi.MethodSamplingCreate, json.RawMessage(`{"messages":7}`)))
	if st != abi.StatusError || !json.Valid(out) {
		t.Fatalf("invalid params: %v %s", st, out)
	}
}

// ABI.md §3.2 and §3.3: Stop is STOP, Continue is OK.
func TestConsumersAnswerStopOrOK(t *testing.T) {
	reset()
	HandleProgress(func(_ Context, p Progress) (Action, error) {
		if p.Total != nil && p.Progress > *p.Total/2 {
			return Stop, nil
		}
		return Continue, nil
	})
	HandleEvents(func(_ Context, ev Event) (Action, error) {
		if ev.Method == "end" {
			return Stop, nil
		}
		return Continue, nil
	})
	if st, _ := Call(abi.ExportProgress, abi.AppendProgress(nil, json.RawMessage(`{"progressToken":1,"progress":1,"total":10}`))); st != abi.StatusOK {
		t.Fatal(st)
	}
	if st, _ := Call(abi.ExportProgress, abi.AppendProgress(nil, json.RawMessage(`{"progressToken":1,"progress":6,"total":10}`))); st != abi.StatusStop {
		t.Fatal(st)
	}
	if st, _ := Call(abi.ExportEvent, abi.AppendEvent(nil, "end", nil)); st != abi.StatusStop {
		t.Fatal(st)
	}
	if st, _ := Call(abi.ExportEvent, abi.AppendEvent(nil, "other", nil)); st != abi.StatusOK {
		t.Fatal(st)
	}
}

func TestSamplingMessageText(t *testing.T) {
	one := SamplingMessage{Content: json.RawMessage(`{"type":"text","text":"a"}`)}
	many := SamplingMessage{Content: json.RawMessage(`[{"type":"text","text":"a"},{"type":"image","data":"x"},{"type":"text","text":"b"}]`)}
	if one.Text() != "a" || many.Text() != "ab" {
		t.Fatalf("%q %q", one.Text(), many.Text())
	}
}
