package snodo

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/snodo/snodo/internal/safetext"
	"github.com/snodo/snodo/transport"
)

// Tool headers (2026-07-28, over a transport that carries headers): the
// Mcp-Param-{Name} headers that mirror the tool arguments a tool's
// inputSchema annotates with x-mcp-header. The dialect says whether the
// era has them (mirrorsToolParams); the session's headers are the
// dialect's own (sessionHeaders).
//
// See the specification's basic/transports/streamable-http.mdx "Custom
// Headers from Tool Parameters" and server/tools.mdx "x-mcp-header".

// maxSafeInteger is the largest integer an x-mcp-header value may carry
// (JavaScript's safe range).
const maxSafeInteger = 1<<53 - 1

// paramBinding is one annotated property: its path of properties keys and
// its header name.
type paramBinding struct {
	path   []string
	header string
}

// toolHeaders are the bindings of the tools listed so far, by tool name.
type toolHeaders struct {
	mu    sync.Mutex
	tools map[string][]paramBinding
}

func (th *toolHeaders) set(name string, b []paramBinding) {
	th.mu.Lock()
	defer th.mu.Unlock()
	if len(b) == 0 {
		delete(th.tools, name)
		return
	}
	if th.tools == nil {
		th.tools = map[string][]paramBinding{}
	}
	th.tools[name] = b
}

func (th *toolHeaders) get(name string) []paramBinding {
	th.mu.Lock()
	defer th.mu.Unlock()
	return th.tools[name]
}

func (th *toolHeaders) empty() bool {
	th.mu.Lock()
	defer th.mu.Unlock()
	return len(th.tools) == 0
}

