package oauth

import (
	"net/http"
	"strings"
)

// challenge is one parsed WWW-Authenticate challenge (RFC 9110 §11.6.1).
type challenge struct {
	scheme string            // lower case
	params map[string]string // names in lower case
}

// maxChallengeBytes bounds how much of the WWW-Authenticate header is parsed.
const maxChallengeBytes = 8 << 10

// bearerChallenge returns the parameters of the first Bearer challenge in h,
// or nil when there is none.
func bearerChallenge(h http.Header) map[string]string {
	for _, c := range parseChallenges(h.Values("WWW-Authenticate")) {
		if c.scheme == "bearer" {
			return c.params
		}
	}
	return nil
}

// parseChallenges parses WWW-Authenticate header values leniently: malformed
// parts end the parse of that value instead of failing it, and at most
// maxChallengeBytes are looked at in total.
func parseChallenges(values []string) []challenge {
	var out []challenge
	budget := maxChallengeBytes
	for _, v := range values {
		if budget <= 0 {
			break
		}
		if len(v) > budget {
			v = v[:budget]
		}
		budget -= len(v)
		out = append(out, parseChallengeValue(v)...)
	}
	return out
}

func parseChallengeValue(s string) []challenge {
	var out []challenge
	p := &lexer{s: s}
	for {
		p.skipSpaceAndCommas()
		if p.done() {
			return out
		}
		scheme := p.token()
		if scheme == "" {
			return out
		}
		c := challenge{scheme: strings.ToLower(scheme), params: map[string]string{}}
		// Parameters follow, separated by commas. A token not followed by
		// '=' begins the next challenge.
		for {
			p.skipSpace()
			save := p.i
			name := p.token()
			if name == "" {
				// token68 or garbage: skip to the next comma.
				p.skipTo(',')
				if p.done() {
					break
				}
				p.i++
				continue
			}
			p.skipSpace()
			if p.done() || p.s[p.i] != '=' {
				p.i = save // start of the next challenge
				break
			}
			p.i++
			p.skipSpace()
			var val string
			if !p.done() && p.s[p.i] == '"' {
				var ok bool
				if val, ok = p.quoted(); !ok {
					out = append(out, c)
					return out
				}
			} else {
				val = p.token()
			}
			if _, dup := c.params[strings.ToLower(name)]; !dup {
				c.params[strings.ToLower(name)] = val
			}
			p.skipSpace()
			if p.done() {
				break
			}
			if p.s[p.i] != ',' {
				p.skipTo(',')
				continue
			}
			p.i++
		}
		out = append(out, c)
	}
}

type lexer struct {
	s string
	i int
}

func (p *lexer) done() bool { return p.i >= len(p.s) }

func (p *lexer) skipSpace() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *lexer) skipSpaceAndCommas() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == ',') {
		p.i++
	}
}

func (p *lexer) skipTo(c byte) {
	for !p.done() && p.s[p.i] != c {
		p.i++
	}
}

// token reads an RFC 9110 token (tchar*), plus '/' so that token68 values
// like base64 are not cut short.
func (p *lexer) token() string {
	start := p.i
	for !p.done() && isTokenChar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~/:", c) >= 0
}

// quoted reads a quoted-string starting at '"', unescaping quoted-pairs.
func (p *lexer) quoted() (string, bool) {
	p.i++ // opening quote
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		switch c {
		case '"':
			p.i++
			return b.String(), true
		case '\\':
			p.i++
			if p.done() {
				return "", false
			}
			c = p.s[p.i]
		}
		b.WriteByte(c)
		p.i++
	}
	return "", false
}
