package main

// The shell's commands: dispatching a line and running each command.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport/stdio"
)

var shellCommands = []string{"help", "exit", "quit", "discover", "info", "tools", "call", "resources",
	"prompts", "complete", "tasks", "skills", "request", "listen", "unlisten", "wait", "output"}

// run runs one line and reports its error; it returns errExit to end the
// session, or an error that ends it (the server's connection is gone).
func (sh *shell) run(line string) error {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return nil
	}
	ctx, cancel := context.WithCancel(sh.base)
	sh.mu.Lock()
	sh.cancel = cancel
	sh.mu.Unlock()
	var buf bytes.Buffer
	err := sh.exec(ctx, line, &buf)
	sh.mu.Lock()
	sh.cancel = nil
	sh.mu.Unlock()
	interrupted := ctx.Err() != nil && sh.base.Err() == nil
	cancel()
	if buf.Len() > 0 {
		_, _ = sh.out.Write(buf.Bytes())
	}
	if errors.Is(err, errExit) {
		return err
	}
	sh.ran++
	if err == nil {
		return nil
	}
	var ce *cliError
	if interrupted && !errors.As(err, &ce) {
		err = &cliError{code: exitInterrupt, kind: "interrupted", err: fmt.Errorf("interrupted: the request in flight was cancelled on the server (%v)", err)}
	}
	if sh.base.Err() != nil {
		return err // the session ends: reported once by the caller
	}
	err = sh.a.blameHandler(sh.rt, err)
	sh.failed++
	sh.lastErr = err
	reportError(sh.errw, err)
	if connectionGone(err) {
		return &cliError{code: exitConnection, kind: "transport", err: fmt.Errorf("the server's connection is gone: %v", err)}
	}
	return nil
}

// connectionGone reports whether err says the server's connection ended.
func connectionGone(err error) bool {
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Kind != jsonrpc.KindTransport || je.Code != jsonrpc.CodeConnectionClosed {
		return false
	}
	// A full write queue, or a closed client, leave the server alive.
	return !errors.Is(err, stdio.ErrQueueFull) && !errors.Is(err, snodo.ErrClientClosed)
}

// view is the app that prints one command's output to w, in the session's
// output format.
func (sh *shell) view(w io.Writer) *app {
	v := *sh.a
	v.stdout = w
	v.stderr = sh.errw
	v.progress = nil
	return &v
}

// exec runs one command, printing its output to w.
func (sh *shell) exec(ctx context.Context, line string, w io.Writer) error {
	verb, rest := cutWord(line)
	v := sh.view(w)
	switch verb {
	case "help", "?":
		return sh.help(w, rest)
	case "exit", "quit":
		return errExit
	case "discover", "info":
		return sh.discover(ctx, v)
	case "tools":
		sub, rest := cutWord(rest)
		switch sub {
		case "list":
			return sh.toolsList(ctx, v, rest)
		case "call":
			return sh.toolsCall(ctx, v, rest)
		}
		return usageErr("tools wants list or call, not %q (type help)", sub)
	case "call":
		return sh.toolsCall(ctx, v, rest)
	case "resources":
		sub, rest := cutWord(rest)
		switch sub {
		case "list":
			return sh.resourcesList(ctx, v, rest)
		case "templates":
			return sh.templatesList(ctx, v, rest)
		case "read":
			return sh.resourcesRead(ctx, v, rest)
		}
		return usageErr("resources wants list, templates or read, not %q (type help)", sub)
	case "prompts":
		sub, rest := cutWord(rest)
		switch sub {
		case "list":
			return sh.promptsList(ctx, v, rest)
		case "get":
			return sh.promptsGet(ctx, v, rest)
		}
		return usageErr("prompts wants list or get, not %q (type help)", sub)
	case "complete":
		return sh.complete(ctx, v, rest)
	case "tasks":
		return sh.tasks(ctx, v, rest)
	case "skills":
		return sh.skills(ctx, v, rest)
	case "request":
		return sh.request(ctx, v, rest)
	case "listen":
		return sh.startListen(rest)
	case "unlisten":
		return sh.unlisten(rest)
	case "wait":
		return sh.wait(ctx, rest)
	case "output":
		return sh.output(w, rest)
	}
	return usageErr("unknown command %q (type help)", verb)
}

func (sh *shell) discover(ctx context.Context, v *app) error {
	return v.printDiscover(ctx, sh.rt)
}

func (sh *shell) toolsList(ctx context.Context, v *app, rest string) error {
	if err := noArgs("tools list", rest); err != nil {
		return err
	}
	tools, err := v.allowedTools(ctx, sh.rt)
	if err != nil {
		return err
	}
	sh.names.setTools(tools)
	return v.print(toolList{Tools: tools})
}

func (sh *shell) toolsCall(ctx context.Context, v *app, rest string) error {
	name, rest := cutWord(rest)
	arguments, err := sh.toolCallArguments(ctx, v, name, rest)
	if err != nil {
		return err
	}
	return v.callTool(ctx, sh.rt, name, arguments)
}

