package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/snodo/snodo/runtime"
)

// toolArguments completes the arguments of tools call NAME: --arg pairs
// typed by the tool's input schema, set over --args, then the whole object
// checked against the schema. With noValidate the pairs are typed as
// before any checking existed (a string property takes VALUE as it is,
// anything else parses as JSON when it can) and nothing is checked.
func (a *app) toolArguments(ctx context.Context, rt *runtime.Runner, name string, args map[string]any, pairs []string, noValidate bool) error {
	if noValidate && len(pairs) == 0 {
		return nil
	}
	var schema json.RawMessage
	found := false
	tools, err := a.listTools(ctx, rt)
	if err != nil {
		if !noValidate {
			a.logger.Warn("the tool list could not be read: the arguments are sent unchecked", "err", err)
		}
	} else {
		for _, t := range tools {
			if t.Name == name {
				schema, found = t.InputSchema, true
			}
		}
	}
	if noValidate || !found || len(bytes.TrimSpace(schema)) == 0 {
		// Unknown tool: the server says so; no schema: nothing to check.
		return setPairs(args, pairs, schema)
	}
	is, err := compileInputSchema(schema)
	if err != nil {
		return usageErr("the input schema of tool %s cannot be used (%v): --no-validate sends the arguments unchecked", name, err)
	}
	if err := is.setPairs(name, args, pairs); err != nil {
		return err
	}
	return is.check(name, args)
}

// inputSchema is a tool's compiled input schema.
type inputSchema struct {
	root *jsonschema.Schema
}

// noLoader refuses every $ref outside the schema itself: a server's schema
// must not make snodo-run read local files or fetch URLs.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("refusing to load %s: a tool's input schema must be self-contained", url)
}

const inputSchemaURL = "snodo:///tool/input-schema.json"

func compileInputSchema(raw json.RawMessage) (*inputSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource(inputSchemaURL, doc); err != nil {
		return nil, err
	}
	root, err := c.Compile(inputSchemaURL)
	if err != nil {
		return nil, err
	}
	return &inputSchema{root: root}, nil
}

// schemas is s and what it is made of for the purpose of naming and typing
// properties: its $ref and the members of its allOf, anyOf and oneOf,
// recursively.
func schemas(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	var walk func(s *jsonschema.Schema)
	walk = func(s *jsonschema.Schema) {
		if s == nil || slices.Contains(out, s) {
			return
		}
		out = append(out, s)
		walk(s.Ref)
		for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
			for _, m := range list {
				walk(m)
			}
		}
	}
	walk(s)
	return out
}

// property is the schema of the property name, if the schema names it.
func (is *inputSchema) property(name string) (*jsonschema.Schema, bool) {
	for _, s := range schemas(is.root) {
		if p, ok := s.Properties[name]; ok {
			return p, true
		}
	}
	return nil, false
}

