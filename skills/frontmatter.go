package skills

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxFrontmatterNodes bounds the YAML nodes a frontmatter may expand to,
// aliases included.
const maxFrontmatterNodes = 100000

// VerifyFrontmatter checks that the YAML frontmatter of content, a
// SKILL.md, is the entry's frontmatter field by field, as the extension
// requires of a host before it loads a skill: same keys, same values
// (numbers compared as numbers, a YAML timestamp as the text written). A
// SKILL.md without frontmatter, or with YAML that does not parse, fails
// too. The error wraps ErrVerification.
func VerifyFrontmatter(s *Skill, content []byte) error {
	text, ok := frontmatterText(content)
	if !ok {
		return failure(ErrVerification, "%s does not start with a --- frontmatter block", s.URI)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return failure(ErrVerification, "the frontmatter of %s is not valid YAML: %v", s.URI, err)
	}
	budget := maxFrontmatterNodes
	var got any
	if len(doc.Content) > 0 {
		var err error
		if got, err = yamlValue(doc.Content[0], &budget, 0); err != nil {
			return failure(ErrVerification, "the frontmatter of %s: %v", s.URI, err)
		}
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return failure(ErrVerification, "the frontmatter of %s is not a YAML mapping", s.URI)
	}
	var want map[string]any
	if err := json.Unmarshal(s.Frontmatter, &want); err != nil {
		return failure(ErrInvalid, "the entry of %s: frontmatter: %v", s.URI, err)
	}
	for k, wv := range want {
		gv, ok := gm[k]
		if !ok {
			return failure(ErrVerification, "the entry of %s has frontmatter field %q, its SKILL.md does not", s.URI, k)
		}
		if !reflect.DeepEqual(normalize(gv), normalize(wv)) {
			return failure(ErrVerification, "frontmatter field %q of %s differs between its entry and its SKILL.md", k, s.URI)
		}
	}
	for k := range gm {
		if _, ok := want[k]; !ok {
			return failure(ErrVerification, "the SKILL.md of %s has frontmatter field %q, its entry does not", s.URI, k)
		}
	}
	return nil
}

// frontmatterText is the YAML between a first line "---" and the next
// line "---".
func frontmatterText(content []byte) ([]byte, bool) {
	content = bytes.TrimPrefix(content, []byte("\ufeff"))
	rest, ok := cutLine(content, "---")
	if !ok {
		return nil, false
	}
	for off := 0; off < len(rest); {
		end := bytes.IndexByte(rest[off:], '\n')
		line := rest[off:]
		if end >= 0 {
			line = rest[off : off+end]
		}
		if strings.TrimRight(string(line), " \t\r") == "---" {
			return rest[:off], true
		}
		if end < 0 {
			break
		}
		off += end + 1
	}
	return nil, false
}

// cutLine returns what follows the first line of b when that line is
// marker (trailing blanks and \r allowed).
func cutLine(b []byte, marker string) ([]byte, bool) {
	end := bytes.IndexByte(b, '\n')
	if end < 0 {
		return nil, false
	}
	if strings.TrimRight(string(b[:end]), " \t\r") != marker {
		return nil, false
	}
	return b[end+1:], true
}

// yamlValue converts n to the value JSON would have: mappings with string
// keys, sequences, strings, float64 numbers, booleans, nil. Aliases are
// followed within the node budget.
func yamlValue(n *yaml.Node, budget *int, depth int) (any, error) {
	*budget--
	if *budget < 0 {
		return nil, fmt.Errorf("more than %d YAML nodes", maxFrontmatterNodes)
	}
	if depth > 100 {
		return nil, fmt.Errorf("nested more than 100 levels deep")
	}
	switch n.Kind {
	case yaml.AliasNode:
		return yamlValue(n.Alias, budget, depth+1)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return yamlValue(n.Content[0], budget, depth+1)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a key that is not a scalar", k.Line)
			}
			v, err := yamlValue(n.Content[i+1], budget, depth+1)
			if err != nil {
				return nil, err
			}
			if _, dup := m[k.Value]; dup {
				return nil, fmt.Errorf("line %d: key %q twice", k.Line, k.Value)
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := yamlValue(c, budget, depth+1)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool", "!!int", "!!float":
			var v any
			if err := n.Decode(&v); err != nil {
				return nil, fmt.Errorf("line %d: %v", n.Line, err)
			}
			return v, nil
		}
		return n.Value, nil // strings, timestamps, binary: the text written
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
}

// normalize makes numbers float64 so that YAML's 1 and JSON's 1 compare
// equal.
func normalize(v any) any {
	switch v := v.(type) {
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case uint64:
		return float64(v)
	case float64:
		if math.IsNaN(v) {
			return "NaN"
		}
		return v
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = normalize(x)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = normalize(x)
		}
		return s
	}
	return v
}
