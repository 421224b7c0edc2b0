package snodo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"iter"
	"reflect"
	"sync"
	"time"

	"github.com/snodo/snodo/internal/jsoncodec"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/tasks"
)

// Tool is a tool the server offers. Unknown members are kept in Extra.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Icons        json.RawMessage `json:"icons,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
}

type toolFields Tool

var toolKnown = jsonKeys[toolFields]()

// UnmarshalJSON implements json.Unmarshaler, keeping unknown members.
func (t *Tool) UnmarshalJSON(data []byte) error {
	f, extra, err := decodeKeepingExtra[toolFields](data, toolKnown)
	if err != nil {
		return err
	}
	*t = Tool(f)
	t.Extra = extra
	return nil
}

// MarshalJSON implements json.Marshaler, writing unknown members back.
func (t Tool) MarshalJSON() ([]byte, error) { return encodeKeepingExtra(toolFields(t), t.Extra) }

// toolsPage is one page of tools/list.
type toolsPage struct {
	Tools      []*Tool         `json:"tools"`
	NextCursor string          `json:"nextCursor,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
	Cache
}

func (r *toolsPage) setReceived(t time.Time) { r.Received = t }

type pageParams struct {
	Cursor string `json:"cursor,omitempty"`
}

// listTools returns one page of the server's tools, starting at cursor
// ("" for the first page).
//
// Over HTTP in the 2026-07-28 era, a tool whose x-mcp-header annotations
// are invalid is left out, with a warning (Options.OnWarning), and the
// client remembers the annotations of the others: CallTool mirrors the
// annotated arguments into Mcp-Param-{Name} headers.
func (c *Client) listTools(ctx context.Context, cursor string, opts ...CallOption) (*toolsPage, error) {
	var res toolsPage
	if err := c.cachedCall(ctx, "tools/list", cursor, pageParams{cursor}, &res, opts); err != nil {
		return nil, err
	}
	if c.paramHeaders() {
		res.Tools = c.filterTools(res.Tools)
	}
	c.noteTools(res.Tools)
	return &res, nil
}

// Tools iterates over all the server's tools, page by page (each page
// kept by the result cache per cursor). An error ends the iteration as its
// last pair.
//
// Over HTTP in the 2026-07-28 era, a tool whose x-mcp-header annotations
// are invalid is left out, with a warning (Options.OnWarning), and the
// client remembers the annotations of the others: CallTool mirrors the
// annotated arguments into Mcp-Param-{Name} headers.
func (c *Client) Tools(ctx context.Context, opts ...CallOption) iter.Seq2[*Tool, error] {
	return paginate(func(cursor string) ([]*Tool, string, error) {
		res, err := c.listTools(ctx, cursor, opts...)
		if err != nil {
			return nil, "", err
		}
		return res.Tools, res.NextCursor, nil
	})
}

// paginate iterates over the items of successive pages. It stops after a
// page without a next cursor, and guards against a server that returns the
// same cursor again.
func paginate[T any](page func(cursor string) ([]T, string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		cursor := ""
		// The cursors seen, by digest: a server's cursor may be as long
		// as a message, and the client keeps at most maxPages of them.
		seen := map[[sha256.Size]byte]bool{}
		for pages := 1; ; pages++ {
			items, next, err := page(cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			var zero T
			if pages == maxPages {
				yield(zero, protocolError(jsonrpc.CodeInternalError, nil,
					"the server's list goes on past %d pages; the client stops there (a server that hands out a new cursor with every page never ends)", maxPages))
				return
			}
			sum := sha256.Sum256([]byte(next))
			if seen[sum] {
				yield(zero, protocolError(jsonrpc.CodeInternalError, nil, "the server returned cursor %q twice", clipText(next)))
				return
			}
			seen[sum] = true
			cursor = next
		}
	}
}

// maxPages bounds the pages of one listing the iterators follow.
const maxPages = 1000

// clipText returns s cut to 64 bytes, for quoting a server's text in an
// error.
func clipText(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "…"
}

// CallToolResult is the result of tools/call.
type CallToolResult struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	Meta              json.RawMessage `json:"_meta,omitempty"`
}

// CallTool calls the tool name with arguments (anything that encodes to a
// JSON object, or nil). In the 2026-07-28 era, a server that asks for input
// is answered by the client's handlers and the call retried (see
// Options.Handlers and Options.MaxRounds).
//
// A tool the server runs as a task is waited for: in the legacy era, a
// tool whose execution.taskSupport is "required" (known from a tools/list
// the client has seen, or from the server's error saying so — a -32601 or
// -32600 error, or an isError result as the TypeScript SDK gives, whose
// message says task augmentation is required — after which the call is
// made again) is called as a task when the server's
// capabilities offer tasks for tools/call; in the 2026-07-28 era the call
// declares the tasks extension and the server decides. CallTool then polls
// the task to its end and returns its result; see WaitTask for how, and
// WithTask for the handle instead. When it stops waiting before the task
// ends — ctx done, WithMaxTotalTimeout passed, an error — it sends
// tasks/cancel.
//
// A tool's own failure is a result with IsError set, not an error.
func (c *Client) CallTool(ctx context.Context, name string, arguments any, opts ...CallOption) (*CallToolResult, error) {
	if len(opts) == 0 {
		// No option sees the configuration: it stays on the stack.
		cc := callConfig{timeout: c.cfg.timeout}
		return c.callTool(ctx, name, arguments, &cc)
	}
	return c.callTool(ctx, name, arguments, c.callConfig(opts))
}

// toolCallParams is tools/call's params, with the legacy task request and
// a progress token the task code routes itself.
type toolCallParams struct {
	Meta      map[string]json.RawMessage `json:"_meta,omitempty"`
	Name      string                     `json:"name"`
	Arguments any                        `json:"arguments,omitempty"`
	Task      *taskMetadata              `json:"task,omitempty"`
}

// callTool is CallTool: a plain call, or a task followed to its end, as
// the connection's era runs tasks (taskProtocol).
func (c *Client) callTool(ctx context.Context, name string, arguments any, cc *callConfig) (*CallToolResult, error) {
	var deadline time.Time
	if cc.maxTotal > 0 {
		deadline = time.Now().Add(cc.maxTotal)
	}
	return c.dialect.tasks().callTool(ctx, c, toolCall{name: name, arguments: arguments, cc: *cc, deadline: deadline})
}

// toolCall is one CallTool: the tool, its arguments, the call's
// configuration and total deadline (zero when none).
type toolCall struct {
	name      string
	arguments any
	cc        callConfig
	deadline  time.Time
}

// handle is the task the caller asked for with WithTask, or nil.
func (tc toolCall) handle() *tasks.Task {
	if tc.cc.tasks != nil {
		return tc.cc.tasks.handle
	}
	return nil
}

// withTasks returns a copy of cc whose task configuration is cc's (or
// empty) changed by f, leaving cc as it was.
func withTasks(cc *callConfig, f func(*taskCallConfig)) *callConfig {
	tcc := *cc
	tc := taskCallConfig{}
	if cc.tasks != nil {
		tc = *cc.tasks
	}
	f(&tc)
	tcc.tasks = &tc
	return &tcc
}

func toolParams(p toolCallParams) ([]byte, error) {
	if p.Meta == nil && p.Task == nil {
		if b, ok := appendToolParams(p.Name, p.Arguments); ok {
			return b, nil
		}
	}
	return marshalToolParams(p)
}

// appendToolParams encodes the params of a plain tools/call whose
// arguments are nil or a map[string]any, as marshal encodes them (with the
// arguments' keys sorted): see jsoncodec.AppendAny. It reports false for
// other arguments, or a map holding what AppendAny leaves to the codec.
func appendToolParams(name string, arguments any) ([]byte, bool) {
	if arguments != nil {
		if _, ok := arguments.(map[string]any); !ok {
			return nil, false
		}
	}
	// Encoded on the stack, then copied once to the heap at its size.
	var scratch [512]byte
	b, ok := jsoncodec.AppendAny(append(scratch[:0], `{"name":`...), name)
	if !ok {
		return nil, false // not where AppendAny encodes as the codec does
	}
	if arguments != nil {
		b = append(b, `,"arguments":`...)
		if b, ok = jsoncodec.AppendAny(b, arguments); !ok {
			return nil, false
		}
	}
	b = append(b, '}')
	return bytes.Clone(b), true
}

func marshalToolParams(p toolCallParams) ([]byte, error) {
	defer firstEncode(reflect.TypeOf(p.Arguments))()
	b, err := marshal(p)
	if err != nil {
		return nil, protocolError(jsonrpc.CodeInvalidParams, err, "invalid params for tools/call")
	}
	return b, nil
}

// argsEncoded holds, for each type of tool arguments toolParams has met, a
// channel closed when its first encode is done.
var argsEncoded sync.Map // reflect.Type → chan struct{}

// firstEncode makes the first encode of tool arguments of type t run alone:
// it waits while another caller's first encode of t is under way, and
// returns the function that ends the caller's own. Sonic generates the
// code for each type it meets (the arguments' type, and the types of what
// they hold) under a lock, and an encode takes a 128 KiB stack from sonic's
// pool before waiting for that lock: callers that meet a new type together
// each held a stack, 64 callers' first tools/call at once 8 MiB of them.
func firstEncode(t reflect.Type) (done func()) {
	if v, ok := argsEncoded.Load(t); ok {
		<-v.(chan struct{})
		return func() {}
	}
	ch := make(chan struct{})
	if v, loaded := argsEncoded.LoadOrStore(t, ch); loaded {
		<-v.(chan struct{})
		return func() {}
	}
	return func() { close(ch) }
}
