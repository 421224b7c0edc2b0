package guest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// ElicitRequest is the params of elicitation/create (MCP 2025-06-18 and
// later, and inputRequests entries of 2026-07-28).
type ElicitRequest struct {
	// Mode is "form" (also when absent) or "url".
	Mode    string `json:"mode,omitempty"`
	Message string `json:"message"`
	// RequestedSchema describes the form's fields (form mode).
	RequestedSchema Schema `json:"requestedSchema"`
	// URL and ElicitationID are set in url mode.
	URL           string          `json:"url,omitempty"`
	ElicitationID string          `json:"elicitationId,omitempty"`
	Meta          json.RawMessage `json:"_meta,omitempty"`
}

// Schema is the restricted JSON Schema of an elicitation form: an object
// of primitive properties.
type Schema struct {
	Type       string     `json:"type"`
	Properties Properties `json:"properties,omitempty"`
	Required   []string   `json:"required,omitempty"`
}

// Properties are the fields of an elicitation form, in the order the
// request lists them (the order a form shows them in). In JSON they are
// an object, as in the request; a name given twice keeps its first place
// and its last schema, as a JSON object decoded into a map would.
type Properties []Property

// Property is one field of an elicitation form: its name and its schema.
type Property struct {
	Name string `json:"-"`
	PropertySchema
}

// Get returns the schema of the field called name.
func (ps Properties) Get(name string) (PropertySchema, bool) {
	for i := range ps {
		if ps[i].Name == name {
			return ps[i].PropertySchema, true
		}
	}
	return PropertySchema{}, false
}

// PropertySchema is one field of an elicitation form.
type PropertySchema struct {
	Type        string          `json:"type"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	Default     json.RawMessage `json:"default,omitempty"`
	Enum        []string        `json:"enum,omitempty"`
	Format      string          `json:"format,omitempty"`
	Minimum     *float64        `json:"minimum,omitempty"`
	Maximum     *float64        `json:"maximum,omitempty"`
}

// ElicitResult answers an elicitation.
type ElicitResult struct {
	// Action is "accept", "decline" or "cancel".
	Action string `json:"action"`
	// Content holds the form's values when the action is "accept":
	//
	//	guest.ElicitResult{Action: guest.Accept, Content: guest.Fields{
	//		guest.String("name", "Ada"),
	//		guest.Integer("age", 36),
	//	}}
	Content Fields `json:"content,omitempty"`
}

// Fields is the content of an accepted elicitation: each field of the
// form with its value, written in the order given. In JSON they are an
// object; a name given twice is an error when the result is encoded.
type Fields []Field

// Field is one value of an accepted elicitation form. Make one with
// String, Number, Integer, Bool or Strings: MCP allows those five kinds
// of value in a form, and no other.
type Field struct {
	Name  string
	Value Value
}

// Get returns the value of the field called name.
func (fs Fields) Get(name string) (Value, bool) {
	for i := range fs {
		if fs[i].Name == name {
			return fs[i].Value, true
		}
	}
	return Value{}, false
}

// Kind is the kind of a Value.
type Kind uint8

// The kinds of value of an elicitation form. KindStrings is a
// multiple-choice field's answer (MCP 2025-11-25): an array of strings.
const (
	KindNone Kind = iota // the zero Value, which encodes as null
	KindString
	KindNumber
	KindInteger
	KindBool
	KindStrings
)

// Value is the value of a form field: a string, a number, an integer, a
// boolean or a list of strings, held without an allocation of its own.
type Value struct {
	kind Kind
	s    string
	n    uint64 // a float64's bits, an int64, or a bool (0 or 1)
	list []string
}

// String is a string field.
func String(name, v string) Field { return Field{name, Value{kind: KindString, s: v}} }

// Number is a number field. NaN and the infinities are not JSON: a result
// holding one fails to encode.
func Number(name string, v float64) Field {
	return Field{name, Value{kind: KindNumber, n: math.Float64bits(v)}}
}

// Integer is an integer field.
func Integer(name string, v int64) Field { return Field{name, Value{kind: KindInteger, n: uint64(v)}} }

// Bool is a boolean field.
func Bool(name string, v bool) Field {
	var n uint64
	if v {
		n = 1
	}
	return Field{name, Value{kind: KindBool, n: n}}
}

// Strings is a field of several strings: the choices of a multiple-choice
// field (a nil v encodes as []).
func Strings(name string, v []string) Field {
	return Field{name, Value{kind: KindStrings, list: v}}
}

// Kind returns the value's kind.
func (v Value) Kind() Kind { return v.kind }

// Any returns the value as a string, float64, int64, bool or []string
// (nil for the zero Value).
func (v Value) Any() any {
	switch v.kind {
	case KindString:
		return v.s
	case KindNumber:
		return math.Float64frombits(v.n)
	case KindInteger:
		return int64(v.n)
	case KindBool:
		return v.n != 0
	case KindStrings:
		if v.list == nil {
			return []string{}
		}
		return v.list
	}
	return nil
}

// Elicitation actions.
const (
	Accept  = "accept"
	Decline = "decline"
	Cancel  = "cancel"
)

// SamplingRequest is the params of sampling/createMessage.
type SamplingRequest struct {
	Messages         []SamplingMessage `json:"messages"`
	SystemPrompt     string            `json:"systemPrompt,omitempty"`
	MaxTokens        int               `json:"maxTokens"`
	Temperature      *float64          `json:"temperature,omitempty"`
	StopSequences    []string          `json:"stopSequences,omitempty"`
	IncludeContext   string            `json:"includeContext,omitempty"`
	ModelPreferences json.RawMessage   `json:"modelPreferences,omitempty"`
	Metadata         json.RawMessage   `json:"metadata,omitempty"`
	// Tools and ToolChoice are set on a request with tool use (MCP
	// 2025-11-25 and later), which only a module that called
	// DeclareSamplingTools receives.
	Tools      json.RawMessage `json:"tools,omitempty"`
	ToolChoice json.RawMessage `json:"toolChoice,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
}

