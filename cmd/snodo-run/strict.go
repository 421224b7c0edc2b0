package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/snodo/snodo/handlers/wasm"
	"github.com/snodo/snodo/runtime"
)

// Strict configuration: a key of the config file, or a SNODO_ environment
// variable, that names no setting is an error (exit 2), never ignored. A
// misspelt key would otherwise leave its setting at the default without a
// word; a misspelt module name under modules would drop that module's
// sha256 pin.

// schema is what the config file may hold under a key.
type schema struct {
	fields map[string]*schema // known keys (matched ignoring case, as viper does)
	each   *schema            // a map of names (servers, modules), each value like this
	list   *schema            // a list, each element like this
	hint   string             // why a key is not accepted here, said instead of a suggestion
}

// leaf is any value: a scalar, a list, or a map read as it is (env).
var leaf = &schema{}

func fields(m map[string]*schema) *schema { return &schema{fields: m} }

// configSchema is the config file's layout; docs/CLI.md describes it.
var configSchema = fields(map[string]*schema{
	"server": fields(map[string]*schema{
		"name": leaf, "command": leaf, "args": leaf, "cd": leaf, "env": leaf,
		"url": leaf, "headers": leaf, "transport": leaf,
	}),
	keyHeader:  leaf,
	keyHandler: leaf, keyHandlerConfig: leaf, keyProgress: leaf, keySubscriber: leaf,
	keyMaxServerRequests: leaf, keyMaxLineBytes: leaf, keyTimeout: leaf, keyConnectTimeout: leaf, keyAuthTimeout: leaf, keyTaskTimeout: leaf, keyKeepalive: leaf,
	keyProtocol: leaf, keyEnv: leaf, keyCd: leaf, keyOutput: leaf, keyVerbose: leaf,
	keyServerStderr: leaf, keyShutdownGrace: leaf, keyCacheDir: leaf, keyNoPIDNamespace: leaf,
	keyTrace: leaf, keyURLElicitation: leaf, keyMCPApps: leaf,
	"guard": fields(map[string]*schema{"allow": leaf, "deny": leaf}),
	"mcpServers": {each: fields(map[string]*schema{
		"command": leaf, "args": leaf, "env": leaf, "cwd": leaf, "type": leaf,
		"url": leaf, "serverUrl": leaf, "httpUrl": leaf, "headers": leaf, "disabled": leaf,
	})},
	"modules": {each: fields(map[string]*schema{
		"config": leaf, "sha256": leaf, "timeout": leaf, "trusted": leaf,
		"memory_limit": leaf, "max_output": leaf, "methods": leaf,
		"limits": fields(map[string]*schema{
			"functions": leaf, "locals": leaf, "total_locals": leaf, "table_elements": leaf,
			"globals": leaf, "data_segments": leaf, "element_segments": leaf, "code_bytes": leaf,
		}),
		"grants": fields(map[string]*schema{
			"mounts": {list: fields(map[string]*schema{"host": leaf, "guest": leaf, "read_only": leaf})},
			"env":    leaf, "clock": leaf, "random": leaf,
		}),
	})},
	"allow_trusted": {hint: "only the command line can allow trusted modules: give --allow-trusted"},
})

// cnode is one key of the config file, with its line (0 when the format
// gives none).
type cnode struct {
	line     int
	children map[string]*cnode // a map's keys, in file order by keys
	keys     []string
	items    []*cnode // a list's elements
}

// configTree is a config file read for its keys.
type configTree struct {
	file string
	root *cnode
}

// keyProblem is one unknown key, reported in the error's data.
type keyProblem struct {
	Key        string `json:"key"`
	Source     string `json:"source"` // the file, or "environment"
	Line       int    `json:"line,omitempty"`
	Suggestion string `json:"suggestion,omitempty"`
	message    string
}

func (p keyProblem) String() string {
	if p.Source == "environment" {
		return p.message
	}
	where := "config file " + p.Source
	if p.Line > 0 {
		where += fmt.Sprintf(":%d", p.Line)
	}
	return where + ": " + p.message
}

// strictError is the one error of every unknown key found.
func strictError(problems []keyProblem) error {
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.String()
	}
	return &cliError{code: exitUsage, kind: "config", err: fmt.Errorf("%s", strings.Join(msgs, "; ")), data: map[string]any{"unknownKeys": problems}}
}

