// Command confine-paths is a Snodo interceptor module (ABI version 2) that
// confines the path arguments of a filesystem server's tools to a prefix,
// before the server sees them:
//
//	{
//	  "prefix": "/srv/data",
//	  "keys": ["path", "paths", "source", "destination"],
//	  "tools": ["read_file", "write_file"],
//	  "mount": "/data"
//	}
//
// For each tools/call (of the listed tools, or of every tool when "tools"
// is not given), each top-level argument named in "keys" (default: path,
// paths, source, destination) must be a string, or an array of strings,
// that names a path inside "prefix" (required, absolute):
//
//   - a relative path is taken relative to the prefix;
//   - ".." and "." are resolved lexically (path.Clean) before the check, so
//     "/srv/data/../etc/passwd" is outside and refused;
//   - an absolute path outside the prefix is refused, as is one that only
//     starts with the same characters ("/srv/database" is not inside
//     "/srv/data");
//   - a path with a NUL byte, a backslash, or a leading "~" (which some
//     servers expand to a home directory) is refused;
//   - a path that changed (relative, or with "." or "..") is sent
//     rewritten, clean and absolute: the server sees what was checked.
//
// Symlinks: with "mount" set, and the prefix mounted read-only at that
// guest path (grants.mounts: {host: PREFIX, guest: MOUNT, read_only:
// true}), every component of the path that exists is checked with lstat,
// and a path through a symlink is refused: a symlink the client can see
// cannot carry a request out of the prefix. What the module cannot see is
// the server's to refuse: a symlink made or changed between this check and
// the server's open, or one in a directory the module was not granted.
// Servers that resolve symlinks themselves (the reference
// @modelcontextprotocol/server-filesystem checks the real path against its
// allowed directories) close that gap on their side.
//
// Denied requests fail with -32030 and the reason; nothing is sent.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o confine-paths.wasm .
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/snodo/snodo/abi/guest"
)

type config struct {
	Prefix string   `json:"prefix"`
	Keys   []string `json:"keys"`
	Tools  []string `json:"tools"`
	Mount  string   `json:"mount"`
}

var defaultKeys = []string{"path", "paths", "source", "destination"}

func init() {
	guest.SetName("confine-paths")
	guest.InterceptRequests(confine, "tools/call")
}

func main() {}

// deny is the reason a request is refused.
func deny(format string, args ...any) error {
	return &guest.Error{Code: -32602, Message: fmt.Sprintf(format, args...)}
}

func loadConfig() (config, error) {
	var c config
	if err := guest.Config(&c); err != nil {
		return c, err
	}
	if c.Prefix == "" || !path.IsAbs(c.Prefix) || path.Clean(c.Prefix) != c.Prefix {
		return c, fmt.Errorf(`confine-paths: "prefix" must be a clean absolute path, not %q`, c.Prefix)
	}
	if c.Keys == nil {
		c.Keys = defaultKeys
	}
	return c, nil
}

func confine(ctx guest.Context, r guest.InterceptRequest) (guest.Decision, error) {
	cfg, err := loadConfig()
	if err != nil {
		// A module that cannot read its policy fails closed.
		return guest.Decision{}, err
	}
	var params map[string]json.RawMessage
	if err := json.Unmarshal(r.Params, &params); err != nil {
		return guest.Decision{}, deny("tools/call params are not an object")
	}
	var name string
	if err := json.Unmarshal(params["name"], &name); err != nil {
		return guest.Decision{}, deny("tools/call has no tool name")
	}
	if cfg.Tools != nil && !slices.Contains(cfg.Tools, name) {
		return guest.Pass(), nil
	}
	raw, ok := params["arguments"]
	if !ok || string(raw) == "null" {
		return guest.Pass(), nil
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil {
		return guest.Decision{}, deny("tool %s: arguments are not an object", name)
	}
	changed := false
	for _, key := range cfg.Keys {
		v, ok := args[key]
		if !ok {
			continue
		}
		out, diff, err := checkValue(cfg, v)
		if err != nil {
			return guest.Decision{}, deny("tool %s, argument %q: %v", name, key, err)
		}
		if diff {
			args[key], changed = out, true
		}
	}
	if !changed {
		return guest.Pass(), nil
	}
	ctx.Infof("tool %s: paths rewritten inside %s", name, cfg.Prefix)
	params["arguments"], _ = json.Marshal(args)
	b, err := json.Marshal(params)
	if err != nil {
		return guest.Decision{}, err
	}
	return guest.RewriteParams(b), nil
}

// checkValue checks a path argument (a string or an array of strings) and
// returns it rewritten when its paths were not clean and absolute.
func checkValue(cfg config, v json.RawMessage) (json.RawMessage, bool, error) {
	var one string
	if json.Unmarshal(v, &one) == nil && len(v) > 0 && v[0] == '"' {
		p, err := confinePath(cfg, one)
		if err != nil {
			return nil, false, err
		}
		if p == one {
			return v, false, nil
		}
		b, _ := json.Marshal(p)
		return b, true, nil
	}
	var many []string
	if err := json.Unmarshal(v, &many); err != nil || len(v) == 0 || v[0] != '[' {
		return nil, false, errors.New("is neither a string nor an array of strings")
	}
	diff := false
	for i, s := range many {
		p, err := confinePath(cfg, s)
		if err != nil {
			return nil, false, fmt.Errorf("[%d]: %v", i, err)
		}
		if p != s {
			many[i], diff = p, true
		}
	}
	if !diff {
		return v, false, nil
	}
	b, _ := json.Marshal(many)
	return b, true, nil
}

// confinePath returns p clean and absolute, or why it is refused.
func confinePath(cfg config, p string) (string, error) {
	switch {
	case p == "":
		return "", errors.New("empty path")
	case strings.ContainsRune(p, 0):
		return "", errors.New("path holds a NUL byte")
	case strings.ContainsRune(p, '\\'):
		return "", fmt.Errorf("path %q holds a backslash", p)
	case strings.HasPrefix(p, "~"):
		return "", fmt.Errorf("path %q starts with ~, which a server may expand to a home directory", p)
	}
	clean := p
	if !path.IsAbs(clean) {
		clean = path.Join(cfg.Prefix, clean)
	}
	clean = path.Clean(clean)
	if clean != cfg.Prefix && !strings.HasPrefix(clean, strings.TrimSuffix(cfg.Prefix, "/")+"/") {
		return "", fmt.Errorf("path %q is outside %s", p, cfg.Prefix)
	}
	if cfg.Mount != "" {
		if err := noSymlinks(cfg, clean); err != nil {
			return "", err
		}
	}
	return clean, nil
}

// noSymlinks refuses a path whose existing components, seen through the
// mount of the prefix, include a symlink.
func noSymlinks(cfg config, clean string) error {
	rel := strings.TrimPrefix(strings.TrimPrefix(clean, cfg.Prefix), "/")
	if rel == "" {
		return nil
	}
	cur := cfg.Mount
	for _, part := range strings.Split(rel, "/") {
		cur = path.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // the rest does not exist yet (a file to create)
		}
		if err != nil {
			return fmt.Errorf("path %q cannot be checked: %v", clean, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("path %q goes through a symlink (%s)", clean, path.Join(cfg.Prefix, strings.TrimPrefix(cur, cfg.Mount)))
		}
	}
	return nil
}
