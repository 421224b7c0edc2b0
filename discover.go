package snodo

import (
	"context"
	"encoding/json"
	"time"
)

// DiscoverResult is the result of server/discover (2026-07-28).
type DiscoverResult struct {
	SupportedVersions []string           `json:"supportedVersions"`
	Capabilities      ServerCapabilities `json:"-"`
	Instructions      string             `json:"instructions,omitempty"`
	// ServerInfo is _meta["io.modelcontextprotocol/serverInfo"].
	ServerInfo Implementation  `json:"-"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
	Cache
}

func decodeDiscover(raw json.RawMessage) (*DiscoverResult, error) {
	var res struct {
		DiscoverResult
		RawCapabilities json.RawMessage `json:"capabilities"`
	}
	if err := unmarshalOnce(raw, &res); err != nil {
		return nil, err
	}
	out := res.DiscoverResult
	caps, err := decodeCapabilities(res.RawCapabilities)
	if err != nil {
		return nil, err
	}
	out.Capabilities = caps
	if len(out.Meta) > 0 {
		var meta struct {
			ServerInfo Implementation `json:"io.modelcontextprotocol/serverInfo"`
		}
		if err := unmarshalOnce(out.Meta, &meta); err == nil {
			out.ServerInfo = meta.ServerInfo
		}
	}
	out.Received = time.Now()
	return &out, nil
}

// Discover calls server/discover: the server's supported versions,
// capabilities, identity and instructions (2026-07-28 only).
func (c *Client) Discover(ctx context.Context, opts ...CallOption) (*DiscoverResult, error) {
	if err := c.require("server/discover"); err != nil {
		return nil, err
	}
	raw, err := c.call(ctx, "server/discover", nil, c.callConfig(opts))
	if err != nil {
		return nil, err
	}
	res, err := decodeDiscover(raw)
	if err != nil {
		return nil, badResult("server/discover", err)
	}
	return res, nil
}
