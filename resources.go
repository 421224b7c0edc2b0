package snodo

import (
	"context"
	"encoding/json"
	"iter"
	"time"
)

// Resource is a resource the server offers. Unknown members are kept in
// Extra.
type Resource struct {
	URI         string          `json:"uri"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MIMEType    string          `json:"mimeType,omitempty"`
	Size        *int64          `json:"size,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
}

type resourceFields Resource

var resourceKnown = jsonKeys[resourceFields]()

// UnmarshalJSON implements json.Unmarshaler, keeping unknown members.
func (r *Resource) UnmarshalJSON(data []byte) error {
	f, extra, err := decodeKeepingExtra[resourceFields](data, resourceKnown)
	if err != nil {
		return err
	}
	*r = Resource(f)
	r.Extra = extra
	return nil
}

// MarshalJSON implements json.Marshaler, writing unknown members back.
func (r Resource) MarshalJSON() ([]byte, error) {
	return encodeKeepingExtra(resourceFields(r), r.Extra)
}

// ResourceTemplate is a URI template for resources (RFC 6570).
type ResourceTemplate struct {
	URITemplate string          `json:"uriTemplate"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MIMEType    string          `json:"mimeType,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// resourcesPage is one page of resources/list.
type resourcesPage struct {
	Resources  []*Resource     `json:"resources"`
	NextCursor string          `json:"nextCursor,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
	Cache
}

func (r *resourcesPage) setReceived(t time.Time) { r.Received = t }

// templatesPage is one page of resources/templates/list.
type templatesPage struct {
	ResourceTemplates []*ResourceTemplate `json:"resourceTemplates"`
	NextCursor        string              `json:"nextCursor,omitempty"`
	Meta              json.RawMessage     `json:"_meta,omitempty"`
	Cache
}

func (r *templatesPage) setReceived(t time.Time) { r.Received = t }

// ReadResourceResult is the result of resources/read.
type ReadResourceResult struct {
	Contents []*ResourceContents `json:"contents"`
	Meta     json.RawMessage     `json:"_meta,omitempty"`
	Cache
}

func (r *ReadResourceResult) setReceived(t time.Time) { r.Received = t }

// listResources returns one page of the server's resources.
func (c *Client) listResources(ctx context.Context, cursor string, opts ...CallOption) (*resourcesPage, error) {
	var res resourcesPage
	if err := c.cachedCall(ctx, "resources/list", cursor, pageParams{cursor}, &res, opts); err != nil {
		return nil, err
	}
	return &res, nil
}

// Resources iterates over all the server's resources, page by page.
func (c *Client) Resources(ctx context.Context, opts ...CallOption) iter.Seq2[*Resource, error] {
	return paginate(func(cursor string) ([]*Resource, string, error) {
		res, err := c.listResources(ctx, cursor, opts...)
		if err != nil {
			return nil, "", err
		}
		return res.Resources, res.NextCursor, nil
	})
}

// listResourceTemplates returns one page of the server's resource
// templates.
func (c *Client) listResourceTemplates(ctx context.Context, cursor string, opts ...CallOption) (*templatesPage, error) {
	var res templatesPage
	if err := c.cachedCall(ctx, "resources/templates/list", cursor, pageParams{cursor}, &res, opts); err != nil {
		return nil, err
	}
	return &res, nil
}

// ResourceTemplates iterates over all the server's resource templates.
func (c *Client) ResourceTemplates(ctx context.Context, opts ...CallOption) iter.Seq2[*ResourceTemplate, error] {
	return paginate(func(cursor string) ([]*ResourceTemplate, string, error) {
		res, err := c.listResourceTemplates(ctx, cursor, opts...)
		if err != nil {
			return nil, "", err
		}
		return res.ResourceTemplates, res.NextCursor, nil
	})
}

// ReadResource reads the resource at uri. In the 2026-07-28 era it may go
// through input rounds, as CallTool does.
func (c *Client) ReadResource(ctx context.Context, uri string, opts ...CallOption) (*ReadResourceResult, error) {
	params := struct {
		URI string `json:"uri"`
	}{uri}
	var res ReadResourceResult
	if err := c.cachedCall(ctx, "resources/read", uri, params, &res, opts); err != nil {
		return nil, err
	}
	return &res, nil
}
