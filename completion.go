package snodo

import (
	"context"
	"encoding/json"
)

// CompletionRef says what is being completed: a prompt's argument
// (Type "ref/prompt", Name) or a resource template's (Type "ref/resource",
// URI).
type CompletionRef struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// CompleteParams are the params of completion/complete.
type CompleteParams struct {
	Ref      CompletionRef      `json:"ref"`
	Argument CompletionArgument `json:"argument"`
	// Context holds the values of arguments already resolved.
	Context *CompletionContext `json:"context,omitempty"`
}

// CompletionArgument is the argument being completed and its value so far.
// It is an alias of the unnamed struct, so either spelling builds one.
type CompletionArgument = struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CompletionContext holds the values of arguments already resolved. It is
// an alias of the unnamed struct, so either spelling builds one.
type CompletionContext = struct {
	Arguments map[string]string `json:"arguments,omitempty"`
}

// CompleteResult is the result of completion/complete.
type CompleteResult struct {
	Completion struct {
		Values  []string `json:"values"`
		Total   *int     `json:"total,omitempty"`
		HasMore bool     `json:"hasMore,omitempty"`
	} `json:"completion"`
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// Complete asks the server for completions of an argument's value.
func (c *Client) Complete(ctx context.Context, params CompleteParams, opts ...CallOption) (*CompleteResult, error) {
	var res CompleteResult
	if err := c.callTyped(ctx, "completion/complete", params, &res, opts); err != nil {
		return nil, err
	}
	return &res, nil
}
