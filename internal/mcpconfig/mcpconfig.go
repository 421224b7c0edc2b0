// Package mcpconfig decodes the parts of a config file that snodo-run and
// the gateway share: an entry of the mcpServers map that desktop MCP hosts
// write (a command to start, or a remote server's url), and a Wasm
// module's settings in the modules map.
package mcpconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/snodo/snodo/handlers/wasm"
	"github.com/snodo/snodo/runtime"
)

// Server is one entry of the de facto standard mcpServers map that
// desktop MCP hosts write: a command to start, or a remote server's url
// (serverUrl and httpUrl are other hosts' names for it) with headers.
type Server struct {
	Type      string             `json:"type"`
	Command   string             `json:"command"`
	Args      []string           `json:"args"`
	Env       map[string]*string `json:"env"`
	Cwd       string             `json:"cwd"`
	URL       string             `json:"url"`
	ServerURL string             `json:"serverUrl"`
	HTTPURL   string             `json:"httpUrl"`
	Headers   map[string]string  `json:"headers"`
	Disabled  bool               `json:"disabled"`
}

// HTTPTypes are the names MCP hosts give the Streamable HTTP transport in
// an mcpServers entry's type.
var HTTPTypes = []string{"http", "streamable-http", "streamableHttp", "streamable_http"}

// HeaderError is the error of AddHeaders for a header that cannot be sent.
type HeaderError struct{ Err error }

func (e *HeaderError) Error() string { return e.Err.Error() }
func (e *HeaderError) Unwrap() error { return e.Err }

// Resolve makes srv the server of the mcpServers entry name (Disabled is
// the caller's to check). A bad header is a *HeaderError.
func (e Server) Resolve(name string, srv *runtime.Server) error {
	urls := 0
	for _, u := range []string{e.URL, e.ServerURL, e.HTTPURL} {
		if u != "" {
			srv.URL = u
			urls++
		}
	}
	switch {
	case urls > 1:
		return fmt.Errorf("mcpServers.%s has more than one of url, serverUrl and httpUrl", name)
	case e.Type != "" && e.Type != "stdio" && !strings.EqualFold(e.Type, "sse") && !slices.ContainsFunc(HTTPTypes, func(t string) bool { return strings.EqualFold(t, e.Type) }):
		return fmt.Errorf("mcpServers.%s has type %q: snodo-run knows stdio, http (also named %s) and sse (HTTP+SSE, 2024-11-05)", name, e.Type, strings.Join(HTTPTypes[1:], ", "))
	case e.Type == "stdio" && urls > 0:
		return fmt.Errorf("mcpServers.%s has type stdio and a url", name)
	case urls > 0 && (e.Command != "" || len(e.Args) > 0 || len(e.Env) > 0 || e.Cwd != ""):
		return fmt.Errorf("mcpServers.%s has both a url and a command (or args, env, cwd): give one or the other", name)
	case urls > 0:
		if err := runtime.CheckURL(srv.URL); err != nil {
			return fmt.Errorf("mcpServers.%s: %v", name, err)
		}
		switch {
		case strings.EqualFold(e.Type, "sse"):
			srv.Transport = runtime.TransportSSE
		case e.Type != "":
			// Named Streamable HTTP: no fallback to HTTP+SSE.
			srv.Transport = runtime.TransportHTTP
		}
		return AddHeaders(srv, e.Headers, "mcpServers."+name+".headers")
	case e.Type != "" && e.Type != "stdio":
		return fmt.Errorf("mcpServers.%s has type %s and no url", name, e.Type)
	case len(e.Headers) > 0:
		return fmt.Errorf("mcpServers.%s has headers but no url: headers apply to a remote server", name)
	case e.Command == "":
		return fmt.Errorf("mcpServers.%s has no command (nor url)", name)
	}
	srv.Command, srv.Args, srv.Dir = e.Command, e.Args, e.Cwd
	srv.Env = EnvVars(e.Env)
	return nil
}

// AddHeaders adds headers to a remote server, each checked (a failure is
// a *HeaderError naming from); a name given again replaces the earlier
// value.
func AddHeaders(srv *runtime.Server, headers map[string]string, from string) error {
	names := make([]string, 0, len(headers))
	for n := range headers {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := runtime.CheckHeader(n, headers[n]); err != nil {
			return &HeaderError{fmt.Errorf("%s: %v", from, err)}
		}
		if srv.Header == nil {
			srv.Header = http.Header{}
		}
		srv.Header.Set(n, headers[n])
	}
	return nil
}

// EnvVars turns an env map (a null value unsets) into changes, sorted by
// name so that runs are reproducible.
func EnvVars(m map[string]*string) []runtime.EnvVar {
	out := make([]runtime.EnvVar, 0, len(m))
	for k, val := range m {
		if val == nil {
			out = append(out, runtime.EnvVar{Name: k, Unset: true})
		} else {
			out = append(out, runtime.EnvVar{Name: k, Value: *val})
		}
	}
	slices.SortFunc(out, func(a, b runtime.EnvVar) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Module are a Wasm module's settings, by module name (its file's base
// name without .wasm).
type Module struct {
	Config      json.RawMessage `json:"config"`
	SHA256      string          `json:"sha256"`
	Timeout     string          `json:"timeout"`
	Trusted     bool            `json:"trusted"`
	MemoryLimit int64           `json:"memory_limit"`
	MaxOutput   int             `json:"max_output"`
	// Limits bound what the module can name (wasm.Limits); 0 means the
	// default.
	Limits struct {
		Functions       int64 `json:"functions"`
		Locals          int64 `json:"locals"`
		TotalLocals     int64 `json:"total_locals"`
		TableElements   int64 `json:"table_elements"`
		Globals         int64 `json:"globals"`
		DataSegments    int64 `json:"data_segments"`
		ElementSegments int64 `json:"element_segments"`
		CodeBytes       int64 `json:"code_bytes"`
	} `json:"limits"`
	Methods []string `json:"methods"`
	Grants  struct {
		Mounts []struct {
			Host     string `json:"host"`
			Guest    string `json:"guest"`
			ReadOnly bool   `json:"read_only"`
		} `json:"mounts"`
		Env    []string `json:"env"`
		Clock  bool     `json:"clock"`
		Random bool     `json:"random"`
	} `json:"grants"`
}

// Apply sets mc from the settings of module name (Trusted included: the
// caller decides whether a trusted module is allowed) and returns the
// methods the settings name.
func (ms Module) Apply(name string, mc *runtime.ModuleConfig) ([]string, error) {
	mc.Config, mc.SHA256, mc.Trusted = ms.Config, ms.SHA256, ms.Trusted
	mc.MemoryLimit, mc.MaxOutput = ms.MemoryLimit, ms.MaxOutput
	mc.Limits = wasm.Limits(ms.Limits)
	if ms.Timeout != "" {
		d, err := time.ParseDuration(ms.Timeout)
		if err != nil {
			return nil, fmt.Errorf("modules.%s.timeout must be a Go duration, not %q", name, ms.Timeout)
		}
		mc.Timeout = d
	}
	for _, m := range ms.Grants.Mounts {
		if m.Host == "" {
			return nil, errors.New("modules." + name + ".grants.mounts: a mount needs host")
		}
		mc.Grants.Mounts = append(mc.Grants.Mounts, runtime.Mount{HostDir: m.Host, GuestPath: m.Guest, ReadOnly: m.ReadOnly})
	}
	mc.Grants.Env, mc.Grants.Clock, mc.Grants.Random = ms.Grants.Env, ms.Grants.Clock, ms.Grants.Random
	return ms.Methods, nil
}
