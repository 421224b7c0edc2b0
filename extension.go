package snodo

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/snodo/snodo/jsonrpc"
)

// UIExtensionID is the identifier of the MCP Apps extension: interactive
// user interfaces served as ui:// resources of MIME type UIMIMEType, which
// tools point at through _meta.ui.resourceUri.
const UIExtensionID = "io.modelcontextprotocol/ui"

// UIMIMEType is the MIME type of an MCP Apps HTML resource.
const UIMIMEType = "text/html;profile=mcp-app"

// maxExtensionName bounds an extension identifier.
const maxExtensionName = 256

// checkExtensions checks and copies Options.Extensions: each settings
// compacted, nil settings as {}.
func checkExtensions(exts map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	if len(exts) == 0 {
		return nil, nil
	}
	out := make(map[string]json.RawMessage, len(exts))
	for name, settings := range exts {
		if err := checkExtension(name, settings); err != nil {
			return nil, err
		}
		if len(settings) == 0 {
			settings = json.RawMessage(`{}`)
		}
		var compact bytes.Buffer
		_ = json.Compact(&compact, settings)
		out[name] = compact.Bytes()
	}
	return out, nil
}

func checkExtension(name string, settings json.RawMessage) error {
	switch {
	case name == "":
		return protocolError(jsonrpc.CodeInvalidParams, nil, "Options.Extensions: the extension name is empty; give its identifier, such as %q", UIExtensionID)
	case len(name) > maxExtensionName:
		return protocolError(jsonrpc.CodeInvalidParams, nil, "Options.Extensions: the extension name is %d bytes long, more than the limit of %d", len(name), maxExtensionName)
	case !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }):
		return protocolError(jsonrpc.CodeInvalidParams, nil, "Options.Extensions: the extension name %q holds spaces, control or invisible characters; an identifier looks like %q", name, UIExtensionID)
	case name == tasksExtensionID:
		return protocolError(jsonrpc.CodeInvalidParams, nil, "Options.Extensions: %s is declared by the client itself on the calls that take a task (WithTask); leave it out", name)
	}
	if len(settings) == 0 {
		return nil
	}
	t := bytes.TrimSpace(settings)
	if !json.Valid(t) || len(t) == 0 || t[0] != '{' {
		return protocolError(jsonrpc.CodeInvalidParams, nil, "Options.Extensions: the settings of %s are not a JSON object; give an object such as {} or {\"mimeTypes\":[\"%s\"]}", name, UIMIMEType)
	}
	return nil
}

// extensionsMember returns the "extensions" member declaring the
// configured extensions and extra (already encoded members, such as the
// tasks extension), or "" when there are none. Names are sorted, so the
// declaration is the same on every request.
func (c *config) extensionsMember(extra ...string) string {
	if len(c.extensions) == 0 && len(extra) == 0 {
		return ""
	}
	names := make([]string, 0, len(c.extensions))
	for n := range c.extensions {
		names = append(names, n)
	}
	slices.Sort(names)
	var b []byte
	b = append(b, `"extensions":{`...)
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMember(b, n, c.extensions[n])
	}
	for i, e := range extra {
		if i > 0 || len(names) > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	b = append(b, '}')
	return string(b)
}
