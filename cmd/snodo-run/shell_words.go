package main

// Splitting a shell line into words.

import (
	"strings"
)

// cutWord splits the first word off s.
func cutWord(s string) (word, rest string) {
	s = strings.TrimSpace(s)
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i+1:])
}

// words splits s into words as a POSIX shell does: blanks separate words;
// single quotes keep everything; double quotes keep everything but \" and
// \\; a backslash outside quotes escapes the next character.
func words(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, usageErr("unterminated ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, usageErr("unterminated \" in %q", s)
			}
		case c == '\\' && i+1 < len(s):
			inWord = true
			i++
			cur.WriteByte(s[i])
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// pairs checks that every word is KEY=VALUE.
func pairs(ws []string) error {
	for _, kv := range ws {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return usageErr("argument %q is not KEY=VALUE", kv)
		}
	}
	return nil
}

func noArgs(cmd, rest string) error {
	if rest != "" {
		return usageErr("%s takes no arguments, not %q", cmd, rest)
	}
	return nil
}

// ---- the commands
