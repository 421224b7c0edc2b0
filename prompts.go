package snodo

import (
	"context"
	"encoding/json"
	"iter"
	"time"
)

// Prompt is a prompt or prompt template the server offers.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	Meta        json.RawMessage  `json:"_meta,omitempty"`
}

// PromptArgument is an argument of a prompt template.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// promptsPage is one page of prompts/list.
type promptsPage struct {
	Prompts    []*Prompt       `json:"prompts"`
	NextCursor string          `json:"nextCursor,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
	Cache
}

func (r *promptsPage) setReceived(t time.Time) { r.Received = t }

// GetPromptResult is the result of prompts/get.
type GetPromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// listPrompts returns one page of the server's prompts.
func (c *Client) listPrompts(ctx context.Context, cursor string, opts ...CallOption) (*promptsPage, error) {
	var res promptsPage
	if err := c.cachedCall(ctx, "prompts/list", cursor, pageParams{cursor}, &res, opts); err != nil {
		return nil, err
	}
	return &res, nil
}

// Prompts iterates over all the server's prompts, page by page.
func (c *Client) Prompts(ctx context.Context, opts ...CallOption) iter.Seq2[*Prompt, error] {
	return paginate(func(cursor string) ([]*Prompt, string, error) {
		res, err := c.listPrompts(ctx, cursor, opts...)
		if err != nil {
			return nil, "", err
		}
		return res.Prompts, res.NextCursor, nil
	})
}

// GetPrompt gets the prompt name with arguments. In the 2026-07-28 era it
// may go through input rounds, as CallTool does.
func (c *Client) GetPrompt(ctx context.Context, name string, arguments map[string]string, opts ...CallOption) (*GetPromptResult, error) {
	params := struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments,omitempty"`
	}{name, arguments}
	var res GetPromptResult
	if err := c.callTyped(ctx, "prompts/get", params, &res, opts); err != nil {
		return nil, err
	}
	return &res, nil
}
