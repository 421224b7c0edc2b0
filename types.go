package snodo

import (
	"encoding/json"
	"time"
)

// Implementation names a client or server: its name and version, with
// optional display fields.
type Implementation struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	WebsiteURL  string `json:"websiteUrl,omitempty"`
}

// ServerCapabilities is what a server says it offers. A nil member means
// the capability is absent; ListChanged says the server sends the list's
// list_changed notifications, Subscribe that it takes resources/subscribe.
// Raw is the capabilities object as received.
type ServerCapabilities struct {
	Tools *struct {
		ListChanged bool `json:"listChanged,omitempty"`
	} `json:"tools,omitempty"`
	Prompts *struct {
		ListChanged bool `json:"listChanged,omitempty"`
	} `json:"prompts,omitempty"`
	Resources *struct {
		Subscribe   bool `json:"subscribe,omitempty"`
		ListChanged bool `json:"listChanged,omitempty"`
	} `json:"resources,omitempty"`
	Logging      json.RawMessage            `json:"logging,omitempty"`
	Completions  json.RawMessage            `json:"completions,omitempty"`
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
	Extensions   map[string]json.RawMessage `json:"extensions,omitempty"`
	Raw          json.RawMessage            `json:"-"`
}

func decodeCapabilities(raw json.RawMessage) (ServerCapabilities, error) {
	var caps ServerCapabilities
	if len(raw) == 0 || string(raw) == "null" {
		return caps, nil
	}
	if err := unmarshalOnce(raw, &caps); err != nil {
		return caps, err
	}
	caps.Raw = raw
	return caps, nil
}

// Cache holds the caching hints of a result (2026-07-28): how long it may
// be considered fresh and who may share it. See the specification's
// server/utilities/caching.
type Cache struct {
	// TTLMs is the server's ttlMs, nil when absent.
	TTLMs *int64 `json:"ttlMs,omitempty"`
	// Scope is "public", "private", or "" when absent.
	Scope string `json:"cacheScope,omitempty"`
	// Received is when the client received the result.
	Received time.Time `json:"-"`
}

// TTL returns how long the result may be considered fresh: 0 when the hint
// is absent or negative, as the specification says.
func (c Cache) TTL() time.Duration {
	if c.TTLMs == nil || *c.TTLMs <= 0 {
		return 0
	}
	return time.Duration(*c.TTLMs) * time.Millisecond
}

// Fresh reports whether the result is still fresh at now.
func (c Cache) Fresh(now time.Time) bool {
	return now.Before(c.Received.Add(c.TTL()))
}

// LogLevel is the severity of a server log message, one of the eight of
// RFC 5424 as MCP spells them, least severe first: "debug", "info",
// "notice", "warning", "error", "critical", "alert", "emergency". (Logging
// is deprecated in the 2026-07-28 revision, and still MCP.)
type LogLevel string

// LogMessage is a notifications/message from the server.
type LogMessage struct {
	Level  LogLevel        `json:"level"`
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data,omitempty"`
}

// Progress is a notifications/progress for a call made WithProgress.
type Progress struct {
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total,omitempty"`
	Message  string   `json:"message,omitempty"`
}
