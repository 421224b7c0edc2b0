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
	// Ref is the prompt or resource template whose argument is completed.
	Ref CompletionRef
	// Argument is the name of the argument being completed, and Value
	// what is typed of it so far (argument.name and argument.value).
	Argument string
	Value    string
	// Context holds the values of arguments already resolved, sent as
	// context.arguments; nil sends no context.
	Context map[string]string
}

// completeWire is CompleteParams as completion/complete spells them.
type completeWire struct {
	Ref      CompletionRef `json:"ref"`
	Argument struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"argument"`
	Context *struct {
		Arguments map[string]string `json:"arguments,omitempty"`
	} `json:"context,omitempty"`
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
	var w completeWire
	w.Ref = params.Ref
	w.Argument.Name, w.Argument.Value = params.Argument, params.Value
	if params.Context != nil {
		w.Context = &struct {
			Arguments map[string]string `json:"arguments,omitempty"`
		}{params.Context}
	}
	var res CompleteResult
	if err := c.callTyped(ctx, "completion/complete", w, &res, opts); err != nil {
		return nil, err
	}
	return &res, nil
}