// names are the properties the schema names, sorted.
func (is *inputSchema) names() []string {
	var out []string
	for _, s := range schemas(is.root) {
		for n := range s.Properties {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// allows reports whether the schema takes a property it does not name,
// and the schema of its value when it says: only when it says so, with
// additionalProperties true or a schema, or a matching patternProperties.
// An absent additionalProperties does not count, so that a mistyped name
// is caught rather than silently sent.
func (is *inputSchema) allows(name string) (*jsonschema.Schema, bool) {
	for _, s := range schemas(is.root) {
		for re, p := range s.PatternProperties {
			if re.MatchString(name) {
				return p, true
			}
		}
	}
	for _, s := range schemas(is.root) {
		switch ap := s.AdditionalProperties.(type) {
		case bool:
			if ap {
				return nil, true
			}
		case *jsonschema.Schema:
			if ap.Bool == nil || *ap.Bool {
				return ap, true
			}
		}
	}
	return nil, false
}

// typesOf are the JSON types a property's schema accepts (its type, or
// the types of its $ref, allOf, anyOf and oneOf members, or of its enum or
// const values); none means any.
func typesOf(p *jsonschema.Schema) []string {
	var out []string
	add := func(ts ...string) {
		for _, t := range ts {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	seen := map[*jsonschema.Schema]bool{}
	var walk func(s *jsonschema.Schema)
	walk = func(s *jsonschema.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		if s.Types != nil {
			add(s.Types.ToStrings()...)
		}
		if s.Enum != nil {
			for _, v := range s.Enum.Values {
				add(jsonType(v))
			}
		}
		if s.Const != nil {
			add(jsonType(*s.Const))
		}
		walk(s.Ref)
		for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
			for _, m := range list {
				walk(m)
			}
		}
	}
	walk(p)
	return out
}

func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return ""
}

// setPairs sets KEY=VALUE pairs in args, each VALUE typed by the schema of
// its property: as it is when the property takes strings; else a number
// for number or integer, true or false for boolean, null for null, JSON
// for object or array; any JSON value when the schema does not say. A KEY
// the schema does not name is an error unless it allows others.
func (is *inputSchema) setPairs(tool string, args map[string]any, pairs []string) error {
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usageErr("--arg wants KEY=VALUE, not %q", kv)
		}
		p, ok := is.property(k)
		if !ok {
			if p, ok = is.allows(k); !ok {
				return is.unknownArgument(tool, k)
			}
		}
		types := typesOf(p)
		val, err := coerce(v, types)
		if err != nil {
			return usageErr("--arg %s: %v", kv, err)
		}
		args[k] = val
	}
	return nil
}

// coerce types the VALUE of a --arg by the types its property accepts.
func coerce(v string, types []string) (any, error) {
	if len(types) == 0 {
		if !json.Valid([]byte(v)) || uniqueKeys([]byte(v)) != nil {
			return v, nil
		}
		dec := json.NewDecoder(strings.NewReader(v))
		dec.UseNumber() // numbers exactly as written
		var parsed any
		if dec.Decode(&parsed) != nil {
			return v, nil
		}
		return parsed, nil
	}
	if slices.Contains(types, "string") {
		return v, nil
	}
	for _, t := range types {
		switch t {
		case "integer", "number":
			n, ok := number(v)
			if !ok {
				continue
			}
			if t == "integer" {
				r, ok := new(big.Rat).SetString(string(n))
				if !ok || !r.IsInt() {
					continue
				}
			}
			return n, nil
		case "boolean":
			switch v {
			case "true":
				return true, nil
			case "false":
				return false, nil
			}
		case "null":
			if v == "null" {
				return nil, nil
			}
		case "object":
			var m map[string]any
			if uniqueKeys([]byte(v)) == nil && json.Unmarshal([]byte(v), &m) == nil && m != nil {
				return m, nil
			}
		case "array":
			var l []any
			if uniqueKeys([]byte(v)) == nil && json.Unmarshal([]byte(v), &l) == nil && l != nil {
				return l, nil
			}
		}
	}
	return nil, fmt.Errorf("%q is not %s", v, describeTypes(types))
}

// number is v as a JSON number, exactly as written.
func number(v string) (json.Number, bool) {
	if !json.Valid([]byte(v)) {
		return "", false
	}
	dec := json.NewDecoder(strings.NewReader(v))
	dec.UseNumber()
	var x any
	if dec.Decode(&x) != nil {
		return "", false
	}
	n, ok := x.(json.Number)
	return n, ok
}

func describeTypes(types []string) string {
	words := make([]string, len(types))
	for i, t := range types {
		switch t {
		case "integer":
			words[i] = "an integer"
		case "object", "array":
			words[i] = "a JSON " + t
		case "null":
			words[i] = "null"
		default:
			words[i] = "a " + t
		}
	}
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// unknownArgument is the error for an argument name the schema does not
// know: the valid names, and the closest one.
func (is *inputSchema) unknownArgument(tool, name string) error {
	valid := is.names()
	if len(valid) == 0 {
		return usageErr("tool %s takes no argument %q: its input schema names no arguments", tool, name)
	}
	msg := fmt.Sprintf("tool %s has no argument %q", tool, name)
	if best := closest(name, valid); best != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", best)
	}
	return usageErr("%s; its arguments: %s", msg, strings.Join(valid, ", "))
}

// check validates the whole arguments object against the schema; every
// top-level name must be one the schema names or allows.
func (is *inputSchema) check(tool string, args map[string]any) error {
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if _, ok := is.property(k); ok {
			continue
		}
		if _, ok := is.allows(k); !ok {
			return is.unknownArgument(tool, k)
		}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return usageErr("the arguments of tool %s: %v", tool, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return usageErr("the arguments of tool %s: %v", tool, err)
	}
	err = is.root.Validate(inst)
	var ve *jsonschema.ValidationError
	if err == nil || !errors.As(err, &ve) {
		return err
	}
	return usageErr("the arguments do not fit the input schema of tool %s: %s (--no-validate sends them anyway)", tool, strings.Join(describeValidation(ve), "; "))
}

// describeValidation is one line for each leaf of a validation error: the
// argument it is about, and what is wrong.
func describeValidation(ve *jsonschema.ValidationError) []string {
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		var line string
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			where := "missing required argument"
			if len(e.InstanceLocation) > 0 {
				where = "argument " + strings.Join(e.InstanceLocation, "/") + ": missing required property"
			}
			if len(k.Missing) > 1 {
				where += "s"
			}
			line = where + " " + strings.Join(k.Missing, ", ")
		default:
			// A leaf's Error is "at '/pointer': what is wrong".
			msg := e.Error()
			if i := strings.Index(msg, "': "); strings.HasPrefix(msg, "at '") && i > 0 {
				msg = msg[i+3:]
			}
			if len(e.InstanceLocation) == 0 {
				line = msg
			} else {
				line = "argument " + strings.Join(e.InstanceLocation, "/") + ": " + msg
			}
		}
		if !slices.Contains(out, line) {
			out = append(out, line)
		}
	}
	walk(ve)
	return out
}
