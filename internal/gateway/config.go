package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxConfigBytes bounds the gateway's config file.
const MaxConfigBytes = 4 << 20

// Sections are the gateway config file's top-level members, each as JSON;
// the package that owns a section decodes it:
//
//	listen, allowedOrigins, maxBodyBytes, sessionIdleTimeout  front
//	mcpServers, modules, stateKey, audit                      hub
//	identities, jwt, limits                                   policy
//	telemetry                                                 telemetry
type Sections map[string]json.RawMessage

// KnownSections are the top-level members a config file may hold.
var KnownSections = []string{
	"listen", "allowedOrigins", "maxBodyBytes", "sessionIdleTimeout",
	"mcpServers", "modules", "stateKey", "audit",
	"identities", "jwt", "limits",
	"telemetry",
}

// ReadConfig reads the gateway config file at path: JSON, or YAML when its
// name ends in .yaml or .yml. A member not in KnownSections is an error
// naming it (a misspelt section would otherwise be a policy silently not
// applied).
func ReadConfig(path string) (Sections, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if n, err := buf.ReadFrom(io.LimitReader(f, MaxConfigBytes+1)); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	} else if n > MaxConfigBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxConfigBytes)
	}
	return ParseConfig(buf.Bytes(), strings.ToLower(filepath.Ext(path)))
}

// ParseConfig parses a config file's bytes; ext is ".json", ".yaml" or
// ".yml" (anything else is read as JSON).
func ParseConfig(data []byte, ext string) (Sections, error) {
	if ext == ".yaml" || ext == ".yml" {
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		j, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("config: %w (map keys must be strings)", err)
		}
		data = j
	}
	var s Sections
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if s == nil {
		return nil, fmt.Errorf("config: the file must hold an object with at least mcpServers")
	}
	for k := range s {
		if !slices.Contains(KnownSections, k) {
			return nil, fmt.Errorf("config: unknown member %q (known: %s)", k, strings.Join(KnownSections, ", "))
		}
	}
	return s, nil
}

// Decode decodes section name into v, rejecting members v does not have;
// an absent section leaves v as it is.
func (s Sections) Decode(name string, v any) error {
	raw, ok := s[name]
	if !ok || string(raw) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("config %s: %w", name, err)
	}
	return nil
}
