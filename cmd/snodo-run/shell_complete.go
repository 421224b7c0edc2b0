package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/safetext"
)

// names are what Tab completes in the shell: the server's tools with
// their argument names, prompts with theirs, resource URIs and templates.
// They are fetched at the start and again, in the background, when the
// server says a list changed. names implements readline.AutoCompleter.
type names struct {
	mu        sync.Mutex
	tools     map[string][]string // tool → argument names
	prompts   map[string][]string // prompt → argument names
	resources []string
	templates []string

	pending map[string]bool // lists to fetch again: tools, prompts, resources
	kick    chan struct{}
	cancel  context.CancelFunc
	done    chan struct{} // nil until start
}

func newNames() *names {
	return &names{tools: map[string][]string{}, prompts: map[string][]string{},
		pending: map[string]bool{}, kick: make(chan struct{}, 1)}
}

// start fetches every list the server has, then runs the refresher until
// stop.
func (n *names) start(sh *shell) {
	ctx, cancel := context.WithCancel(sh.base)
	n.mu.Lock()
	n.cancel = cancel
	n.done = make(chan struct{})
	caps := sh.rt.Client().Server().Capabilities
	n.pending["tools"] = caps.Tools != nil
	n.pending["prompts"] = caps.Prompts != nil
	n.pending["resources"] = caps.Resources != nil
	n.mu.Unlock()
	n.poke()
	go func() {
		defer close(n.done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-n.kick:
			}
			n.mu.Lock()
			todo := n.pending
			n.pending = map[string]bool{}
			n.mu.Unlock()
			for _, list := range []string{"tools", "prompts", "resources"} {
				if todo[list] && ctx.Err() == nil {
					n.fetch(ctx, sh, list)
				}
			}
		}
	}()
}

// stop ends the refresher.
func (n *names) stop() {
	n.mu.Lock()
	done, cancel := n.done, n.cancel
	n.mu.Unlock()
	if done == nil {
		return
	}
	cancel()
	<-done
}

func (n *names) poke() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// changed marks the list a notification (or event) method says changed.
func (n *names) changed(method string) {
	var list string
	switch method {
	case "notifications/tools/list_changed":
		list = "tools"
	case "notifications/prompts/list_changed":
		list = "prompts"
	case "notifications/resources/list_changed":
		list = "resources"
	default:
		return
	}
	n.mu.Lock()
	n.pending[list] = true
	n.mu.Unlock()
	n.poke()
}

// fetch gets one list again; a failure keeps the names known.
func (n *names) fetch(ctx context.Context, sh *shell, list string) {
	rt, c := sh.rt, sh.rt.Client()
	switch list {
	case "tools":
		tools, err := sh.a.allowedTools(ctx, rt)
		if err != nil {
			return
		}
		n.setTools(tools)
	case "prompts":
		m := map[string][]string{}
		err := rt.Call(ctx, nil, func(ctx context.Context, opts ...snodo.CallOption) error {
			for p, err := range c.Prompts(ctx, opts...) {
				if err != nil {
					return err
				}
				args := make([]string, 0, len(p.Arguments))
				for _, a := range p.Arguments {
					args = append(args, a.Name)
				}
				m[p.Name] = args
			}
			return nil
		})
		if err == nil {
			n.mu.Lock()
			n.prompts = m
			n.mu.Unlock()
		}
	case "resources":
		var uris, templates []string
		err := rt.Call(ctx, nil, func(ctx context.Context, opts ...snodo.CallOption) error {
			for r, err := range c.Resources(ctx, opts...) {
				if err != nil {
					return err
				}
				uris = append(uris, r.URI)
			}
			for r, err := range c.ResourceTemplates(ctx, opts...) {
				if err != nil {
					return nil // templates are optional
				}
				templates = append(templates, r.URITemplate)
			}
			return nil
		})
		if err == nil {
			n.mu.Lock()
			n.resources, n.templates = uris, templates
			n.mu.Unlock()
		}
	}
}

