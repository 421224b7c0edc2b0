package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/snodo/snodo/handlers/wasm"
	"github.com/snodo/snodo/internal/guard"
	"github.com/snodo/snodo/internal/mcpconfig"
	"github.com/snodo/snodo/internal/redact"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/runtime"
)

// Settings keys. Each is a config-file key, a SNODO_ environment variable
// (upper case, dots and dashes as underscores) and, for most, a flag.
const (
	keyServerName        = "server.name"
	keyServerCommand     = "server.command"
	keyServerArgs        = "server.args"
	keyServerCd          = "server.cd"
	keyServerURL         = "server.url"
	keyServerTransport   = "server.transport"
	keyHeader            = "header"
	keyHandler           = "handler"
	keyHandlerConfig     = "handler_config"
	keyInterceptors      = "interceptors"
	keyProgress          = "progress"
	keySubscriber        = "subscriber"
	keyMaxServerRequests = "max_server_requests"
	keyMaxLineBytes      = "max_line_bytes"
	keyTimeout           = "timeout"
	keyConnectTimeout    = "connect_timeout"
	keyAuthTimeout       = "auth_timeout"
	keyTaskTimeout       = "task_timeout"
	keyKeepalive         = "keepalive"
	keyProtocol          = "protocol"
	keyEnv               = "env"
	keyCd                = "cd"
	keyOutput            = "output"
	keyVerbose           = "verbose"
	keyServerStderr      = "server_stderr"
	keyShutdownGrace     = "shutdown_grace"
	keyCacheDir          = "cache_dir"
	keyAllowTools        = "guard.allow"
	keyDenyTools         = "guard.deny"
	keyTrace             = "trace"
	keyURLElicitation    = "url_elicitation"
	keyMCPApps           = "mcp_apps"
)

// keyHeaderFromFlag and keyURLFromFlag are set, never read from a file or
// the environment, when --header or --url was given: SNODO_HEADER is read a
// header a line, and --url beats --server.
const (
	keyHeaderFromFlag = "\x00header_from_flag"
	keyURLFromFlag    = "\x00url_from_flag"
)

// minKeepalive is the shortest keepalive interval accepted: each ping
// waits that long for its answer, and a config file must not make the
// client flood the server with pings.
const minKeepalive = 100 * time.Millisecond

// configFileName is the config file looked for in os.UserConfigDir()/snodo,
// with any extension viper reads (.yaml, .yml, .toml, .json). One in the
// working directory is read only when named (--config, SNODO_CONFIG): it
// may have come with what was checked out there, and would replace the
// user's own, its guard.deny included, and set the server's environment.
const configFileName = "snodo"

// settings is the resolved configuration of one snodo-run invocation.
type settings struct {
	runner runtime.Config
	output string
	// taskTimeout bounds the wait for a task (0: none).
	taskTimeout time.Duration
	// authTimeout bounds an OAuth authorization obtained before connecting,
	// the user's consent in the browser included.
	authTimeout time.Duration
	verbose     bool
	allow       []string
	deny        []string
	configFile  string // the file read, if any
	trace       bool   // start a trace context (--trace)
	mcpApps     bool   // declare the MCP Apps extension (--mcp-apps)
	urlElicit   string // auto, on or off (--url-elicitation)
}

// fileConfig is the part of the config file whose map keys are names that
// viper would lower-case (server names, environment variables, module
// names): it is decoded from the file directly, case preserved.
type fileConfig struct {
	MCPServers map[string]mcpServer `json:"mcpServers"`
	Server     struct {
		Env     map[string]*string `json:"env"`
		Headers map[string]string  `json:"headers"`
	} `json:"server"`
	Modules map[string]moduleSettings `json:"modules"`
}

// mcpServer is one entry of the mcpServers map; moduleSettings are a Wasm
// module's settings (package mcpconfig, shared with the gateway).
type (
	mcpServer      = mcpconfig.Server
	moduleSettings = mcpconfig.Module
)

