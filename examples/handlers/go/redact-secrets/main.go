// Command redact-secrets is a Snodo interceptor module (ABI version 2)
// that redacts API-key-like secrets from what servers answer — tool
// results, resources, prompts, errors — before the model sees them:
//
//	{"replacement": "[REDACTED]", "prefixes": ["acme_live_"]}
//
// It replaces, in every string of the result or error (keys included),
// each token that looks like a credential:
//
//   - sk-… (OpenAI, Anthropic and many others), at least 20 characters
//     of [A-Za-z0-9_-] after the prefix;
//   - AKIA… and ASIA… (AWS access key IDs): 16 of [A-Z0-9];
//   - ghp_, gho_, ghu_, ghs_, ghr_ and github_pat_ (GitHub tokens), glpat-
//     (GitLab), xoxb-, xoxp-, xoxa-, xoxr-, xoxs- (Slack), AIza (Google),
//     each followed by at least 20 (AIza: 35) of [A-Za-z0-9_-];
//   - the configured "prefixes", followed by at least 16 of [A-Za-z0-9_-];
//
// when the prefix starts a word (the character before it is not one of
// [A-Za-z0-9_-]). A token is replaced whole by "replacement" (default
// "[REDACTED]"). Strings are read as JSON decodes them: a secret written
// with \u escapes ("\u0073k-…") is found as well, and the string is then
// written back escaped the standard way.
//
// An answer with nothing to redact passes unchanged (OK); otherwise it is
// replaced (REPLACE). It intercepts the results of every method.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o redact-secrets.wasm .
package main

import (
	"encoding/json"
	"strconv"

	"github.com/snodo/snodo/abi/guest"
)

type config struct {
	Replacement *string  `json:"replacement"`
	Prefixes    []string `json:"prefixes"`
}

type pattern struct {
	prefix string
	min    int  // characters after the prefix
	upper  bool // [A-Z0-9] only (AWS)
}

var builtin = []pattern{
	{"sk-", 20, false},
	{"AKIA", 16, true}, {"ASIA", 16, true},
	{"ghp_", 20, false}, {"gho_", 20, false}, {"ghu_", 20, false}, {"ghs_", 20, false}, {"ghr_", 20, false},
	{"github_pat_", 20, false}, {"glpat-", 20, false},
	{"xoxb-", 20, false}, {"xoxp-", 20, false}, {"xoxa-", 20, false}, {"xoxr-", 20, false}, {"xoxs-", 20, false},
	{"AIza", 35, false},
}

var (
	loaded      bool
	patterns    []pattern
	replacement = "[REDACTED]"
	// replacementJSON is replacement escaped for the inside of a JSON
	// string.
	replacementJSON string
)

func init() {
	guest.SetName("redact-secrets")
	guest.InterceptResults(redactResult)
}

func main() {}

func setup() error {
	if loaded {
		return nil
	}
	var c config
	if err := guest.Config(&c); err != nil {
		return err
	}
	patterns = append([]pattern(nil), builtin...)
	for _, p := range c.Prefixes {
		if p != "" {
			patterns = append(patterns, pattern{p, 16, false})
		}
	}
	if c.Replacement != nil {
		replacement = *c.Replacement
	}
	b, _ := json.Marshal(replacement)
	replacementJSON = string(b[1 : len(b)-1])
	for _, p := range patterns {
		first[p.prefix[0]] = true
	}
	loaded = true
	return nil
}

func redactResult(ctx guest.Context, r guest.InterceptResult) (guest.Decision, error) {
	if err := setup(); err != nil {
		return guest.Decision{}, err // fail closed: no policy, no answer
	}
	if r.Error != nil {
		out, n, err := redactJSON(r.Error)
		if err != nil || n == 0 {
			return guest.Pass(), err
		}
		var e guest.Error
		if err := json.Unmarshal(out, &e); err != nil {
			return guest.Decision{}, err
		}
		ctx.Infof("%s: %d secrets redacted from the error", r.Method, n)
		return guest.ReplaceError(&e), nil
	}
	out, n, err := redactJSON(r.Result)
	if err != nil {
		return guest.Decision{}, err
	}
	if n == 0 {
		return guest.Pass(), nil
	}
	ctx.Infof("%s: %d secrets redacted", r.Method, n)
	return guest.ReplaceResult(out), nil
}

// redactJSON copies the JSON value in, with every string's secrets
// replaced, and says how many it replaced. A string is matched on its raw
// bytes: the characters of a secret never need escaping, and an escape
// such as \n counts as the non-word character it stands for. A string
// with a \u escape, which could spell a secret's characters, is decoded
// first, and written back encoded when it changed.
func redactJSON(in []byte) ([]byte, int, error) {
	var out []byte // nil until the first change
	total, last := 0, 0
	for i := 0; i < len(in); i++ {
		if in[i] != '"' {
			continue
		}
		// A string: find its end, noting \u escapes.
		j, uesc := i+1, false
		for j < len(in) && in[j] != '"' {
			if in[j] == '\\' {
				j++
				if j < len(in) && in[j] == 'u' {
					uesc = true
				}
			}
			j++
		}
		if j >= len(in) {
			return nil, 0, strconv.ErrSyntax
		}
		var red []byte
		n := 0
		if !uesc {
			red, n = redact(in[i+1:j], true)
		} else {
			var s string
			if err := json.Unmarshal(in[i:j+1], &s); err != nil {
				return nil, 0, err
			}
			var dec []byte
			if dec, n = redact([]byte(s), false); n > 0 {
				b, _ := json.Marshal(string(dec))
				red = b[1 : len(b)-1]
			}
		}
		if n > 0 {
			out = append(out, in[last:i+1]...)
			out = append(out, red...)
			last, total = j, total+n
		}
		i = j
	}
	if total == 0 {
		return in, 0, nil
	}
	return append(out, in[last:]...), total, nil
}

func word(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// first marks the bytes a pattern starts with.
var first [256]bool

// redact replaces the secrets in s, the raw bytes of a JSON string when
// raw (escapes other than \u in it), decoded text otherwise; the
// replacement is written JSON-escaped when raw. It returns s itself when
// there are none.
func redact(s []byte, raw bool) ([]byte, int) {
	var out []byte
	n, last := 0, 0
	rep := replacement
	if raw {
		rep = replacementJSON
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if raw && c == '\\' {
			i++ // an escape: a non-word character, and the next byte is its letter
			continue
		}
		if !first[c] || (i > 0 && word(s[i-1]) && !(raw && i > 1 && s[i-2] == '\\')) {
			continue
		}
		for _, p := range patterns {
			if len(s)-i < len(p.prefix)+p.min || string(s[i:i+len(p.prefix)]) != p.prefix {
				continue
			}
			end := i + len(p.prefix)
			for end < len(s) && word(s[end]) && (!p.upper || s[end] >= 'A' && s[end] <= 'Z' || s[end] >= '0' && s[end] <= '9') {
				end++
			}
			if end-i-len(p.prefix) < p.min {
				continue
			}
			out = append(out, s[last:i]...)
			out = append(out, rep...)
			last, n = end, n+1
			i = end - 1
			break
		}
	}
	if n == 0 {
		return s, 0
	}
	return append(out, s[last:]...), n
}
