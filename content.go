package snodo

import "encoding/json"

// Content is one content block of a tool result, a prompt message or a
// sampling message: text, image, audio, resource_link or resource
// (embedded). Type says which; the fields of the other types are empty.
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

// Content types.
const (
	ContentText         = "text"
	ContentImage        = "image"
	ContentAudio        = "audio"
	ContentResourceLink = "resource_link"
	ContentResource     = "resource"
)

type contentFields Content

var contentKnown = []string{"type", "text", "data", "mimeType", "uri", "name", "title", "description", "size", "resource", "annotations", "_meta"}

// UnmarshalJSON implements json.Unmarshaler, keeping unknown members.
func (c *Content) UnmarshalJSON(data []byte) error {
	var f contentFields
	if err := unmarshal(data, &f); err != nil {
		return err
	}
	extra, err := splitExtra(data, contentKnown...)
	if err != nil {
		return err
	}
	*c = Content(f)
	c.Extra = extra
	return nil
}

// MarshalJSON implements json.Marshaler, writing unknown members back.
func (c Content) MarshalJSON() ([]byte, error) {
	b, err := marshal(contentFields(c))
	if err != nil {
		return nil, err
	}
	return appendExtra(b, c.Extra)
}

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

var resourceContentsKnown = []string{"uri", "mimeType", "text", "blob", "_meta"}

// UnmarshalJSON implements json.Unmarshaler, keeping unknown members.
func (r *ResourceContents) UnmarshalJSON(data []byte) error {
	var f resourceContentsFields
	if err := unmarshal(data, &f); err != nil {
		return err
	}
	extra, err := splitExtra(data, resourceContentsKnown...)
	if err != nil {
		return err
	}
	*r = ResourceContents(f)
	r.Extra = extra
	return nil
}

// MarshalJSON implements json.Marshaler, writing unknown members back.
func (r ResourceContents) MarshalJSON() ([]byte, error) {
	b, err := marshal(resourceContentsFields(r))
	if err != nil {
		return nil, err
	}
	return appendExtra(b, r.Extra)
}