// newViper returns a viper bound to the flags: flags > SNODO_ environment >
// config file > defaults.
func newViper(flags *pflag.FlagSet) (*viper.Viper, error) {
	v := viper.New()
	v.SetEnvPrefix("SNODO")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_", "-", "_"))
	v.AutomaticEnv()
	v.SetDefault(keyMaxServerRequests, runtime.DefaultMaxServerRequests)
	v.SetDefault(keyMaxLineBytes, jsonrpc.DefaultMaxLineBytes)
	v.SetDefault(keyTimeout, "60s")
	v.SetDefault(keyConnectTimeout, runtime.DefaultConnectTimeout.String())
	v.SetDefault(keyAuthTimeout, defaultAuthTimeout.String())
	v.SetDefault(keyTaskTimeout, defaultTaskTimeout.String())
	v.SetDefault(keyKeepalive, "0s")
	v.SetDefault(keyProtocol, "auto")
	v.SetDefault(keyOutput, "json")
	v.SetDefault(keyShutdownGrace, runtime.DefaultShutdownGrace.String())
	if f := flags.Lookup("header"); f != nil && f.Changed {
		v.Set(keyHeaderFromFlag, true)
	}
	if f := flags.Lookup("url"); f != nil && f.Changed {
		v.Set(keyURLFromFlag, true)
	}
	v.SetDefault(keyURLElicitation, urlElicitAuto)
	for key, flag := range map[string]string{
		keyServerName: "server", keyHandler: "handler", keyHandlerConfig: "handler-config", keyInterceptors: "interceptor",
		keyProgress: "progress", keySubscriber: "subscriber", keyMaxServerRequests: "max-server-requests",
		keyMaxLineBytes: "max-line-bytes", keyTimeout: "timeout", keyConnectTimeout: "connect-timeout", keyAuthTimeout: "auth-timeout", keyTaskTimeout: "task-timeout", keyKeepalive: "keepalive", keyProtocol: "protocol", keyEnv: "env",
		keyCd: "cd", keyOutput: "output", keyVerbose: "verbose", keyServerStderr: "server-stderr",
		keyShutdownGrace: "shutdown-grace", keyCacheDir: "cache-dir", keyAllowTools: "allow-tool", keyDenyTools: "deny-tool",
		keyServerURL: "url", keyServerTransport: "transport", keyHeader: "header",
		keyNoPIDNamespace: "no-pid-namespace", keyTrace: "trace", keyURLElicitation: "url-elicitation", keyMCPApps: "mcp-apps",
	} {
		if f := flags.Lookup(flag); f != nil {
			if err := v.BindPFlag(key, f); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

// readConfigFile reads the config file into v: the one named by --config
// (or SNODO_CONFIG), else snodo.{yaml,yml,toml,json} in the user's config
// directory — never implicitly one in the working directory (see
// configFileName and workdirConfig). It returns the file read ("" when
// none) and its case-preserving part.
func readConfigFile(v *viper.Viper, explicit string) (string, fileConfig, error) {
	var fc fileConfig
	if explicit == "" {
		explicit = os.Getenv("SNODO_CONFIG")
	}
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", fc, configErr("config file %s: %v", explicit, errors.Unwrap(err))
		}
		v.SetConfigFile(explicit)
	} else {
		dir, err := os.UserConfigDir()
		if err != nil {
			return "", fc, nil // no user config directory: no config file
		}
		v.SetConfigName(configFileName)
		v.AddConfigPath(filepath.Join(dir, "snodo"))
	}
	if err := v.ReadInConfig(); err != nil {
		var notFound viper.ConfigFileNotFoundError
		if errors.As(err, &notFound) {
			return "", fc, nil
		}
		if _, rerr := os.ReadFile(v.ConfigFileUsed()); rerr != nil {
			return "", fc, configErr("config file %s cannot be read: %v", v.ConfigFileUsed(), errors.Unwrap(rerr))
		}
		return "", fc, configErr("config file %s is malformed: %v", v.ConfigFileUsed(), err)
	}
	file := v.ConfigFileUsed()
	raw, err := os.ReadFile(file)
	if err != nil {
		return "", fc, configErr("config file %s: %v", file, err)
	}
	if err := decodeFile(file, raw, &fc); err != nil {
		return "", fc, configErr("config file %s is malformed: %v", file, err)
	}
	return file, fc, nil
}

// workdirConfig returns the name of a config file (snodo.yaml, .yml, .toml,
// .json, or another extension viper reads) in the working directory that
// is not the file read, "" when there is none: snodo-run does not read it
// unless it is named, and says so.
func workdirConfig(read string) string {
	for _, ext := range viper.SupportedExts {
		name := configFileName + "." + ext
		fi, err := os.Stat(name)
		if err != nil || fi.IsDir() {
			continue
		}
		if read != "" {
			if ri, err := os.Stat(read); err == nil && os.SameFile(fi, ri) {
				return "" // the working directory is the user's config directory
			}
		}
		return name
	}
	return ""
}

// decodeFile decodes a YAML, TOML or JSON config file into fc, by way of
// JSON so that one set of struct tags serves the three formats.
func decodeFile(name string, raw []byte, fc *fileConfig) error {
	var m map[string]any
	switch strings.ToLower(filepath.Ext(name)) {
	case ".toml":
		if err := toml.Unmarshal(raw, &m); err != nil {
			return err
		}
	case ".json":
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
	default:
		if err := yaml.Unmarshal(raw, &m); err != nil {
			return err
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(fc); err != nil {
		return fmt.Errorf("%v", err)
	}
	return nil
}

// resolve turns the viper settings and the command line's server command
// (after --) into settings.
func resolve(v *viper.Viper, fc fileConfig, file string, serverArgv []string, allowTrusted bool) (*settings, error) {
	s := &settings{configFile: file}
	rc := &s.runner

	s.output = v.GetString(keyOutput)
	switch s.output {
	case "json", "pretty", "text":
	default:
		return nil, usageErr("--output must be json, pretty or text, not %q", s.output)
	}
	s.verbose = v.GetBool(keyVerbose)
	s.trace = v.GetBool(keyTrace)
	s.mcpApps = v.GetBool(keyMCPApps)
	s.urlElicit = v.GetString(keyURLElicitation)
	switch s.urlElicit {
	case urlElicitAuto, urlElicitOn, urlElicitOff:
	default:
		return nil, usageErr("--url-elicitation must be auto, on or off, not %q", s.urlElicit)
	}
	s.allow = v.GetStringSlice(keyAllowTools)
	s.deny = v.GetStringSlice(keyDenyTools)
	for _, p := range append(slices.Clone(s.allow), s.deny...) {
		if err := guard.Check(p); err != nil {
			return nil, usageErr("bad tool name pattern %q: %v", p, err)
		}
	}

	var err error
	if rc.Timeout, err = duration(v, keyTimeout); err != nil {
		return nil, err
	}
	if rc.ShutdownGrace, err = duration(v, keyShutdownGrace); err != nil {
		return nil, err
	}
	if rc.ConnectTimeout, err = duration(v, keyConnectTimeout); err != nil {
		return nil, err
	}
	if s.taskTimeout, err = duration(v, keyTaskTimeout); err != nil {
		return nil, err
	}
	if rc.Keepalive, err = duration(v, keyKeepalive); err != nil {
		return nil, err
	}
	if rc.Keepalive > 0 && rc.Keepalive < minKeepalive {
		return nil, usageErr("%s must be 0 (no pings) or at least %v, not %q: each ping waits that long for its answer", keyKeepalive, minKeepalive, v.GetString(keyKeepalive))
	}
	if s.authTimeout, err = duration(v, keyAuthTimeout); err != nil {
		return nil, err
	}
	if s.authTimeout == 0 {
		return nil, usageErr("%s must be more than 0, not %q", keyAuthTimeout, v.GetString(keyAuthTimeout))
	}
	rc.MaxServerRequests = v.GetInt(keyMaxServerRequests)
	if rc.MaxServerRequests < 1 {
		return nil, usageErr("max_server_requests must be at least 1, not %q", v.GetString(keyMaxServerRequests))
	}
	rc.MaxLineBytes = v.GetInt(keyMaxLineBytes)
	if rc.MaxLineBytes < 1024 {
		return nil, usageErr("max_line_bytes must be at least 1024, not %q", v.GetString(keyMaxLineBytes))
	}
	rc.Protocol = v.GetString(keyProtocol)
	if err := runtime.CheckProtocol(rc.Protocol); err != nil {
		return nil, usageErr("%v", err)
	}
	rc.CacheDir = v.GetString(keyCacheDir)
	// Modules compile in a child process, snodo-run run again (main calls
	// runtime.Init), within wasm's default bounds.
	rc.CompileIn = &wasm.ChildCompile{}

	if err := resolveServer(v, fc, serverArgv, &rc.Server); err != nil {
		return nil, err
	}
	if err := resolveModules(v, fc, rc, allowTrusted); err != nil {
		return nil, err
	}
	// snodo-run starts no other process than the server: every orphan
	// reparented to it is one of the server's descendants.
	rc.Subreaper = goruntime.GOOS == "linux"
	rc.PIDNamespace = pidNamespace(v)
	return s, nil
}

func duration(v *viper.Viper, key string) (time.Duration, error) {
	raw := v.GetString(key)
	d, err := time.ParseDuration(raw)
	if err != nil || d < 0 {
		return 0, usageErr("%s must be a Go duration such as 30s or 2m, not %q", key, raw)
	}
	return d, nil
}

// resolveServer picks the server: the command after --, else --url (or
// SNODO_SERVER_URL), else --server NAME from the config file's mcpServers,
// else server.url or server.command of the config file.
func resolveServer(v *viper.Viper, fc fileConfig, argv []string, srv *runtime.Server) error {
	name := v.GetString(keyServerName)
	url := v.GetString(keyServerURL)
	urlFrom := ""
	fromEntry := false // the server is an mcpServers entry
	switch {
	case v.GetBool(keyURLFromFlag):
		urlFrom = "--url"
	case os.Getenv(envName(keyServerURL)) != "":
		urlFrom = envName(keyServerURL)
	}
	switch {
	case len(argv) > 0 && urlFrom != "":
		return usageErr("give either %s (a remote server) or a server command after --, not both", urlFrom)
	case len(argv) > 0:
		srv.Command, srv.Args = argv[0], argv[1:]
		srv.Env = envVars(fc.Server.Env)
		srv.Dir = v.GetString(keyServerCd)
	case url != "" && (name == "" || urlFrom != ""):
		// --url or SNODO_SERVER_URL; server.url of the config file yields
		// to --server NAME.
		srv.URL = url
	case name != "":
		entry, ok := fc.MCPServers[name]
		if !ok {
			names := make([]string, 0, len(fc.MCPServers))
			for n := range fc.MCPServers {
				names = append(names, n)
			}
			slices.Sort(names)
			if len(names) == 0 {
				return configErr("no server named %q: the config file has no mcpServers", name)
			}
			return configErr("no server named %q in mcpServers (have: %s)", name, strings.Join(names, ", "))
		}
		if err := resolveEntry(entry, name, srv); err != nil {
			return err
		}
		fromEntry = true
	default:
		srv.Command = v.GetString(keyServerCommand)
		srv.Args = v.GetStringSlice(keyServerArgs)
		srv.Env = envVars(fc.Server.Env)
		srv.Dir = v.GetString(keyServerCd)
	}
	transport := cmp.Or(v.GetString(keyServerTransport), "auto")
	switch transport {
	case "auto", runtime.TransportHTTP, runtime.TransportSSE:
	default:
		return usageErr("--transport must be auto, http or sse, not %q", transport)
	}
	if v.IsSet(keyServerTransport) {
		// Given (flag, SNODO_SERVER_TRANSPORT, server.transport): it beats
		// an mcpServers entry's type.
		srv.Transport = strings.TrimPrefix(transport, "auto")
	}
	if srv.Remote() {
		if err := runtime.CheckURL(srv.URL); err != nil {
			return usageErr("%v", err)
		}
		if srv.Transport == runtime.TransportSSE && forcedModern(v.GetString(keyProtocol)) {
			return usageErr("--transport sse (the HTTP+SSE transport of 2024-11-05) carries only the legacy era, the initialize handshake, and --protocol %s asks for 2026-07-28: use --protocol auto or legacy, or --transport http", v.GetString(keyProtocol))
		}
		if !fromEntry { // an entry has headers of its own
			if err := addHeaders(srv, fc.Server.Headers, "server.headers"); err != nil {
				return err
			}
		}
		list, from, err := headerList(v)
		if err != nil {
			return err
		}
		for _, h := range list {
			n, val, ok := strings.Cut(h, ":")
			if !ok {
				// Not shown: a value without its name may be a token.
				return usageErr("%s wants 'Name: value': one has no colon", from)
			}
			if err := addHeaders(srv, map[string]string{strings.TrimSpace(n): strings.TrimSpace(val)}, from); err != nil {
				return err
			}
		}
		if len(v.GetStringSlice(keyEnv)) > 0 || v.GetString(keyCd) != "" {
			return usageErr("--env and --cd apply to a server process; %s is a remote server", redact.URL(srv.URL))
		}
		return nil
	}
	if srv.Transport != runtime.TransportAuto {
		return usageErr("--transport applies to a remote server (--url, or an mcpServers entry with a url); %s is a command", srv.Command)
	}
	if list, from, _ := headerList(v); len(list) > 0 && from != headerFromFile {
		// The config file's headers wait for a remote server; --header
		// given for a command is a mistake.
		return usageErr("%s applies to a remote server (--url, or an mcpServers entry with a url); %s is a command", from, srv.Command)
	}
	for _, kv := range v.GetStringSlice(keyEnv) {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usageErr("--env wants K=V, not %q", kv)
		}
		srv.Env = append(srv.Env, runtime.EnvVar{Name: k, Value: val})
	}
	if cd := v.GetString(keyCd); cd != "" {
		srv.Dir = cd
	}
	return nil
}

// resolveEntry makes the server of the mcpServers entry name.
func resolveEntry(e mcpServer, name string, srv *runtime.Server) error {
	if e.Disabled {
		return configErr("mcpServers.%s is disabled (\"disabled\": true in the config file): enable it there, or pick another server", name)
	}
	return cliConfigErr(e.Resolve(name, srv))
}

// cliConfigErr makes an error of package mcpconfig the command's: a bad
// header is a usage error, the rest config errors.
func cliConfigErr(err error) error {
	var he *mcpconfig.HeaderError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &he):
		return usageErr("%v", he.Err)
	default:
		return configErr("%v", err)
	}
}

