package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/runtime"
	"github.com/snodo/snodo/tasks"
)

// ---- tasks

const tasksLong = `A server may run a tool call as a task: in the legacy era (2025-11-25,
experimental) for a tool whose execution.taskSupport is "required" or
"optional", in the 2026-07-28 era (the extension io.modelcontextprotocol/tasks)
whenever it chooses. tools call waits for such a task on its own: it polls at
the interval the server suggests, shows the task's status and status message
with the progress (a bar on a terminal, --verbose log lines otherwise),
answers the server's questions with the handlers, and prints the result;
Ctrl-C cancels the task on the server.

These commands reach tasks by ID. A task lives in the server: a server
started for one command forgets its tasks when it exits, so they are of use
in the shell, where one connection serves every command, and with servers
that keep their tasks.

  tasks list          every page of tasks/list (legacy era only: the
                      2026-07-28 extension has none)
  tasks get ID        the task's state (2026-07-28: with its result, error
                      or input requests)
  tasks result ID     wait for the task to end and print its result, as
                      tools call does (Ctrl-C stops waiting, the task goes on)
  tasks cancel ID     ask the server to cancel it`

func (a *app) tasksCmd() *cobra.Command {
	tasks := &cobra.Command{
		Use:   "tasks",
		Short: "List, inspect, wait for and cancel the server's tasks",
		Long:  tasksLong,
		Example: `  snodo-run tools call simulate-research-query --arg topic=tides -- npx -y @modelcontextprotocol/server-everything
  snodo-run tasks list --output text -- npx -y @modelcontextprotocol/server-everything`,
	}
	list := &cobra.Command{
		Use:     "list",
		Short:   "List the server's tasks (every page; legacy era)",
		Example: `  snodo-run tasks list --output text -- npx -y @modelcontextprotocol/server-everything`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withRunner(a.printTasks)
		},
	}
	get := &cobra.Command{
		Use:     "get ID",
		Short:   "Show a task's state",
		Example: `  snodo-run tasks get 786512e2-9e0d-44bd-8f29-789f320fe840 -- ./server`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withRunner(func(ctx context.Context, rt *runtime.Runner) error {
				return a.getTask(ctx, rt, args[0])
			})
		},
	}
	result := &cobra.Command{
		Use:     "result ID",
		Short:   "Wait for a task to end and print its result",
		Example: `  snodo-run --handler elicit.wasm tasks result 786512e2-9e0d-44bd-8f29-789f320fe840 -- ./server`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withRunner(func(ctx context.Context, rt *runtime.Runner) error {
				return a.waitTask(ctx, rt, args[0])
			})
		},
	}
	cancel := &cobra.Command{
		Use:     "cancel ID",
		Short:   "Ask the server to cancel a task",
		Example: `  snodo-run tasks cancel 786512e2-9e0d-44bd-8f29-789f320fe840 -- ./server`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withRunner(func(ctx context.Context, rt *runtime.Runner) error {
				return a.cancelTask(ctx, rt, args[0])
			})
		},
	}
	a.saveFlag(result)
	tasks.AddCommand(list, get, result, cancel)
	return tasks
}

// defaultTaskTimeout is the default of --task-timeout.
const defaultTaskTimeout = 30 * time.Minute

// taskWaitOptions are the options of a call that may wait for a task: its
// status display and the --task-timeout bound.
func (a *app) taskWaitOptions(status func(tasks.Task)) []snodo.CallOption {
	var opts []snodo.CallOption
	if status != nil {
		opts = append(opts, snodo.WithTaskStatus(status))
	}
	if a.settings.taskTimeout > 0 {
		opts = append(opts, snodo.WithMaxTotalTimeout(a.settings.taskTimeout))
	}
	return opts
}

// taskList is the output of tasks list.
type taskList struct {
	Tasks []*taskOutput `json:"tasks"`
}

// taskOutput is a task as printed: the client's Task, in both eras'
// common form.
type taskOutput tasks.Task

func (l taskList) renderText(w io.Writer) error {
	for _, t := range l.Tasks {
		t.line(w)
	}
	return nil
}

func (t *taskOutput) renderText(w io.Writer) error {
	t.line(w)
	if t.CreatedAt != "" {
		fmt.Fprintf(w, "    created %s, updated %s\n", t.CreatedAt, t.LastUpdatedAt)
	}
	if t.Error != nil {
		fmt.Fprintf(w, "    error %d: %s\n", t.Error.Code, oneLine(t.Error.Message))
	}
	if t.InputRequests != nil {
		fmt.Fprintln(w, "    input requests:")
		if err := writeIndented(w, t.InputRequests); err != nil {
			return err
		}
	}
	if t.Result != nil {
		fmt.Fprintln(w, "    result:")
		return writeIndented(w, t.Result)
	}
	return nil
}

func (t *taskOutput) line(w io.Writer) {
	fmt.Fprintf(w, "%s\t%s", t.TaskID, t.Status)
	if m := oneLine(t.StatusMessage); m != "" {
		fmt.Fprintf(w, "\t%s", m)
	}
	fmt.Fprintln(w)
}

