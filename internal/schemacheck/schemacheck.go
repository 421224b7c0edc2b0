// Package schemacheck validates the messages an MCP client writes against
// the official JSON Schema of the protocol version in use, the way the
// official conformance suite checks wire messages. The schemas are the
// copies in the module's testdata/schema directory.
package schemacheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema versions held in testdata/schema.
const (
	Legacy = "2025-11-25"
	Modern = "2026-07-28"
)

// SchemaFor returns the schema version that covers a protocol version:
// 2026-07-28 for itself, 2025-11-25 for the legacy versions.
func SchemaFor(protocolVersion string) string {
	if protocolVersion >= Modern {
		return Modern
	}
	return Legacy
}

// Checker validates messages. It is safe for concurrent use.
type Checker struct {
	compiler *jsonschema.Compiler
	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema
	// methods maps schema version → client method → definition name, for
	// the client's requests and notifications.
	methods map[string]map[string]string
}

// resultDefs names the result definition of each server-to-client request
// (legacy era).
var resultDefs = map[string]string{
	"elicitation/create":     "ElicitResult",
	"sampling/createMessage": "CreateMessageResult",
	"roots/list":             "ListRootsResult",
	"ping":                   "EmptyResult",
	// Client-side tasks (2025-11-25): the server polls the client.
	"tasks/get":    "GetTaskResult",
	"tasks/result": "GetTaskPayloadResult",
	"tasks/list":   "ListTasksResult",
	"tasks/cancel": "CancelTaskResult",
}

// Load reads the schemas from the module's testdata/schema directory,
// found by walking up from the working directory to go.mod.
func Load() (*Checker, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil, errors.New("schemacheck: go.mod not found above the working directory")
		}
		dir = parent
	}
	return LoadDir(filepath.Join(dir, "testdata", "schema"))
}

// LoadDir reads dir/<version>/schema.json for each schema version.
func LoadDir(dir string) (*Checker, error) {
	c := &Checker{
		compiler: jsonschema.NewCompiler(),
		compiled: map[string]*jsonschema.Schema{},
		methods:  map[string]map[string]string{},
	}
	for _, v := range []string{Legacy, Modern} {
		data, err := os.ReadFile(filepath.Join(dir, v, "schema.json"))
		if err != nil {
			return nil, fmt.Errorf("schemacheck: %w", err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("schemacheck: %s: %w", v, err)
		}
		if err := c.compiler.AddResource(url(v), doc); err != nil {
			return nil, fmt.Errorf("schemacheck: %s: %w", v, err)
		}
		methods, err := clientMethods(data)
		if err != nil {
			return nil, fmt.Errorf("schemacheck: %s: %w", v, err)
		}
		c.methods[v] = methods
	}
	return c, nil
}

func url(version string) string { return "https://modelcontextprotocol.io/schema/" + version + ".json" }

// clientMethods maps each method of ClientRequest and ClientNotification to
// its definition, read from the definitions' method constants.
func clientMethods(data []byte) (map[string]string, error) {
	var s struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, union := range []string{"ClientRequest", "ClientNotification"} {
		var u struct {
			AnyOf []struct {
				Ref string `json:"$ref"`
			} `json:"anyOf"`
		}
		if err := json.Unmarshal(s.Defs[union], &u); err != nil {
			return nil, err
		}
		names := []string{}
		for _, r := range u.AnyOf {
			names = append(names, filepath.Base(r.Ref))
		}
		if len(u.AnyOf) == 0 {
			// A union of one is the definition itself.
			names = append(names, union)
		}
		for _, name := range names {
			var d struct {
				Properties struct {
					Method struct {
						Const string `json:"const"`
					} `json:"method"`
				} `json:"properties"`
			}
			if err := json.Unmarshal(s.Defs[name], &d); err != nil {
				return nil, err
			}
			if m := d.Properties.Method.Const; m != "" {
				out[m] = name
			}
		}
	}
	return out, nil
}

func (c *Checker) schema(version, def string) (*jsonschema.Schema, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := version + "#" + def
	if s, ok := c.compiled[key]; ok {
		return s, nil
	}
	s, err := c.compiler.Compile(url(version) + "#/$defs/" + def)
	if err != nil {
		return nil, err
	}
	c.compiled[key] = s
	return s, nil
}

// Validate validates value against the definition def of schema version.
func (c *Checker) Validate(version, def string, value []byte) error {
	s, err := c.schema(version, def)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("%s %s: %w", version, def, err)
	}
	return nil
}

// ClientRequest validates a request the client sends: against the
// definition of its method in the schema version. A method the schema
// does not have is an error.
func (c *Checker) ClientRequest(version string, msg []byte) error {
	return c.clientMessage(version, msg, "request")
}

// ClientNotification validates a notification the client sends.
func (c *Checker) ClientNotification(version string, msg []byte) error {
	return c.clientMessage(version, msg, "notification")
}

func (c *Checker) clientMessage(version string, msg []byte, kind string) error {
	var head struct {
		Method string `json:"method"`
	}
	if err := json.Unmarshal(msg, &head); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	def, ok := c.methods[version][head.Method]
	if !ok {
		return fmt.Errorf("%s: a client %s %q is not in the schema", version, kind, head.Method)
	}
	return c.Validate(version, def, msg)
}

// ClientResponse validates the client's response to a server request of
// method: the JSON-RPC envelope, and a result against the method's result
// definition.
func (c *Checker) ClientResponse(version, method string, msg []byte) error {
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(msg, &r); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if r.Error != nil {
		return c.Validate(version, "JSONRPCErrorResponse", msg)
	}
	if err := c.Validate(version, "JSONRPCResultResponse", msg); err != nil {
		return err
	}
	def, ok := resultDefs[method]
	if !ok {
		return fmt.Errorf("%s: no result definition for a response to %q", version, method)
	}
	var task struct {
		Task json.RawMessage `json:"task"`
	}
	if (method == "elicitation/create" || method == "sampling/createMessage") &&
		json.Unmarshal(r.Result, &task) == nil && task.Task != nil {
		// A task-augmented request answered with its task.
		def = "CreateTaskResult"
	}
	return c.Validate(version, def, r.Result)
}