// SamplingMessage is one message of a sampling request. Content is a
// content block, or (MCP 2025-11-25) an array of them.
type SamplingMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// Text returns the text of the message's text content blocks, joined.
func (m SamplingMessage) Text() string {
	content := bytes.Clone(m.Content) // the strings decoded share its memory
	var one TextContent
	d := decoder{data: content}
	d.ws()
	if d.done(one.decodeJSON(&d)) == nil && one.Type == "text" {
		return one.Text
	}
	var many []TextContent
	d = decoder{data: content, where: "SamplingMessage"}
	d.ws()
	err := d.done(d.textsField(&many))
	if err != nil {
		return ""
	}
	var s string
	for _, c := range many {
		if c.Type == "text" {
			s += c.Text
		}
	}
	return s
}

// TextContent is a text content block.
type TextContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Text returns a text content block.
func Text(s string) TextContent { return TextContent{Type: "text", Text: s} }

// SamplingResult answers sampling/createMessage.
type SamplingResult struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	Model      string `json:"model"`
	StopReason string `json:"stopReason,omitempty"`
}

// RootsRequest is the params of roots/list.
type RootsRequest struct {
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// RootsResult answers roots/list.
type RootsResult struct {
	Roots []Root `json:"roots"`
}

// Root is a root the client exposes: a file:// URI and an optional name.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// Progress is the params of one notifications/progress.
type Progress struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      float64         `json:"progress"`
	Total         *float64        `json:"total,omitempty"`
	Message       string          `json:"message,omitempty"`
}

// Event is one event of a subscription.
type Event struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// Action is what a progress or event consumer wants next.
type Action int

const (
	// Continue lets the request go on, or keeps the subscription.
	Continue Action = iota
	// Stop cancels the request (progress) or ends the subscription (events).
	Stop
)

// Error is a JSON-RPC error a handler answers with. A handler that returns
// any other error is answered -32603 with the error's text.
type Error struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("error %d: %s", e.Code, e.Message) }

// Errorf returns an *Error with code -32603 and a formatted message.
func Errorf(format string, args ...any) *Error {
	return &Error{Code: -32603, Message: fmt.Sprintf(format, args...)}
}