// printTasks prints every page of tasks/list.
func (a *app) printTasks(ctx context.Context, rt *runtime.Runner) error {
	out := taskList{Tasks: []*taskOutput{}}
	err := rt.Call(ctx, nil, func(ctx context.Context, opts ...snodo.CallOption) error {
		for t, err := range rt.Client().Tasks(ctx, opts...) {
			if err != nil {
				return err
			}
			out.Tasks = append(out.Tasks, (*taskOutput)(t))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return a.print(out)
}

// getTask prints the state of task id.
func (a *app) getTask(ctx context.Context, rt *runtime.Runner, id string) error {
	var t *tasks.Task
	err := rt.Call(ctx, nil, func(ctx context.Context, opts ...snodo.CallOption) (err error) {
		t, err = rt.Client().GetTask(ctx, id, opts...)
		return err
	})
	if err != nil {
		return err
	}
	return a.print((*taskOutput)(t))
}

// cancelTask cancels task id and prints what the server answered.
func (a *app) cancelTask(ctx context.Context, rt *runtime.Runner, id string) error {
	var t *tasks.Task
	err := rt.Call(ctx, nil, func(ctx context.Context, opts ...snodo.CallOption) (err error) {
		t, err = rt.Client().CancelTask(ctx, id, opts...)
		return err
	})
	if err != nil {
		return err
	}
	return a.print((*taskOutput)(t))
}

// waitTask waits for task id to end, with the progress display, and
// prints its result as tools call does.
func (a *app) waitTask(ctx context.Context, rt *runtime.Runner, id string) error {
	var res *snodo.CallToolResult
	show := a.progressDisplay()
	status := a.taskStatusDisplay()
	err := rt.Call(ctx, show, func(ctx context.Context, opts ...snodo.CallOption) (err error) {
		res, err = rt.Client().WaitTask(ctx, id, append(opts, a.taskWaitOptions(status)...)...)
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
		return &cliError{code: exitServer, kind: "tool", err: fmt.Errorf("task %s returned isError: %s", id, firstText(res.Content))}
	}
	return nil
}

// taskStatusDisplay returns the function that shows a task's status while
// a call waits for it: in the progress bar on a terminal (made after
// progressDisplay, whose bar it shares), a log line with --verbose
// otherwise, nothing else.
func (a *app) taskStatusDisplay() func(tasks.Task) {
	f, ok := a.stderr.(*os.File)
	if g, isGated := a.stderr.(interface{ File() *os.File }); isGated {
		f, ok = g.File(), true
	}
	if ok && term.IsTerminal(int(f.Fd())) {
		if a.progress == nil {
			a.progress = &progressView{}
		}
		v := a.progress
		return func(t tasks.Task) { v.showStatus(f, t) }
	}
	if a.settings.verbose {
		return func(t tasks.Task) {
			args := []any{"id", t.TaskID, "status", string(t.Status)}
			if t.StatusMessage != "" {
				args = append(args, "message", t.StatusMessage)
			}
			a.logger.Info("task", args...)
		}
	}
	return nil
}

// maxStatusRunes bounds a status message in the bar.
const maxStatusRunes = 60

// showStatus describes the bar with the task's status and message (a
// spinner until the server reports progress with a total).
func (v *progressView) showStatus(f *os.File, t tasks.Task) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.bar == nil {
		v.bar = newBar(f, -1)
	}
	msg := string(t.Status)
	if t.StatusMessage != "" {
		msg += ": " + t.StatusMessage
	}
	msg = oneLineSafe(msg)
	if r := []rune(msg); len(r) > maxStatusRunes {
		msg = string(r[:maxStatusRunes-1]) + "…"
	}
	v.bar.Describe(msg)
}

// startTask calls the tool name as a task and prints the task; a server
// that answers at once gets its result printed, as tools call does.
func (a *app) startTask(ctx context.Context, rt *runtime.Runner, name string, arguments map[string]any) error {
	var res *snodo.CallToolResult
	var t tasks.Task
	err := rt.Call(ctx, nil, func(ctx context.Context, opts ...snodo.CallOption) (err error) {
		res, err = rt.Client().CallTool(ctx, name, arguments, append(opts, snodo.WithTask(&t))...)
		return err
	})
	if err != nil {
		return err
	}
	if res == nil {
		return a.print((*taskOutput)(&t))
	}
	if err := a.print(res); err != nil {
		return err
	}
	if res.IsError {
		return &cliError{code: exitServer, kind: "tool", err: fmt.Errorf("tool %s returned isError: %s", name, firstText(res.Content))}
	}
	return nil
}

// tasks runs the shell's tasks commands.
func (sh *shell) tasks(ctx context.Context, v *app, rest string) error {
	sub, rest := cutWord(rest)
	switch sub {
	case "list":
		if err := noArgs("tasks list", rest); err != nil {
			return err
		}
		return v.printTasks(ctx, sh.rt)
	case "start":
		name, args := cutWord(rest)
		arguments, err := sh.toolCallArguments(ctx, v, name, args)
		if err != nil {
			return err
		}
		return v.startTask(ctx, sh.rt, name, arguments)
	case "get", "result", "cancel":
		id, more := cutWord(rest)
		if id == "" || more != "" {
			return usageErr("tasks %s wants one task ID", sub)
		}
		switch sub {
		case "get":
			return v.getTask(ctx, sh.rt, id)
		case "result":
			return v.waitTask(ctx, sh.rt, id)
		}
		return v.cancelTask(ctx, sh.rt, id)
	}
	return usageErr("tasks wants list, start NAME, get ID, result ID or cancel ID, not %q (type help)", sub)
}
