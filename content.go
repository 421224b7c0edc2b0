package snodo

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/snodo/snodo/internal/jsoncodec"
)

// Content is one content block of a tool result, a prompt message or a
// sampling message. Type says which, as MCP spells it: "text", "image",
// "audio", "resource_link" or "resource" (an embedded resource); the fields
// of the other types are empty.
//
// Fields this version of Snodo does not know (icons, fields of newer
// protocol versions, tool_use blocks' members) are kept in Extra, and
// MarshalJSON writes them back.
type Content struct {
	Type string `json:"type"`

	// Text is the text of a text block.
	Text string `json:"text,omitempty"`
	// Data is the base64 data of an image or audio block.
	Data string `json:"data,omitempty"`
	// MIMEType is the type of an image, audio or resource_link block.
	MIMEType string `json:"mimeType,omitempty"`

	// URI, Name, Title, Description and Size describe a resource_link.
	URI         string `json:"uri,omitempty"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Size        *int64 `json:"size,omitempty"`

	// Resource is the embedded resource of a resource block.
	Resource *ResourceContents `json:"resource,omitempty"`

	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`

	// Extra holds the members this version does not know, as received.
	Extra map[string]json.RawMessage `json:"-"`
}

type contentFields Content

var contentKnown = jsonKeys[contentFields]()

// UnmarshalJSON implements json.Unmarshaler, keeping unknown members.
func (c *Content) UnmarshalJSON(data []byte) error {
	if decodeFlatContent(data, c) {
		return nil
	}
	return decodeContentExact(data, c)
}

// decodeContentExact is Content's decoding by the codec, for every input.
func decodeContentExact(data []byte, c *Content) error {
	f, extra, err := decodeKeepingExtra[contentFields](data, contentKnown)
	if err != nil {
		return err
	}
	*c = Content(f)
	c.Extra = extra
	return nil
}

// MarshalJSON implements json.Marshaler, writing unknown members back.
func (c Content) MarshalJSON() ([]byte, error) { return encodeKeepingExtra(contentFields(c), c.Extra) }

// ResourceContents is the contents of a resource: text, or base64 blob.
// Unknown members are kept in Extra.
type ResourceContents struct {
	URI      string          `json:"uri"`
	MIMEType string          `json:"mimeType,omitempty"`
	Text     *string         `json:"text,omitempty"`
	Blob     string          `json:"blob,omitempty"`
	Meta     json.RawMessage `json:"_meta,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
}

type resourceContentsFields ResourceContents

var resourceContentsKnown = jsonKeys[resourceContentsFields]()

// UnmarshalJSON implements json.Unmarshaler, keeping unknown members.
func (r *ResourceContents) UnmarshalJSON(data []byte) error {
	f, extra, err := decodeKeepingExtra[resourceContentsFields](data, resourceContentsKnown)
	if err != nil {
		return err
	}
	*r = ResourceContents(f)
	r.Extra = extra
	return nil
}

// MarshalJSON implements json.Marshaler, writing unknown members back.
func (r ResourceContents) MarshalJSON() ([]byte, error) {
	return encodeKeepingExtra(resourceContentsFields(r), r.Extra)
}

// decodeFlatContent decodes data into c when it is a block whose members
// are all known string members (type, text, data, mimeType, uri, name,
// title, description) with plain values — no escape, no control
// character, valid UTF-8 — the common text block, without a decoder
// pass. A string is then its raw bytes, which every JSON decoder would
// give too, sharing data's memory as jsoncodec.Unmarshal does. It reports
// false, leaving c untouched, for anything else (other members, other
// values, a key spelled differently, whitespace it does not expect is
// fine but malformed input is not), which takes the exact path.
func decodeFlatContent(data []byte, c *Content) bool {
	var f Content
	i := jsoncodec.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = jsoncodec.SkipSpace(data, i+1)
	for {
		key, next, ok := plainString(data, i)
		if !ok {
			return false
		}
		i = jsoncodec.SkipSpace(data, next)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		value, next, ok := plainString(data, jsoncodec.SkipSpace(data, i+1))
		if !ok {
			return false
		}
		var dst *string
		switch string(key) {
		case "type":
			dst = &f.Type
		case "text":
			dst = &f.Text
		case "data":
			dst = &f.Data
		case "mimeType":
			dst = &f.MIMEType
		case "uri":
			dst = &f.URI
		case "name":
			dst = &f.Name
		case "title":
			dst = &f.Title
		case "description":
			dst = &f.Description
		default:
			return false
		}
		*dst = jsoncodec.String(value)
		i = jsoncodec.SkipSpace(data, next)
		if i >= len(data) {
			return false
		}
		if data[i] == '}' {
			if jsoncodec.SkipSpace(data, i+1) != len(data) {
				return false
			}
			*c = f
			return true
		}
		if data[i] != ',' {
			return false
		}
		i = jsoncodec.SkipSpace(data, i+1)
	}
}

// plainString returns the contents of the JSON string at data[i:] and the
// index past its closing quote, when it has no escape and no control
// character and is valid UTF-8: then its contents are its value.
func plainString(data []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, 0, false
	}
	ascii := true
	for j := i + 1; j < len(data); j++ {
		switch b := data[j]; {
		case b == '"':
			s = data[i+1 : j]
			if !ascii && !utf8.Valid(s) {
				return nil, 0, false
			}
			return s, j + 1, true
		case b == '\\' || b < 0x20:
			return nil, 0, false
		case b >= 0x80:
			ascii = false
		}
	}
	return nil, 0, false
}
