package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/abi"
	"github.com/snodo/snodo/internal/guard"
	"github.com/snodo/snodo/internal/safetext"
	"github.com/snodo/snodo/runtime"
)

// print writes v to stdout in the chosen format.
func (a *app) print(v any) error {
	if err := a.saveContent(v); err != nil {
		return err
	}
	switch a.settings.output {
	case "text":
		return renderText(a.stdout, v)
	case "pretty":
		b, err := marshal(v)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, b, "", "  "); err != nil {
			return err
		}
		buf.WriteByte('\n')
		_, err = a.stdout.Write(buf.Bytes())
		return err
	default:
		return a.printLine(v)
	}
}

// printLine writes v as one line of JSON (listen's events in every format).
func (a *app) printLine(v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(append(b, '\n'))
	return err
}

// marshal is v as one line of JSON, for printing: the control, bidi and
// invisible characters of a server's text are written as \u escapes
// (safetext.JSON), which keeps the value and keeps them off the terminal.
func marshal(v any) ([]byte, error) {
	if raw, ok := v.(json.RawMessage); ok {
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, err
		}
		return safetext.JSON(buf.Bytes()), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return safetext.JSON(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// textRenderer is output that renders itself as text (tasks.go).
type textRenderer interface{ renderText(w io.Writer) error }

// renderText writes v for people: tool lists as name, signature and
// description; content blocks readable; anything else as indented JSON.
func renderText(w io.Writer, v any) error {
	w = termSafeWriter{w}
	switch v := v.(type) {
	case textRenderer:
		return v.renderText(w)
	case toolList:
		for _, t := range v.Tools {
			fmt.Fprintf(w, "%s(%s)\n", t.Name, signatureOf(t.InputSchema))
			if d := oneLine(t.Description); d != "" {
				fmt.Fprintf(w, "    %s\n", d)
			}
			if uri, appOnly := toolUI(t.Meta); uri != "" {
				note := ""
				if appOnly {
					note = " (app only)"
				}
				fmt.Fprintf(w, "    ui: %s%s\n", oneLine(uri), note)
			}
		}
		return nil
	case *snodo.CallToolResult:
		if v.IsError {
			fmt.Fprintln(w, "error:")
		}
		writeContent(w, v.Content)
		if len(v.Content) == 0 && len(v.StructuredContent) > 0 {
			return writeIndented(w, v.StructuredContent)
		}
		return nil
	case resourceList:
		for _, r := range v.Resources {
			fmt.Fprintf(w, "%s\t%s", r.URI, r.Name)
			if r.MIMEType != "" {
				fmt.Fprintf(w, " (%s)", r.MIMEType)
			}
			fmt.Fprintln(w)
			if d := oneLine(r.Description); d != "" {
				fmt.Fprintf(w, "    %s\n", d)
			}
		}
		return nil
	case templateList:
		for _, r := range v.ResourceTemplates {
			fmt.Fprintf(w, "%s\t%s\n", r.URITemplate, r.Name)
			if d := oneLine(r.Description); d != "" {
				fmt.Fprintf(w, "    %s\n", d)
			}
		}
		return nil
	case *snodo.ReadResourceResult:
		for _, c := range v.Contents {
			writeResource(w, c)
		}
		return nil
	case promptList:
		renderPrompts(w, v)
		return nil
	case *snodo.GetPromptResult:
		if v.Description != "" {
			fmt.Fprintf(w, "%s\n\n", v.Description)
		}
		for _, m := range v.Messages {
			fmt.Fprintf(w, "[%s]\n", m.Role)
			writeContent(w, []snodo.Content{m.Content})
		}
		return nil
	case *snodo.CompleteResult:
		for _, s := range v.Completion.Values {
			fmt.Fprintln(w, s)
		}
		return nil
	case discoverOutput:
		renderDiscover(w, v)
		return nil
	case *runtime.ModuleReport:
		renderModuleReport(w, v)
		return nil
	}
	b, err := marshal(v)
	if err != nil {
		return err
	}
	return writeIndented(w, b)
}

// renderPrompts writes prompts as name(arguments), optional ones with a ?.
func renderPrompts(w io.Writer, v promptList) {
	for _, p := range v.Prompts {
		args := make([]string, 0, len(p.Arguments))
		for _, a := range p.Arguments {
			if a.Required {
				args = append(args, a.Name)
			} else {
				args = append(args, a.Name+"?")
			}
		}
		fmt.Fprintf(w, "%s(%s)\n", p.Name, strings.Join(args, ", "))
		if d := oneLine(p.Description); d != "" {
			fmt.Fprintf(w, "    %s\n", d)
		}
	}
}

// renderDiscover writes the server's identity, capabilities and versions.
func renderDiscover(w io.Writer, v discoverOutput) {
	fmt.Fprintf(w, "%s %s (%s era, protocol %s)\n", v.ServerInfo.Name, v.ServerInfo.Version, v.Era, v.ProtocolVersion)
	var caps []string
	if v.Capabilities.Tools != nil {
		caps = append(caps, "tools")
	}
	if v.Capabilities.Prompts != nil {
		caps = append(caps, "prompts")
	}
	if v.Capabilities.Resources != nil {
		caps = append(caps, "resources")
	}
	if v.Capabilities.Completions != nil {
		caps = append(caps, "completions")
	}
	if v.Capabilities.Logging != nil {
		caps = append(caps, "logging")
	}
	fmt.Fprintf(w, "capabilities: %s\n", strings.Join(caps, ", "))
	if len(v.Capabilities.Extensions) > 0 {
		exts := make([]string, 0, len(v.Capabilities.Extensions))
		for name := range v.Capabilities.Extensions {
			exts = append(exts, name)
		}
		slices.Sort(exts)
		fmt.Fprintf(w, "extensions: %s\n", strings.Join(exts, ", "))
	}
	if len(v.SupportedVersions) > 0 {
		fmt.Fprintf(w, "supported versions: %s\n", strings.Join(v.SupportedVersions, ", "))
	}
	if v.Instructions != "" {
		fmt.Fprintf(w, "instructions: %s\n", v.Instructions)
	}
}

// renderModuleReport writes what handlers check found in a module.
func renderModuleReport(w io.Writer, v *runtime.ModuleReport) {
	fmt.Fprintf(w, "%s (%s, %d bytes, sha256 %s)\n", v.Name, v.Path, v.Size, v.SHA256)
	fmt.Fprintf(w, "ABI version %d\n", v.Manifest.ABI)
	if len(v.Manifest.Methods) > 0 {
		fmt.Fprintf(w, "answers: %s\n", strings.Join(v.Manifest.Methods, ", "))
	}
	if v.Manifest.SamplingTools {
		fmt.Fprintln(w, "sampling with tools (sampling.tools)")
	}
	if v.Manifest.Progress {
		fmt.Fprintln(w, "consumes progress notifications")
	}
	if v.Manifest.Events {
		fmt.Fprintln(w, "consumes subscription events")
	}
	if ic := v.Manifest.Intercept; ic != nil {
		methods := "every method"
		if ic.Methods != nil {
			methods = strings.Join(ic.Methods, ", ")
		}
		if ic.Requests {
			fmt.Fprintf(w, "intercepts requests (%s): %s\n", abi.ExportInterceptRequest, methods)
		}
		if ic.Results {
			fmt.Fprintf(w, "intercepts results (%s): %s\n", abi.ExportInterceptResult, methods)
		}
	}
	fmt.Fprintln(w, "imports:")
	for _, s := range v.Imports {
		fmt.Fprintf(w, "  %s\n", s)
	}
	fmt.Fprintln(w, "exports:")
	for _, s := range v.Exports {
		fmt.Fprintf(w, "  %s\n", s)
	}
}

func writeIndented(w io.Writer, b []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		_, err = w.Write(append(b, '\n'))
		return err
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

func writeContent(w io.Writer, blocks []snodo.Content) {
	for _, c := range blocks {
		switch c.Type {
		case "text":
			fmt.Fprintln(w, c.Text)
		case "image", "audio":
			if p := savedPath(c.Extra); p != "" {
				fmt.Fprintf(w, "[%s %s, saved to %s]\n", c.Type, c.MIMEType, p)
				continue
			}
			fmt.Fprintf(w, "[%s %s, %d bytes base64]\n", c.Type, c.MIMEType, len(c.Data))
		case "resource_link":
			fmt.Fprintf(w, "[link %s %s]\n", c.URI, c.Name)
		case "resource":
			if c.Resource != nil {
				writeResource(w, c.Resource)
			}
		default:
			b, _ := marshal(c)
			fmt.Fprintf(w, "[%s] %s\n", c.Type, b)
		}
	}
}

func writeResource(w io.Writer, c *snodo.ResourceContents) {
	switch {
	case c.Text != nil:
		fmt.Fprintf(w, "--- %s\n%s\n", c.URI, *c.Text)
	case savedPath(c.Extra) != "":
		fmt.Fprintf(w, "--- %s [%s, saved to %s]\n", c.URI, c.MIMEType, savedPath(c.Extra))
	default:
		fmt.Fprintf(w, "--- %s [%s, %d bytes base64]\n", c.URI, c.MIMEType, len(c.Blob))
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func firstText(blocks []snodo.Content) string {
	for _, c := range blocks {
		if c.Type == "text" {
			return c.Text
		}
	}
	return "(no text)"
}

// signatureOf renders a tool's input schema as "name: type, opt?: type".
func signatureOf(schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return ""
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	// Required arguments first, each group in name order.
	slices.SortStableFunc(names, func(x, y string) int {
		rx, ry := slices.Contains(s.Required, x), slices.Contains(s.Required, y)
		switch {
		case rx && !ry:
			return -1
		case ry && !rx:
			return 1
		}
		return 0
	})
	parts := make([]string, 0, len(names))
	for _, n := range names {
		t := "any"
		switch v := s.Properties[n].Type.(type) {
		case string:
			t = v
		case []any:
			ts := make([]string, 0, len(v))
			for _, x := range v {
				ts = append(ts, fmt.Sprint(x))
			}
			t = strings.Join(ts, "|")
		}
		if slices.Contains(s.Required, n) {
			parts = append(parts, n+": "+t)
		} else {
			parts = append(parts, n+"?: "+t)
		}
	}
	return strings.Join(parts, ", ")
}

// ---- arguments

// objectArg parses a JSON object given inline or as @FILE; "" is {}.
func objectArg(value, flag string) (map[string]any, error) {
	out := map[string]any{}
	if value == "" {
		return out, nil
	}
	raw, err := jsonArg(value)
	if err != nil {
		return nil, usageErr("%s: %v", flag, err)
	}
	if err := uniqueKeys(raw); err != nil {
		return nil, usageErr("%s: %v", flag, err)
	}
	if err := json.Unmarshal(raw, &out); err != nil || out == nil {
		return nil, usageErr("%s must be a JSON object", flag)
	}
	return out, nil
}

// uniqueKeys refuses JSON with an object that has a key twice: parsers
// disagree on which one counts (encoding/json and JSON.parse take the last,
// others the first), so what the guard checks could differ from what a
// server acts on.
func uniqueKeys(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key := k.(string)
				if seen[key] {
					return fmt.Errorf("key %q appears twice in one object", key)
				}
				seen[key] = true
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	return walk()
}

// setPairs sets KEY=VALUE pairs in args, typed by the input schema: a
// string property takes VALUE as it is; any other property, or a key the
// schema does not know, parses VALUE as JSON when it is valid JSON.
func setPairs(args map[string]any, pairs []string, schema json.RawMessage) error {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usageErr("--arg wants KEY=VALUE, not %q", kv)
		}
		if t, ok := s.Properties[k].Type.(string); ok && t == "string" {
			args[k] = v
			continue
		}
		var parsed any
		if err := json.Unmarshal([]byte(v), &parsed); err == nil {
			args[k] = parsed
		} else {
			args[k] = v
		}
	}
	return nil
}

// ---- guard

// toolAllowed applies the guard: a tool is allowed when no allow pattern is
// set or one matches its name, and no deny pattern matches it; with any
// pattern set, a name with a control or invisible character is not
// (guard.Allowed).
func (a *app) toolAllowed(name string) bool {
	return guard.Allowed(a.settings.allow, a.settings.deny, name)
}

// guardCall is the guard's refusal of a call of the tool name, or nil: a
// name the guard does not compare (guard.CheckName: a control or
// invisible character in it) is refused with its reason, as is a name the
// patterns refuse.
func (a *app) guardCall(name string) error {
	if len(a.settings.allow) == 0 && len(a.settings.deny) == 0 {
		return nil
	}
	if err := guard.CheckName(name); err != nil {
		return &cliError{code: exitUsage, kind: "guard", err: fmt.Errorf("refused by the guard: %v", err)}
	}
	if !a.toolAllowed(name) {
		return &cliError{code: exitUsage, kind: "guard", err: fmt.Errorf("tool %q is not allowed by the guard (allow: %v, deny: %v)", name, a.settings.allow, a.settings.deny)}
	}
	return nil
}

// guardRawCall applies the guard to a raw request (call, or request in the
// shell): a tools/call whose tool the guard refuses, or whose name it
// cannot tell for sure, is a usage error.
func (a *app) guardRawCall(method string, params map[string]any) error {
	if method != "tools/call" || (len(a.settings.allow) == 0 && len(a.settings.deny) == 0) {
		return nil
	}
	raw, _ := json.Marshal(params)
	name, err := guard.ToolName(raw)
	if err != nil {
		return &cliError{code: exitUsage, kind: "guard", err: fmt.Errorf("refused by the guard: %v", err)}
	}
	return a.guardCall(name)
}

// filterToolList applies the guard to a raw tools/list result.
func (a *app) filterToolList(raw json.RawMessage) json.RawMessage {
	if len(a.settings.allow) == 0 && len(a.settings.deny) == 0 {
		return raw
	}
	return guard.FilterTools(raw, a.toolAllowed)
}
