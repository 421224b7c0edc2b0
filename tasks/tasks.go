// Package tasks holds the state of MCP tasks, as Snodo's client reports
// them in either protocol era: a tool call that the server runs in the
// background, which the client polls until it ends (the legacy era's
// experimental tasks of 2025-11-25, and the io.modelcontextprotocol/tasks
// extension of 2026-07-28). The client's methods that create, follow and
// cancel tasks are on snodo.Client (CallTool with snodo.WithTask, GetTask,
// WaitTask, CancelTask, Tasks).
package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/snodo/snodo/internal/jsoncodec"
	"github.com/snodo/snodo/jsonrpc"
)

// MaxIDBytes bounds a task ID: the client sends it back with every poll,
// and refuses a longer one, from the server or from its caller.
const MaxIDBytes = 4096

// Status is the state of a task.
type Status string

// Task statuses. Completed, failed and cancelled are terminal.
const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Terminal reports whether s is a final status: completed, failed or
// cancelled.
func (s Status) Terminal() bool {
	return s == Completed || s == Failed || s == Cancelled
}

func (s Status) known() bool {
	return s == Working || s == InputRequired || s.Terminal()
}

// ErrCancelled is the cause of the error for a task that ended cancelled;
// match it with errors.Is.
var ErrCancelled = errors.New("the task was cancelled")

// Task is the state of a task, as tasks/get, tasks/cancel, tasks/list, a
// status notification or the task-creating answer gave it, in either era.
type Task struct {
	TaskID        string `json:"taskId"`
	Status        Status `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt,omitempty"`
	LastUpdatedAt string `json:"lastUpdatedAt,omitempty"`
	// TTLMs is how long, in milliseconds from creation, the server keeps
	// the task (legacy ttl, 2026-07-28 ttlMs); nil when absent or
	// unlimited.
	TTLMs *int64 `json:"ttlMs,omitempty"`
	// PollIntervalMs is the server's suggested wait between polls (legacy
	// pollInterval, 2026-07-28 pollIntervalMs); nil when absent.
	PollIntervalMs *int64 `json:"pollIntervalMs,omitempty"`

	// The 2026-07-28 tasks/get answer carries, by status: the input
	// requests (input_required), the result (completed), the JSON-RPC
	// error (failed).
	InputRequests json.RawMessage `json:"inputRequests,omitempty"`
	Result        json.RawMessage `json:"result,omitempty"`
	Error         *jsonrpc.Error  `json:"error,omitempty"`

	Meta json.RawMessage `json:"_meta,omitempty"`
}

// taskWire reads a task in either era's spelling.
type taskWire struct {
	TaskID         *string         `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTL            *float64        `json:"ttl"`
	TTLMs          *float64        `json:"ttlMs"`
	PollInterval   *float64        `json:"pollInterval"`
	PollIntervalMs *float64        `json:"pollIntervalMs"`
	InputRequests  json.RawMessage `json:"inputRequests"`
	Result         json.RawMessage `json:"result"`
	Error          json.RawMessage `json:"error"`
	Meta           json.RawMessage `json:"_meta"`
}

// UnmarshalJSON implements json.Unmarshaler: it reads both eras' names
// (ttl or ttlMs, pollInterval or pollIntervalMs) and checks what the
// client relies on: a task ID (at most 4096 bytes), a known status, and
// durations that are non-negative numbers.
func (t *Task) UnmarshalJSON(data []byte) error {
	var w taskWire
	if err := jsoncodec.Unmarshal(data, &w); err != nil {
		return err
	}
	if w.TaskID == nil || *w.TaskID == "" {
		return errors.New("a task needs a taskId")
	}
	if len(*w.TaskID) > MaxIDBytes {
		return fmt.Errorf("a taskId of %d bytes is over the limit of %d", len(*w.TaskID), MaxIDBytes)
	}
	s := Status(w.Status)
	if !s.known() {
		return fmt.Errorf("task %q has an unknown status %q", *w.TaskID, w.Status)
	}
	ttl, err := millis("ttl", w.TTLMs, w.TTL)
	if err != nil {
		return err
	}
	poll, err := millis("pollInterval", w.PollIntervalMs, w.PollInterval)
	if err != nil {
		return err
	}
	*t = Task{TaskID: *w.TaskID, Status: s, StatusMessage: w.StatusMessage, CreatedAt: w.CreatedAt,
		LastUpdatedAt: w.LastUpdatedAt, TTLMs: ttl, PollIntervalMs: poll, Meta: nonNull(w.Meta),
		InputRequests: nonNull(w.InputRequests), Result: nonNull(w.Result)}
	if e := nonNull(w.Error); e != nil {
		var je jsonrpc.Error
		if err := jsoncodec.Unmarshal(e, &je); err != nil {
			return fmt.Errorf("task %q: invalid error: %w", t.TaskID, err)
		}
		je.Kind = jsonrpc.KindServer
		t.Error = &je
	}
	return nil
}

// millis reads a duration in milliseconds from the first non-nil of vs.
func millis(name string, vs ...*float64) (*int64, error) {
	for _, v := range vs {
		if v == nil {
			continue
		}
		if *v < 0 || math.IsNaN(*v) {
			return nil, fmt.Errorf("%s must be a non-negative number of milliseconds, got %v", name, *v)
		}
		n := int64(math.MaxInt64 / int64(time.Millisecond))
		if *v < float64(n) {
			n = int64(*v)
		}
		return &n, nil
	}
	return nil, nil
}

func nonNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// PollInterval returns the server's suggested wait between polls, 0 when
// it suggested none.
func (t *Task) PollInterval() time.Duration {
	if t.PollIntervalMs == nil {
		return 0
	}
	return time.Duration(*t.PollIntervalMs) * time.Millisecond
}