// addHeaders adds headers to a remote server, each checked.
func addHeaders(srv *runtime.Server, headers map[string]string, from string) error {
	return cliConfigErr(mcpconfig.AddHeaders(srv, headers, from))
}

// headerList is the --header values: the flag's, else SNODO_HEADER's (one
// header a line: values hold spaces), else the config file's header list;
// and where they came from, for errors.
func headerList(v *viper.Viper) ([]string, string, error) {
	if v.GetBool(keyHeaderFromFlag) {
		return v.GetStringSlice(keyHeader), "--header", nil
	}
	if env, ok := os.LookupEnv(envName(keyHeader)); ok {
		var out []string
		for _, line := range strings.Split(env, "\n") {
			if line = strings.TrimRight(line, "\r"); strings.TrimSpace(line) != "" {
				out = append(out, line)
			}
		}
		return out, envName(keyHeader), nil
	}
	return v.GetStringSlice(keyHeader), headerFromFile, nil
}

// headerFromFile names the config file's header list in errors.
const headerFromFile = "header in the config file"

var envVars = mcpconfig.EnvVars

// resolveModules builds the handler, progress, subscriber and interceptor
// modules from handler ([METHOD=]FILE…), progress, subscriber,
// interceptors, handler_config and the config file's modules map. A module the config file marks trusted is an
// error unless allowTrusted (--allow-trusted).
func resolveModules(v *viper.Viper, fc fileConfig, rc *runtime.Config, allowTrusted bool) error {
	configs := map[string]json.RawMessage{} // by module name; "" for all
	for _, hc := range v.GetStringSlice(keyHandlerConfig) {
		name, value := "", hc
		if n, rest, ok := strings.Cut(hc, "="); ok && !strings.ContainsAny(n, "{[\"@ ") {
			name, value = n, rest
		}
		raw, err := jsonArg(value)
		if err != nil {
			return usageErr("--handler-config %s: %v", hc, err)
		}
		configs[name] = raw
	}
	module := func(path string) (runtime.ModuleConfig, []string, error) {
		name := wasm.ModuleName(wasm.ModuleConfig{Path: path})
		mc := runtime.ModuleConfig{Name: name, Path: path}
		ms, ok := fc.Modules[name]
		var methods []string
		if ok {
			if ms.Trusted && !allowTrusted {
				return mc, nil, configErr("modules.%s.trusted: module %s asks to run trusted, without interruption: one that loops cannot be stopped and can stall all of snodo-run; give --allow-trusted to allow it", name, name)
			}
			var err error
			if methods, err = ms.Apply(name, &mc); err != nil {
				return mc, nil, configErr("%v", err)
			}
		}
		if raw, ok := configs[""]; ok {
			mc.Config = raw
		}
		if raw, ok := configs[name]; ok {
			mc.Config = raw
		}
		return mc, methods, nil
	}
	for _, h := range v.GetStringSlice(keyHandler) {
		path, methods := h, []string(nil)
		if m, p, ok := strings.Cut(h, "="); ok {
			methods, path = strings.Split(m, ","), p
		}
		if path == "" {
			return usageErr("--handler wants [METHOD=]FILE.wasm, not %q", h)
		}
		mc, declared, err := module(path)
		if err != nil {
			return err
		}
		if methods == nil {
			methods = declared
		}
		rc.Handlers = append(rc.Handlers, runtime.HandlerModule{ModuleConfig: mc, Methods: methods})
	}
	if p := v.GetString(keyProgress); p != "" {
		mc, _, err := module(p)
		if err != nil {
			return err
		}
		rc.Progress = &mc
	}
	if p := v.GetString(keySubscriber); p != "" {
		mc, _, err := module(p)
		if err != nil {
			return err
		}
		rc.Subscriber = &mc
	}
	for _, p := range v.GetStringSlice(keyInterceptors) {
		if p == "" {
			return usageErr("--interceptor wants FILE.wasm, not an empty name")
		}
		mc, _, err := module(p)
		if err != nil {
			return err
		}
		rc.Interceptors = append(rc.Interceptors, mc)
	}
	return nil
}

// jsonArg reads a JSON value given inline or as @FILE ("@-" is stdin).
func jsonArg(value string) (json.RawMessage, error) {
	raw := []byte(value)
	if strings.HasPrefix(value, "@") {
		var err error
		if value == "@-" {
			raw, err = readAllStdin()
		} else {
			raw, err = os.ReadFile(value[1:])
		}
		if err != nil {
			return nil, err
		}
	}
	raw = bytes.TrimSpace(raw)
	if !json.Valid(raw) {
		return nil, errors.New("not valid JSON")
	}
	return json.RawMessage(raw), nil
}