// checkConfig reports the config file's keys (file "" is none) and the
// SNODO_ environment variables that name no setting, and returns the file's
// keys for checkModules.
func checkConfig(file string, environ []string) (*configTree, error) {
	var problems []keyProblem
	tree := &configTree{file: file}
	if file != "" {
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, configErr("config file %s cannot be read: %v", file, err)
		}
		if tree.root, err = parseTree(file, raw); err != nil {
			return nil, configErr("config file %s is malformed: %v", file, err)
		}
		problems = walkSchema(file, "", tree.root, configSchema, problems)
	}
	problems = append(problems, checkEnv(environ)...)
	if len(problems) > 0 {
		return nil, strictError(problems)
	}
	return tree, nil
}

// parseTree reads a config file's keys: with their lines from YAML (JSON is
// read as the YAML it also is), without from TOML.
func parseTree(file string, raw []byte) (*cnode, error) {
	if strings.EqualFold(filepath.Ext(file), ".toml") {
		var m map[string]any
		if err := toml.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		return fromValue(m), nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return &cnode{}, nil
	}
	return fromYAML(doc.Content[0]), nil
}

func fromYAML(n *yaml.Node) *cnode {
	c := &cnode{line: n.Line}
	switch n.Kind {
	case yaml.AliasNode:
		return fromYAML(n.Alias)
	case yaml.MappingNode:
		c.children = map[string]*cnode{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				continue
			}
			child := fromYAML(v)
			child.line = k.Line
			c.children[k.Value] = child
			c.keys = append(c.keys, k.Value)
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			c.items = append(c.items, fromYAML(item))
		}
	}
	return c
}

func fromValue(v any) *cnode {
	c := &cnode{}
	switch v := v.(type) {
	case map[string]any:
		c.children = map[string]*cnode{}
		for k, val := range v {
			c.children[k] = fromValue(val)
			c.keys = append(c.keys, k)
		}
		slices.Sort(c.keys)
	case []any:
		for _, item := range v {
			c.items = append(c.items, fromValue(item))
		}
	}
	return c
}

// walkSchema appends a problem for each key under n that s does not know.
func walkSchema(file, path string, n *cnode, s *schema, problems []keyProblem) []keyProblem {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch {
	case s.fields != nil && n.children != nil:
		known := make([]string, 0, len(s.fields))
		for k := range s.fields {
			if s.fields[k].hint == "" {
				known = append(known, k)
			}
		}
		for _, k := range n.keys {
			child := n.children[k]
			fs, ok := lookupFold(s.fields, k)
			if ok && fs.hint != "" {
				problems = append(problems, keyProblem{Key: join(k), Source: file, Line: child.line,
					message: fmt.Sprintf("%s is not a config file setting: %s", join(k), fs.hint)})
				continue
			}
			if !ok {
				p := keyProblem{Key: join(k), Source: file, Line: child.line}
				p.message = "unknown key " + join(k)
				if sug := closest(k, known); sug != "" {
					p.Suggestion = join(sug)
					p.message += " (did you mean " + p.Suggestion + "?)"
				}
				problems = append(problems, p)
				continue
			}
			problems = walkSchema(file, join(k), child, fs, problems)
		}
	case s.each != nil && n.children != nil:
		for _, k := range n.keys {
			problems = walkSchema(file, join(k), n.children[k], s.each, problems)
		}
	case s.list != nil:
		for i, item := range n.items {
			problems = walkSchema(file, fmt.Sprintf("%s[%d]", path, i), item, s.list, problems)
		}
	}
	return problems
}

func lookupFold(m map[string]*schema, key string) (*schema, bool) {
	if s, ok := m[key]; ok {
		return s, true
	}
	for k, s := range m {
		if strings.EqualFold(k, key) {
			return s, true
		}
	}
	return nil, false
}

// envName is the SNODO_ environment variable of a settings key.
func envName(key string) string {
	return "SNODO_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))
}

// envKeys are the settings keys that SNODO_ variables set.
var envKeys = []string{
	keyServerName, keyServerCommand, keyServerArgs, keyServerCd, keyServerURL, keyHeader, keyHandler, keyHandlerConfig,
	keyProgress, keySubscriber, keyMaxServerRequests, keyMaxLineBytes, keyTimeout, keyConnectTimeout, keyAuthTimeout, keyTaskTimeout, keyKeepalive,
	keyProtocol, keyEnv, keyCd, keyOutput, keyVerbose, keyServerStderr, keyShutdownGrace,
	keyCacheDir, keyAllowTools, keyDenyTools, keyNoPIDNamespace, keyTrace, keyURLElicitation, keyMCPApps,
}

