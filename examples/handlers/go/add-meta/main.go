// Command add-meta is a Snodo interceptor module (ABI version 2) that
// adds configured entries to the _meta of every request the client sends
// a server — the way a proxy adds headers:
//
//	{"meta": {"com.example/tenant": "acme", "com.example/request-source": "snodo"}}
//
// Each request's params are rewritten to carry the entries in their
// _meta ({"_meta": {...}} when the request had no params). The request's
// own _meta members are kept, and Snodo still adds its own after the
// rewrite (the progress token, W3C trace context, and in 2026-07-28 the
// io.modelcontextprotocol/* members). A configured entry replaces a
// member of the request's own _meta with the same key — or a key a
// decoder could take for it, differing in case, "_" or "-" — so that the
// caller cannot choose the value the operator set (a tenant, say). A
// configured value must not hold an object with two such keys either.
//
// Keys must be prefixed, as MCP's _meta keys of other parties are: a
// prefix of dot-separated labels (letters, digits and hyphens, starting
// with a letter and ending with a letter or digit), a slash, and a name
// (letters, digits, "-", "_" and ".", starting and ending with a letter or
// digit): "com.example/tenant". The keys MCP reserves are refused, so the
// module can never overwrite what the client or the protocol writes: a
// prefix with a label "modelcontextprotocol" or "mcp" (io.modelcontextprotocol/,
// dev.mcp/), and unprefixed keys (MCP's progressToken, trace context's
// traceparent, tracestate and baggage). A configuration that breaks a rule
// fails every call with an error that says which key and why: the module
// fails closed.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o add-meta.wasm .
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/snodo/snodo/abi/guest"
)

type config struct {
	Meta map[string]json.RawMessage `json:"meta"`
}

var (
	loaded bool
	meta   map[string]json.RawMessage
	// folded maps each configured key's folded form to the key.
	folded map[string]string
)

func init() {
	guest.SetName("add-meta")
	guest.InterceptRequests(addMeta)
}

func main() {}

func setup() error {
	if loaded {
		return nil
	}
	m, err := loadConfig(guest.ConfigBytes())
	if err != nil {
		return err
	}
	meta, loaded = m, true
	return nil
}

const usage = `{"meta": {"com.example/tenant": "acme"}}`

// loadConfig reads and checks the configuration.
func loadConfig(b []byte) (map[string]json.RawMessage, error) {
	var c config
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("null")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return nil, fmt.Errorf("add-meta: configuration: %v (want %s)", err, usage)
	}
	if len(c.Meta) == 0 {
		return nil, fmt.Errorf(`add-meta: configuration: "meta" must hold the entries to add, as in %s`, usage)
	}
	keys := make([]string, 0, len(c.Meta))
	for k := range c.Meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	folded = map[string]string{}
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return nil, fmt.Errorf("add-meta: configuration: _meta key %q: %v", k, err)
		}
		if err := checkValue(c.Meta[k]); err != nil {
			return nil, fmt.Errorf("add-meta: configuration: the value of %q: %v", k, err)
		}
		if other, ok := folded[fold(k)]; ok {
			return nil, fmt.Errorf("add-meta: configuration: _meta keys %q and %q differ only in case, \"_\" or \"-\": a decoder could take one for the other; keep one", other, k)
		}
		folded[fold(k)] = k
	}
	return c.Meta, nil
}