// toolCallArguments checks a tool call's NAME and reads its arguments:
// K=V words typed by the tool's input schema, or a JSON object.
func (sh *shell) toolCallArguments(ctx context.Context, v *app, name, rest string) (map[string]any, error) {
	if name == "" {
		return nil, usageErr("tools call wants a tool NAME, then K=V arguments or a JSON object")
	}
	if err := v.guardCall(name); err != nil {
		return nil, err
	}
	arguments := map[string]any{}
	var kv []string
	if strings.HasPrefix(rest, "{") {
		var err error
		if arguments, err = objectArg(rest, "arguments"); err != nil {
			return nil, err
		}
	} else {
		var err error
		if kv, err = words(rest); err != nil {
			return nil, err
		}
		if err := pairs(kv); err != nil {
			return nil, err
		}
	}
	if err := v.toolArguments(ctx, sh.rt, name, arguments, kv, false); err != nil {
		return nil, err
	}
	return arguments, nil
}

func (sh *shell) resourcesList(ctx context.Context, v *app, rest string) error {
	if err := noArgs("resources list", rest); err != nil {
		return err
	}
	return v.printResources(ctx, sh.rt)
}

func (sh *shell) templatesList(ctx context.Context, v *app, rest string) error {
	if err := noArgs("resources templates", rest); err != nil {
		return err
	}
	return v.printTemplates(ctx, sh.rt)
}

func (sh *shell) resourcesRead(ctx context.Context, v *app, rest string) error {
	ws, err := words(rest)
	if err != nil {
		return err
	}
	if len(ws) != 1 {
		return usageErr("resources read wants one URI")
	}
	return v.readResource(ctx, sh.rt, ws[0])
}

func (sh *shell) promptsList(ctx context.Context, v *app, rest string) error {
	if err := noArgs("prompts list", rest); err != nil {
		return err
	}
	return v.printPrompts(ctx, sh.rt)
}

func (sh *shell) promptsGet(ctx context.Context, v *app, rest string) error {
	ws, err := words(rest)
	if err != nil {
		return err
	}
	if len(ws) == 0 {
		return usageErr("prompts get wants a prompt NAME, then K=V arguments")
	}
	if err := pairs(ws[1:]); err != nil {
		return err
	}
	arguments := map[string]string{}
	for _, kv := range ws[1:] {
		k, val, _ := strings.Cut(kv, "=")
		arguments[k] = val
	}
	return v.getPrompt(ctx, sh.rt, ws[0], arguments)
}

func (sh *shell) complete(ctx context.Context, v *app, rest string) error {
	ws, err := words(rest)
	if err != nil {
		return err
	}
	const use = "complete wants prompt NAME or resource URI, then ARG=VALUE (the argument and what is typed so far), then K=V arguments already resolved"
	if len(ws) < 3 {
		return usageErr(use)
	}
	var p snodo.CompleteParams
	switch ws[0] {
	case "prompt":
		p.Ref = snodo.CompletionRef{Type: "ref/prompt", Name: ws[1]}
	case "resource":
		p.Ref = snodo.CompletionRef{Type: "ref/resource", URI: ws[1]}
	default:
		return usageErr(use)
	}
	if err := pairs(ws[2:]); err != nil {
		return err
	}
	p.Argument, p.Value, _ = strings.Cut(ws[2], "=")
	if len(ws) > 3 {
		p.Context = map[string]string{}
		for _, kv := range ws[3:] {
			k, val, _ := strings.Cut(kv, "=")
			p.Context[k] = val
		}
	}
	return v.complete(ctx, sh.rt, p)
}

func (sh *shell) request(ctx context.Context, v *app, rest string) error {
	method, rest := cutWord(rest)
	if method == "" {
		return usageErr("request wants a METHOD, then its params as a JSON object")
	}
	p, err := objectArg(rest, "params")
	if err != nil {
		return err
	}
	if err := v.guardRawCall(method, p); err != nil {
		return err
	}
	return v.rawRequest(ctx, sh.rt, method, p)
}

func (sh *shell) output(w io.Writer, rest string) error {
	switch rest {
	case "":
		fmt.Fprintln(w, sh.a.settings.output)
		return nil
	case "json", "pretty", "text":
		sh.a.settings.output = rest
		return nil
	}
	return usageErr("output wants json, pretty or text, not %q", rest)
}

// ---- listen

func (sh *shell) help(w io.Writer, rest string) error {
	_, body, _ := strings.Cut(shellLong, "\n\n")
	body, _, _ = strings.Cut(body, "\n\nA VALUE")
	fmt.Fprintln(w, "Commands:")
	fmt.Fprintln(w, body)
	fmt.Fprintln(w, "\nA VALUE is typed by the tool's input schema; quote words with ' or \". Tab completes.")
	return nil
}
