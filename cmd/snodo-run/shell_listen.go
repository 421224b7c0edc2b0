package main

// The shell's background subscription: listen, unlisten, wait, and the
// watch that keeps the completion names fresh.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/snodo/snodo"
)

// background is a subscription that runs in its own goroutine.
type background struct {
	cancel context.CancelFunc
	done   chan struct{}
	ended  bool // by --count, the server or an error; set before done closes
}

// errCountReached ends a listen --count N after N events.
var errCountReached = errors.New("count reached")

func (b *background) stop() {
	b.cancel()
	<-b.done
}

// startListen opens the background subscription; its events are printed
// as JSON lines, as by the one-shot listen.
func (sh *shell) startListen(rest string) error {
	ws, err := words(rest)
	if err != nil {
		return err
	}
	fs := pflag.NewFlagSet("listen", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	tools := fs.Bool("tools", false, "")
	prompts := fs.Bool("prompts", false, "")
	resources := fs.Bool("resources", false, "")
	uris := fs.StringArray("resource", nil, "")
	count := fs.Int("count", 0, "")
	if err := fs.Parse(ws); err != nil {
		return usageErr("listen: %v", err)
	}
	if fs.NArg() > 0 {
		return usageErr("listen takes flags only (--tools, --prompts, --resources, --resource URI, --count N), not %q", fs.Arg(0))
	}
	filter := snodo.SubscriptionFilter{ToolsListChanged: *tools, PromptsListChanged: *prompts,
		ResourcesListChanged: *resources, ResourceSubscriptions: *uris}
	if !*tools && !*prompts && !*resources && len(*uris) == 0 {
		filter.ToolsListChanged, filter.PromptsListChanged, filter.ResourcesListChanged = true, true, true
	}
	ctx, cancel := context.WithCancel(sh.base)
	b := &background{cancel: cancel, done: make(chan struct{})}
	sh.mu.Lock()
	busy := sh.listen != nil
	if !busy {
		sh.listen, sh.last = b, b
	}
	sh.mu.Unlock()
	if busy {
		cancel()
		return usageErr("already listening: unlisten first")
	}
	accepted := make(chan snodo.SubscriptionFilter, 1)
	var listenErr error
	seen := 0
	go func() {
		defer close(b.done)
		wasAccepted := false
		listenErr = sh.rt.Listen(ctx, filter, func(got snodo.SubscriptionFilter) { wasAccepted = true; accepted <- got },
			func(ev snodo.Event) error {
				sh.names.changed(ev.Method)
				line, err := marshal(listenEvent{Method: ev.Method, Params: ev.Params})
				if err != nil {
					return err
				}
				if _, err = sh.out.Write(append(line, '\n')); err != nil {
					return err
				}
				if seen++; *count > 0 && seen >= *count {
					return errCountReached
				}
				return nil
			})
		if errors.Is(listenErr, errCountReached) {
			listenErr = nil
		}
		b.ended = ctx.Err() == nil
		sh.mu.Lock()
		if sh.listen == b {
			sh.listen = nil
		}
		sh.mu.Unlock()
		if !b.ended || !wasAccepted {
			return // unlisten, the session's end, or a failure to subscribe (the command's error)
		}
		if listenErr != nil {
			reportError(sh.errw, listenErr)
		} else if sh.interactive {
			fmt.Fprintln(sh.errw, "listen: the subscription ended")
		}
	}()
	select {
	case got := <-accepted:
		if sh.interactive {
			fmt.Fprintf(sh.errw, "listening for %s; unlisten to stop\n", describeFilter(got))
		}
		return nil
	case <-b.done:
		if listenErr != nil {
			return listenErr
		}
		return errors.New("the subscription ended at once")
	}
}

func describeFilter(f snodo.SubscriptionFilter) string {
	var what []string
	if f.ToolsListChanged {
		what = append(what, "tool list changes")
	}
	if f.PromptsListChanged {
		what = append(what, "prompt list changes")
	}
	if f.ResourcesListChanged {
		what = append(what, "resource list changes")
	}
	for _, u := range f.ResourceSubscriptions {
		what = append(what, "updates of "+sanitize(u))
	}
	if len(what) == 0 {
		return "nothing the server offers"
	}
	return strings.Join(what, ", ")
}

func (sh *shell) unlisten(rest string) error {
	if err := noArgs("unlisten", rest); err != nil {
		return err
	}
	sh.mu.Lock()
	b := sh.listen
	sh.listen = nil
	sh.mu.Unlock()
	if b == nil {
		return usageErr("not listening")
	}
	b.stop()
	return nil
}

// wait waits until the last listen subscription ends (listen --count N,
// or the server ends it), at most DURATION (default: the request timeout).
func (sh *shell) wait(ctx context.Context, rest string) error {
	d := sh.a.settings.runner.Timeout
	if rest != "" {
		var err error
		if d, err = time.ParseDuration(rest); err != nil || d <= 0 {
			return usageErr("wait wants a positive Go duration (5s, 1m), not %q", rest)
		}
	}
	sh.mu.Lock()
	b := sh.last
	sh.mu.Unlock()
	if b == nil {
		return usageErr("nothing to wait for: listen first")
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return &cliError{code: exitTimeout, kind: "timeout", err: fmt.Errorf("the subscription did not end within %v", d)}
	}
}

// startWatch opens the subscription that keeps the completion names up to
// date, when the server offers list changes and no subscriber module
// would see its events.
func (sh *shell) startWatch() {
	if sh.rt.HasSubscriber() {
		return
	}
	caps := sh.rt.Client().Server().Capabilities
	filter := snodo.SubscriptionFilter{
		ToolsListChanged:     caps.Tools != nil,
		PromptsListChanged:   caps.Prompts != nil,
		ResourcesListChanged: caps.Resources != nil,
	}
	if !filter.ToolsListChanged && !filter.PromptsListChanged && !filter.ResourcesListChanged {
		return
	}
	ctx, cancel := context.WithCancel(sh.base)
	b := &background{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		err := sh.rt.Listen(ctx, filter, nil, func(ev snodo.Event) error {
			sh.names.changed(ev.Method)
			return nil
		})
		if err != nil && ctx.Err() == nil {
			sh.a.logger.Debug("no list changes for completion", "error", err)
		}
	}()
	sh.watch = b
}

// stopBackground ends the subscriptions and the name refresher.
func (sh *shell) stopBackground() {
	sh.mu.Lock()
	l := sh.listen
	sh.listen = nil
	sh.mu.Unlock()
	if l != nil {
		l.stop()
	}
	if sh.watch != nil {
		sh.watch.stop()
	}
	sh.names.stop()
}

// ---- help