// checkKey checks a configured key: prefixed, well formed, not reserved.
func checkKey(k string) error {
	prefix, name, ok := strings.Cut(k, "/")
	if !ok {
		return errors.New(`unprefixed keys are MCP's own (progressToken) and trace context's (traceparent, tracestate, baggage); give the key a prefix of your own, such as "com.example/` + k + `"`)
	}
	for _, label := range strings.Split(prefix, ".") {
		if !validLabel(label) {
			return fmt.Errorf("the prefix %q is not dot-separated labels (letters, digits and hyphens, starting with a letter, ending with a letter or digit)", prefix+"/")
		}
		if l := strings.ToLower(strings.ReplaceAll(label, "-", "")); l == "modelcontextprotocol" || l == "mcp" {
			return fmt.Errorf("the prefix %q is reserved for MCP (a label %q); use a prefix of your own, such as \"com.example/\"", prefix+"/", label)
		}
	}
	if !validName(name) {
		return fmt.Errorf("the name %q after the prefix must be letters, digits, \"-\", \"_\" and \".\", starting and ending with a letter or digit", name)
	}
	return nil
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

func validLabel(l string) bool {
	if l == "" || !(l[0] >= 'a' && l[0] <= 'z' || l[0] >= 'A' && l[0] <= 'Z') || !alnum(l[len(l)-1]) {
		return false
	}
	for i := 0; i < len(l); i++ {
		if !alnum(l[i]) && l[i] != '-' {
			return false
		}
	}
	return true
}

func validName(n string) bool {
	if n == "" || !alnum(n[0]) || !alnum(n[len(n)-1]) {
		return false
	}
	for i := 0; i < len(n); i++ {
		if !alnum(n[i]) && n[i] != '-' && n[i] != '_' && n[i] != '.' {
			return false
		}
	}
	return true
}

// fold is the form under which the host takes two keys for the same one
// (abi/ABI.md section 8.2): "_" and "-" dropped, each character replaced
// by the least of its Unicode case-folding orbit (s, S and ſ are one).
func fold(k string) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(k, "\uFFFD") {
		if r == '_' || r == '-' {
			continue
		}
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// checkValue refuses a configured value holding an object with two keys
// a decoder could take for one: the host would refuse every rewrite.
func checkValue(v json.RawMessage) error {
	d := json.NewDecoder(bytes.NewReader(v))
	type object struct {
		keys  map[string]string
		inKey bool // the next string token is a key
	}
	var stack []*object
	for {
		t, err := d.Token()
		if err != nil {
			return nil // the end (the value was decoded once already)
		}
		var top *object
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t {
		case json.Delim('{'):
			stack = append(stack, &object{keys: map[string]string{}, inKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, &object{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		default:
			if top != nil && top.keys != nil && top.inKey {
				k := t.(string)
				if other, ok := top.keys[fold(k)]; ok {
					return fmt.Errorf("an object in it has the keys %q and %q, which a decoder could take for one", other, k)
				}
				top.keys[fold(k)] = k
				top.inKey = false
				continue
			}
		}
		// A value ended: in an object, a key comes next.
		if len(stack) > 0 && stack[len(stack)-1].keys != nil {
			stack[len(stack)-1].inKey = true
		}
	}
}

func addMeta(ctx guest.Context, r guest.InterceptRequest) (guest.Decision, error) {
	if err := setup(); err != nil {
		return guest.Decision{}, err // fail closed: the operator asked for these entries
	}
	params := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(r.Params)) > 0 {
		if err := json.Unmarshal(r.Params, &params); err != nil || params == nil {
			return guest.Decision{}, &guest.Error{Code: -32602, Message: r.Method + ": params are not a JSON object"}
		}
	}
	own := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &own); err != nil || own == nil {
			return guest.Decision{}, &guest.Error{Code: -32602, Message: r.Method + ": params._meta is not a JSON object"}
		}
	}
	for k := range own {
		if _, ours := folded[fold(k)]; ours {
			delete(own, k) // the operator's value, not the caller's
		}
	}
	for k, v := range meta {
		own[k] = v
	}
	b, err := marshal(own)
	if err != nil {
		return guest.Decision{}, err
	}
	params["_meta"] = b
	out, err := marshal(params)
	if err != nil {
		return guest.Decision{}, err
	}
	return guest.RewriteParams(out), nil
}

// marshal encodes v without escaping <, > and & (json.Marshal's default):
// the members of the request are sent as they came, byte for byte once
// compacted — which the host requires of the tool's name.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