// setTools replaces the tools and their argument names.
func (n *names) setTools(tools []*snodo.Tool) {
	m := make(map[string][]string, len(tools))
	for _, t := range tools {
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		_ = json.Unmarshal(t.InputSchema, &s)
		args := make([]string, 0, len(s.Properties))
		for k := range s.Properties {
			args = append(args, k)
		}
		m[t.Name] = args
	}
	n.mu.Lock()
	n.tools = m
	n.mu.Unlock()
}

// Do completes the word before pos: it returns the possible endings of
// the word and the word's length, as readline.AutoCompleter.
func (n *names) Do(line []rune, pos int) ([][]rune, int) {
	text := string(line[:pos])
	fields := strings.Fields(text)
	partial := ""
	if len(fields) > 0 && !strings.HasSuffix(text, " ") && !strings.HasSuffix(text, "\t") {
		partial = fields[len(fields)-1]
		fields = fields[:len(fields)-1]
	}
	cands := n.candidates(fields)
	slices.Sort(cands)
	cands = slices.Compact(cands)
	var out [][]rune
	for _, c := range cands {
		// A name with a control or invisible character is not offered:
		// readline would print it raw.
		if !strings.HasPrefix(c, partial) || safetext.Needs(c, false) {
			continue
		}
		end := c[len(partial):]
		if !strings.HasSuffix(c, "=") {
			end += " "
		}
		out = append(out, []rune(end))
	}
	return out, len([]rune(partial))
}

// candidates are the words that may follow the complete words before.
func (n *names) candidates(before []string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(before) == 0 {
		return slices.Clone(shellCommands)
	}
	args := func(m map[string][]string, name string, given []string) []string {
		var out []string
		for _, a := range m[name] {
			if !slices.ContainsFunc(given, func(g string) bool { return strings.HasPrefix(g, a+"=") }) {
				out = append(out, a+"=")
			}
		}
		return out
	}
	k := len(before)
	switch before[0] {
	case "help":
		if k == 1 {
			return slices.Clone(shellCommands)
		}
	case "tools":
		switch {
		case k == 1:
			return []string{"list", "call"}
		case before[1] != "call":
		case k == 2:
			return mapKeys(n.tools)
		default:
			return args(n.tools, before[2], before[3:])
		}
	case "call":
		if k == 1 {
			return mapKeys(n.tools)
		}
		return args(n.tools, before[1], before[2:])
	case "tasks":
		switch {
		case k == 1:
			return []string{"list", "start", "get", "result", "cancel"}
		case before[1] != "start":
		case k == 2:
			return mapKeys(n.tools)
		default:
			return args(n.tools, before[2], before[3:])
		}
	case "skills":
		if k == 1 {
			return []string{"list", "get", "read", "dir"}
		}
	case "resources":
		switch {
		case k == 1:
			return []string{"list", "templates", "read"}
		case k == 2 && before[1] == "read":
			return slices.Clone(n.resources)
		}
	case "prompts":
		switch {
		case k == 1:
			return []string{"list", "get"}
		case before[1] != "get":
		case k == 2:
			return mapKeys(n.prompts)
		default:
			return args(n.prompts, before[2], before[3:])
		}
	case "complete":
		switch {
		case k == 1:
			return []string{"prompt", "resource"}
		case k == 2 && before[1] == "prompt":
			return mapKeys(n.prompts)
		case k == 2 && before[1] == "resource":
			return slices.Clone(n.templates)
		case k == 3 && before[1] == "prompt":
			return args(n.prompts, before[2], nil)
		}
	case "listen":
		if before[k-1] == "--resource" {
			return slices.Clone(n.resources)
		}
		return []string{"--tools", "--prompts", "--resources", "--resource", "--count"}
	case "output":
		if k == 1 {
			return []string{"json", "pretty", "text"}
		}
	case "request":
		if k == 1 {
			return []string{"tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read",
				"prompts/list", "prompts/get", "completion/complete", "ping", "server/discover"}
		}
	}
	return nil
}

func mapKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
