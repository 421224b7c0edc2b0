package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/runtime"
)

// The operations behind the commands, shared by the one-shot commands and
// the shell: each runs on a started Runner and prints its result.

// callTool calls the tool name with arguments (already checked) and prints
// the result; a result with isError set is exit 1.
func (a *app) callTool(ctx context.Context, rt *runtime.Runner, name string, arguments map[string]any) error {
	var res *snodo.CallToolResult
	show := a.progressDisplay()
	status := a.taskStatusDisplay() // a tool the server runs as a task
	err := rt.Call(ctx, show, func(ctx context.Context, opts ...snodo.CallOption) (err error) {
		res, err = rt.Client().CallTool(ctx, name, arguments, append(opts, a.taskWaitOptions(status)...)...)
		return err
	})
	a.endProgress()
	if err != nil {
		return err
	}
	if err := a.print(res); err != nil {
		return err
	}
	if res.IsError {
		return &cliError{code: exitServer, kind: "tool", err: fmt.Errorf("tool %s returned isError: %s", name, firstText(res.Content))}
	}
	return nil
}

// printResources prints every page of resources/list.
func (a *app) printResources(ctx context.Context, rt *runtime.Runner) error {
	out := resourceList{Resources: []*snodo.Resource{}}
	err := rt.Call(ctx, nil, func(ctx context.Context, opts ...snodo.CallOption) error {
		for r, err := range rt.Client().Resources(ctx, opts...) {
			if err != nil {
				return err
			}
			out.Resources = append(out.Resources, r)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return a.print(out)
}

// printTemplates prints every page of resources/templates/list.
func (a *app) printTemplates(ctx context.Context, rt *runtime.Runner) error {
	out := templateList{ResourceTemplates: []*snodo.ResourceTemplate{}}
	err := rt.Call(ctx, nil, func(ctx context.Context, opts ...snodo.CallOption) error {
		for r, err := range rt.Client().ResourceTemplates(ctx, opts...) {
			if err != nil {
				return err
			}
			out.ResourceTemplates = append(out.ResourceTemplates, r)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return a.print(out)
}

// readResource reads uri and prints it.
func (a *app) readResource(ctx context.Context, rt *runtime.Runner, uri string) error {
	var res *snodo.ReadResourceResult
	err := rt.Call(ctx, a.progressDisplay(), func(ctx context.Context, opts ...snodo.CallOption) (err error) {
		res, err = rt.Client().ReadResource(ctx, uri, opts...)
		return err
	})
	a.endProgress()
	if err != nil {
		return err
	}
	return a.print(res)
}

// printPrompts prints every page of prompts/list.
func (a *app) printPrompts(ctx context.Context, rt *runtime.Runner) error {
	out := promptList{Prompts: []*snodo.Prompt{}}
	err := rt.Call(ctx, nil, func(ctx context.Context, opts ...snodo.CallOption) error {
		for p, err := range rt.Client().Prompts(ctx, opts...) {
			if err != nil {
				return err
			}
			out.Prompts = append(out.Prompts, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return a.print(out)
}

// getPrompt gets the prompt name with arguments and prints it.
func (a *app) getPrompt(ctx context.Context, rt *runtime.Runner, name string, arguments map[string]string) error {
	var res *snodo.GetPromptResult
	err := rt.Call(ctx, a.progressDisplay(), func(ctx context.Context, opts ...snodo.CallOption) (err error) {
		res, err = rt.Client().GetPrompt(ctx, name, arguments, opts...)
		return err
	})
	a.endProgress()
	if err != nil {
		return err
	}
	return a.print(res)
}

// printDiscover prints what the connection knows of the server, asking
// server/discover again in the 2026-07-28 era.
func (a *app) printDiscover(ctx context.Context, rt *runtime.Runner) error {
	c := rt.Client()
	srv := c.Server()
	out := discoverOutput{
		ProtocolVersion: srv.ProtocolVersion, Era: srv.Era.String(),
		ServerInfo: srv.Implementation, Capabilities: srv.Capabilities, Instructions: srv.Instructions,
	}
	if srv.Era == snodo.EraModern {
		var d *snodo.DiscoverResult
		err := rt.Call(ctx, nil, func(ctx context.Context, opts ...snodo.CallOption) (err error) {
			d, err = c.Discover(ctx, opts...)
			return err
		})
		if err != nil {
			return err
		}
		out.SupportedVersions, out.Capabilities, out.Instructions = d.SupportedVersions, d.Capabilities, d.Instructions
		if d.ServerInfo.Name != "" {
			out.ServerInfo = d.ServerInfo
		}
	}
	return a.print(out)
}

// allowedTools lists the server's tools that the guard allows.
func (a *app) allowedTools(ctx context.Context, rt *runtime.Runner) ([]*snodo.Tool, error) {
	tools, err := a.listTools(ctx, rt)
	if err != nil {
		return nil, err
	}
	kept := tools[:0]
	for _, t := range tools {
		if a.toolAllowed(t.Name) {
			kept = append(kept, t)
		}
	}
	return kept, nil
}

// complete asks for the completions of p's argument and prints them.
func (a *app) complete(ctx context.Context, rt *runtime.Runner, p snodo.CompleteParams) error {
	var res *snodo.CompleteResult
	err := rt.Call(ctx, nil, func(ctx context.Context, opts ...snodo.CallOption) (err error) {
		res, err = rt.Client().Complete(ctx, p, opts...)
		return err
	})
	if err != nil {
		return err
	}
	return a.print(res)
}

// rawRequest sends method with params (already guarded) and prints the
// result; a tools/list result goes through the guard.
func (a *app) rawRequest(ctx context.Context, rt *runtime.Runner, method string, params map[string]any) error {
	var raw json.RawMessage
	if len(params) > 0 {
		raw, _ = json.Marshal(params)
	}
	var res json.RawMessage
	err := rt.Call(ctx, a.progressDisplay(), func(ctx context.Context, opts ...snodo.CallOption) (err error) {
		res, err = rt.Client().Request(ctx, method, raw, opts...)
		return err
	})
	a.endProgress()
	if err != nil {
		return err
	}
	if method == "tools/list" {
		res = a.filterToolList(res)
	}
	return a.print(res)
}