// checkEnv reports the SNODO_ environment variables that look like a
// misspelt setting: those near enough to a setting's variable to be a typo
// of it (SNODO_TIMOUT), and SNODO_ALLOW_TRUSTED, which only the command
// line may give. Any other SNODO_ variable is not snodo-run's (a wrapper
// script's SNODO_RUN=/path/to/snodo-run, say) and is left alone: the prefix
// is not reserved. SNODO_CONFIG names the config file; SNODO_RUNNER_MARK is
// what the runtime sets in a server's environment, which a snodo-run started
// under that server inherits.
func checkEnv(environ []string) []keyProblem {
	known := []string{"SNODO_CONFIG", "SNODO_RUNNER_MARK"}
	for _, k := range envKeys {
		known = append(known, envName(k))
	}
	trimmed := make([]string, len(known))
	for i, k := range known {
		trimmed[i] = strings.TrimPrefix(k, "SNODO_")
	}
	var problems []keyProblem
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "SNODO_") || slices.Contains(known, name) {
			continue
		}
		p := keyProblem{Key: name, Source: "environment"}
		p.message = "environment variable " + name + " names no snodo-run setting"
		if name == "SNODO_ALLOW_TRUSTED" {
			p.message += ": only the command line can allow trusted modules (--allow-trusted)"
		} else if sug := closest(strings.TrimPrefix(name, "SNODO_"), trimmed); sug != "" {
			p.Suggestion = "SNODO_" + sug
			p.message += " (did you mean " + p.Suggestion + "?)"
		} else {
			continue
		}
		problems = append(problems, p)
	}
	return problems
}

// checkModules reports each modules entry of the config file that names no
// module this run loads: its settings, among them its sha256 pin, would
// silently not apply. also are module files named on the command line
// (handlers check and test).
func (t *configTree) checkModules(rc *runtime.Config, also ...string) error {
	if t == nil || t.root == nil {
		return nil
	}
	mods, ok := lookupNode(t.root, "modules")
	if !ok || mods.children == nil {
		return nil
	}
	var loaded []string
	add := func(path string) { loaded = append(loaded, wasm.ModuleName(wasm.ModuleConfig{Path: path})) }
	for _, h := range rc.Handlers {
		add(h.Path)
	}
	if rc.Progress != nil {
		add(rc.Progress.Path)
	}
	if rc.Subscriber != nil {
		add(rc.Subscriber.Path)
	}
	for _, p := range also {
		add(p)
	}
	var problems []keyProblem
	for _, name := range mods.keys {
		if slices.Contains(loaded, name) {
			continue
		}
		p := keyProblem{Key: "modules." + name, Source: t.file, Line: mods.children[name].line}
		p.message = fmt.Sprintf("modules.%s names no module this run loads, so its settings (its sha256 pin among them) would not apply", name)
		switch sug := closest(name, loaded); {
		case sug != "":
			p.Suggestion = "modules." + sug
			p.message += " (did you mean modules." + sug + "?)"
		case len(loaded) == 0:
			p.message += " (no module is loaded: give it with --handler, --progress or --subscriber)"
		default:
			p.message += " (loaded: " + strings.Join(loaded, ", ") + ")"
		}
		problems = append(problems, p)
	}
	if len(problems) > 0 {
		return strictError(problems)
	}
	return nil
}

func lookupNode(n *cnode, key string) (*cnode, bool) {
	for _, k := range n.keys {
		if strings.EqualFold(k, key) {
			return n.children[k], true
		}
	}
	return nil, false
}

// closest is the candidate nearest to s by Damerau-Levenshtein distance
// (ignoring case), if it is near enough to be a misspelling, else "".
func closest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if bestD < 0 || d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	if bestD < 0 || bestD > max(2, len([]rune(s))/3) {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of adjacent runes.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

// moduleArgs are the module files a command names as arguments: those of
// handlers check and handlers test.
func moduleArgs(cmd *cobra.Command, args []string) []string {
	if cmd.Parent() != nil && cmd.Parent().Name() == "handlers" && len(args) > 0 {
		return args[:1]
	}
	return nil
}
