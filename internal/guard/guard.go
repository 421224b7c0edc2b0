// Package guard is the one tool guard of snodo-run's commands, shell and
// proxy: allow and deny patterns over tool names, and the reading of a
// tool's name from raw JSON, which fails closed.
package guard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/snodo/snodo/internal/safetext"
)

// Allowed applies allow and deny patterns (Match) to a tool name: a tool
// is allowed when no allow pattern is given or one matches, and no deny
// pattern matches. When any pattern is given, a name CheckName refuses is
// never allowed: the patterns compare only names that read as what they
// are.
func Allowed(allow, deny []string, name string) bool {
	if len(allow)+len(deny) > 0 && CheckName(name) != nil {
		return false
	}
	ok := len(allow) == 0
	for _, p := range allow {
		if Match(p, name) {
			ok = true
		}
	}
	for _, p := range deny {
		if Match(p, name) {
			return false
		}
	}
	return ok
}

// CheckName refuses a tool name that could show as, or be taken by a
// server for, another name than the one the patterns compare: one with a
// control or invisible character (safetext.Unsafe: C0 and C1 controls,
// the bidi controls, zero-width characters, the byte order mark, the line
// and paragraph separators …), with white space other than the space
// (U+0020), with a space at either end, or with invalid UTF-8. So
// "secret\x00", "secret\u200b" and "secret " do not pass --deny-tool secret:
// they are not listed and not called. Past these, names are compared
// byte for byte: no case folding, no Unicode normalization, no mapping of
// look-alike characters (a Cyrillic "ѕecret" is another name), which only
// an allow list covers.
func CheckName(name string) error {
	if !utf8.ValidString(name) {
		return fmt.Errorf("tool name %q is not valid UTF-8", name)
	}
	for _, r := range name {
		if safetext.Unsafe(r) || (r != ' ' && unicode.IsSpace(r)) {
			return fmt.Errorf("tool name %q holds %U, a control, invisible or white-space character: the guard compares no such name", name, r)
		}
	}
	if strings.TrimSpace(name) != name {
		return fmt.Errorf("tool name %q begins or ends with a space: the guard compares no such name", name)
	}
	return nil
}

// foldsTo reports whether a server or host that decodes JSON into a Go
// struct could take key for the field named field: encoding/json matches
// names without regard to case (Unicode simple folding: ſ is s, K (U+212A)
// is k), and encoding/json/v2's case-insensitive matching also ignores
// underscores and dashes.
func foldsTo(key, field string) bool {
	return strings.EqualFold(key, field) ||
		strings.EqualFold(strings.NewReplacer("_", "", "-", "").Replace(key), field)
}

// Match reports whether name matches the shell-style pattern: * is any
// sequence of characters ("/" included: tool names are not paths), ? any
// one character, [abc], [a-z] and [!a-z] a class; \ quotes the next
// character. A malformed pattern matches nothing.
func Match(pattern, name string) bool {
	re, err := compile(pattern)
	return err == nil && re.MatchString(name)
}

// Check reports whether pattern is well formed.
func Check(pattern string) error {
	_, err := compile(pattern)
	return err
}

func compile(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		case '\\':
			if i+1 == len(pattern) {
				return nil, errors.New("pattern ends with a backslash")
			}
			i++
			b.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
		case '[':
			end := strings.IndexByte(pattern[i+1:], ']')
			if end < 0 {
				return nil, errors.New("unclosed [ in pattern")
			}
			class := pattern[i+1 : i+1+end]
			i += end + 1
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`)$`)
	return regexp.Compile(b.String())
}

// ToolName is the name of the tool a tools/call with params calls, for
// the guard. It fails closed: params must be an object with exactly one
// key "name" whose value is a string, and no other key that a Go decoder
// could take for it (foldsTo: "NAME", "na_me"; a server that decodes into
// a Go struct with encoding/json matches keys without regard to case, and
// takes the last duplicate).
func ToolName(params json.RawMessage) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(params))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return "", errors.New("tools/call params are not an object")
	}
	name, found := "", false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", errors.New("tools/call params are not valid JSON")
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", errors.New("tools/call params are not valid JSON")
		}
		if !foldsTo(key, "name") {
			continue
		}
		if key != "name" {
			return "", fmt.Errorf("tools/call params have a key %q: only \"name\" names the tool", key)
		}
		if found {
			return "", errors.New(`tools/call params have "name" twice`)
		}
		// null decodes into a string without an error: only a JSON string
		// names a tool.
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &name) != nil {
			return "", fmt.Errorf(`tools/call params have a "name" that is not a string (%s)`, v)
		}
		found = true
	}
	if !found {
		return "", errors.New(`tools/call params have no "name": the guard cannot tell which tool it calls`)
	}
	return name, nil
}

// FilterTools applies the guard to a tools/list result: a tool allow
// refuses, whose name CheckName refuses, or whose name cannot be told for
// sure, is left out. The result goes out with exactly one "tools" key, the
// one encoding/json reads (the last); every other key a Go decoder could
// take for it ("Tools", "toolſ", "to_ols") is dropped, so that a host
// reading the first or the last duplicate, case-sensitively or not, sees
// the filtered list. A result that cannot be read is replaced by an empty
// list.
func FilterTools(result json.RawMessage, allow func(string) bool) json.RawMessage {
	var res map[string]json.RawMessage
	var tools []json.RawMessage
	if json.Unmarshal(result, &res) != nil || json.Unmarshal(res["tools"], &tools) != nil {
		return json.RawMessage(`{"tools":[]}`)
	}
	for k := range res {
		if k != "tools" && foldsTo(k, "tools") {
			delete(res, k)
		}
	}
	kept := make([]json.RawMessage, 0, len(tools))
	for _, t := range tools {
		if name, err := ToolName(t); err == nil && CheckName(name) == nil && allow(name) {
			kept = append(kept, t)
		}
	}
	res["tools"], _ = json.Marshal(kept)
	out, _ := json.Marshal(res)
	return out
}