// toolParamHeaders returns the Mcp-Param-{Name} headers of a tools/call's
// params: one per annotated argument present and not null.
func (c *Client) toolParamHeaders(params []byte) []transport.Header {
	var p struct {
		Name      string                     `json:"name"`
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	if unmarshal(params, &p) != nil {
		return nil
	}
	bindings := c.toolHeaders.get(p.Name)
	var hs []transport.Header
	for _, b := range bindings {
		raw, ok := lookupArgument(p.Arguments, b.path)
		if !ok {
			continue
		}
		if v, ok := headerValue(raw); ok {
			hs = append(hs, transport.Header{Name: transport.HeaderParamPrefix + b.header, Value: v})
		}
	}
	return hs
}

// lookupArgument returns the value at path in args.
func lookupArgument(args map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	cur, ok := args[path[0]]
	for _, key := range path[1:] {
		if !ok {
			return nil, false
		}
		var obj map[string]json.RawMessage
		if unmarshal(cur, &obj) != nil {
			return nil, false
		}
		cur, ok = obj[key]
	}
	return cur, ok
}

// headerValue encodes an argument as a header value: a string as it is
// (Base64 when not header-safe), a boolean as true or false, an integer in
// JavaScript's safe range in decimal. Anything else — null, a fraction,
// an object — gives no header.
func headerValue(raw json.RawMessage) (string, bool) {
	raw = bytesTrim(raw)
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		var s string
		if unmarshal(raw, &s) != nil {
			return "", false
		}
		return transport.EncodeHeaderValue(s), true
	case 't', 'f':
		var b bool
		if unmarshal(raw, &b) != nil {
			return "", false
		}
		return strconv.FormatBool(b), true
	case 'n', '{', '[':
		return "", false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > maxSafeInteger {
		return "", false
	}
	return strconv.FormatInt(int64(f), 10), true
}

// toolBindings validates the x-mcp-header annotations of an inputSchema
// and returns its bindings. An annotation that is not a non-empty HTTP
// token, a name used twice (ignoring case), an annotation on a property
// that is not a string, integer or boolean, or one not reachable from the
// root through properties alone makes the tool invalid.
func toolBindings(schema json.RawMessage) ([]paramBinding, error) {
	if len(bytesTrim(schema)) == 0 {
		return nil, nil
	}
	var root map[string]json.RawMessage
	if err := unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("inputSchema is not an object: %w", err)
	}
	if _, ok := root["x-mcp-header"]; ok {
		return nil, fmt.Errorf("x-mcp-header on the schema root")
	}
	var out []paramBinding
	seen := map[string]string{}
	var walk func(node map[string]json.RawMessage, path []string) error
	walk = func(node map[string]json.RawMessage, path []string) error {
		for key, v := range node {
			if key == "properties" {
				continue
			}
			if key == "x-mcp-header" && len(path) > 0 {
				continue
			}
			if err := noAnnotation(v, key); err != nil {
				return fmt.Errorf("property %q: %w", strings.Join(path, "."), err)
			}
		}
		props, ok := node["properties"]
		if !ok {
			return nil
		}
		var pm map[string]json.RawMessage
		if unmarshal(props, &pm) != nil {
			return nil
		}
		for name, sub := range pm {
			var sn map[string]json.RawMessage
			if unmarshal(sub, &sn) != nil {
				continue
			}
			p := append(append([]string(nil), path...), name)
			if raw, ok := sn["x-mcp-header"]; ok {
				where := strings.Join(p, ".")
				var h string
				if unmarshal(raw, &h) != nil || h == "" {
					return fmt.Errorf("property %q: x-mcp-header must be a non-empty string", where)
				}
				if !transport.IsToken(h) {
					return fmt.Errorf("property %q: x-mcp-header %q is not an HTTP token", where, h)
				}
				var typ string
				_ = unmarshal(sn["type"], &typ)
				if typ != "string" && typ != "integer" && typ != "boolean" {
					return fmt.Errorf("property %q: x-mcp-header on type %q, not string, integer or boolean", where, typ)
				}
				if prev, dup := seen[strings.ToLower(h)]; dup {
					return fmt.Errorf("property %q: x-mcp-header %q repeats that of %q", where, h, prev)
				}
				seen[strings.ToLower(h)] = where
				out = append(out, paramBinding{path: p, header: h})
			}
			if err := walk(sn, p); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// noAnnotation fails if the schema fragment v, under keyword key, holds an
// x-mcp-header annotation anywhere: there it is not statically reachable.
// Keywords whose values are data (enum, const, default, examples) are not
// searched.
func noAnnotation(v json.RawMessage, key string) error {
	switch key {
	case "enum", "const", "default", "examples":
		return nil
	}
	v = bytesTrim(v)
	if len(v) == 0 || (v[0] != '{' && v[0] != '[') || !strings.Contains(string(v), "x-mcp-header") {
		return nil
	}
	if v[0] == '[' {
		var items []json.RawMessage
		if unmarshal(v, &items) != nil {
			return nil
		}
		for _, it := range items {
			if err := noAnnotation(it, ""); err != nil {
				return err
			}
		}
		return nil
	}
	var obj map[string]json.RawMessage
	if unmarshal(v, &obj) != nil {
		return nil
	}
	for k, sub := range obj {
		if k == "x-mcp-header" {
			return fmt.Errorf("x-mcp-header under %q is not reachable through properties alone", key)
		}
		if k == "properties" {
			var pm map[string]json.RawMessage
			if unmarshal(sub, &pm) == nil {
				for _, ps := range pm {
					if err := noAnnotation(ps, key); err != nil {
						return err
					}
				}
			}
			continue
		}
		if err := noAnnotation(sub, k); err != nil {
			return err
		}
	}
	return nil
}

// filterTools drops the tools whose x-mcp-header annotations are invalid,
// with a warning, and records the bindings of the others. It is used on a
// transport with headers in the 2026-07-28 era.
func (c *Client) filterTools(tools []*Tool) []*Tool {
	kept := tools[:0]
	for _, t := range tools {
		if t == nil {
			continue
		}
		b, err := toolBindings(t.InputSchema)
		if err != nil {
			c.warn("excluding tool from tools/list: invalid x-mcp-header", "tool", safetext.Escape(t.Name, false), "reason", safetext.Escape(err.Error(), false))
			continue
		}
		c.toolHeaders.set(t.Name, b)
		kept = append(kept, t)
	}
	for i := len(kept); i < len(tools); i++ {
		tools[i] = nil
	}
	return kept
}

// refreshToolHeaders lists every tool again, after the server said the
// headers of a call did not match (-32020): from the server, not from the
// result cache, whose tools/list may be the stale one.
func (c *Client) refreshToolHeaders(ctx context.Context) error {
	for _, err := range c.Tools(ctx, WithoutCache()) {
		if err != nil {
			return err
		}
	}
	return nil
}
