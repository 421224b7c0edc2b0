package snodo

import "context"

// Ping checks that the server answers (legacy era only: 2026-07-28 has no
// ping).
func (c *Client) Ping(ctx context.Context, opts ...CallOption) error {
	if err := c.require("ping"); err != nil {
		return err
	}
	return c.callTyped(ctx, "ping", nil, nil, opts)
}

// SetLogLevel asks the server for log messages at or above level for the
// rest of the connection (legacy era only; 2026-07-28 asks per request,
// with WithLogLevel).
func (c *Client) SetLogLevel(ctx context.Context, level LogLevel, opts ...CallOption) error {
	if err := c.require("logging/setLevel"); err != nil {
		return err
	}
	return c.useLogLevel(ctx, level, true, opts...)
}

type uriParams struct {
	URI string `json:"uri"`
}
