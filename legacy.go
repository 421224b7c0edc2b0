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

// Subscribe asks for notifications/resources/updated for uri (legacy era
// only; 2026-07-28 uses Listen). The notifications reach the hook of
// Options.OnNotification.
func (c *Client) Subscribe(ctx context.Context, uri string, opts ...CallOption) error {
	if err := c.require("resources/subscribe"); err != nil {
		return err
	}
	return c.callTyped(ctx, "resources/subscribe", uriParams{uri}, nil, opts)
}

// Unsubscribe cancels a Subscribe (legacy era only).
func (c *Client) Unsubscribe(ctx context.Context, uri string, opts ...CallOption) error {
	if err := c.require("resources/unsubscribe"); err != nil {
		return err
	}
	return c.callTyped(ctx, "resources/unsubscribe", uriParams{uri}, nil, opts)
}
