package main

import (
	"encoding/json"
	"strings"

	"github.com/snodo/snodo"
)

// MCP Apps (io.modelcontextprotocol/ui): a tool points at its HTML app, a
// ui:// resource, in _meta.ui.resourceUri; resources read --save writes
// the app's HTML to a file.

// toolUI is the app of a tool: the URI in _meta.ui.resourceUri (or the
// older _meta["ui/resourceUri"]) and whether _meta.ui.visibility leaves the
// model out. uri is "" when the tool has none, or when what the server
// gives is not a string.
func toolUI(meta json.RawMessage) (uri string, appOnly bool) {
	if len(meta) == 0 {
		return "", false
	}
	var m struct {
		UI struct {
			ResourceURI json.RawMessage `json:"resourceUri"`
			Visibility  json.RawMessage `json:"visibility"`
		} `json:"ui"`
		Flat json.RawMessage `json:"ui/resourceUri"`
	}
	if json.Unmarshal(meta, &m) != nil {
		// _meta.ui not an object: no app.
		var loose struct {
			Flat json.RawMessage `json:"ui/resourceUri"`
		}
		_ = json.Unmarshal(meta, &loose)
		m.Flat = loose.Flat
	}
	if json.Unmarshal(m.UI.ResourceURI, &uri) != nil || uri == "" {
		uri = ""
		if json.Unmarshal(m.Flat, &uri) != nil {
			uri = ""
		}
	}
	var vis []string
	if json.Unmarshal(m.UI.Visibility, &vis) == nil && vis != nil {
		appOnly = true
		for _, v := range vis {
			if v == "model" {
				appOnly = false
			}
		}
	}
	return uri, appOnly
}

// isUIResource reports whether contents are an MCP Apps HTML app: a ui://
// URI or the app MIME type.
func isUIResource(r *snodo.ResourceContents) bool {
	return strings.HasPrefix(strings.ToLower(r.URI), "ui://") || isUIMIMEType(r.MIMEType)
}

func isUIMIMEType(mt string) bool {
	return strings.EqualFold(strings.ReplaceAll(mt, " ", ""), snodo.UIMIMEType)
}

// maxAppStem bounds the part of an app's file name taken from its URI.
const maxAppStem = 40

// appFileKind is the start of the file name an app is saved under:
// "app-" and the last segment of its URI reduced to lower-case letters,
// digits, - and _ (at most 40 of them), or "app" when nothing is left.
// The server picks the URI: nothing of it but those characters reaches
// the file system, so it can name no directory, no parent, no hidden or
// device file.
func appFileKind(uri string) string {
	rest := uri
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	rest = strings.TrimRight(rest, "/")
	if i := strings.LastIndexByte(rest, '/'); i >= 0 {
		rest = rest[i+1:]
	}
	var b strings.Builder
	dash := false
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_':
		default:
			dash = true
			continue
		}
		if dash && b.Len() > 0 {
			if b.Len()+2 > maxAppStem {
				break
			}
			b.WriteByte('-')
		}
		dash = false
		if b.Len()+1 > maxAppStem {
			break
		}
		b.WriteByte(c)
	}
	stem := b.String()
	if stem == "" {
		return "app"
	}
	return "app-" + stem
}
