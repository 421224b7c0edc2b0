package tasks_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/snodo/snodo/tasks"
)

// A task reads in either era's spelling: legacy ttl and pollInterval,
// 2026-07-28 ttlMs and pollIntervalMs; the 2026-07-28 answer's result,
// input requests and error are kept.
func TestTaskReadsBothEras(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"legacy", `{"taskId":"t1","status":"working","ttl":60000,"pollInterval":250,"createdAt":"2026-12-04T00:00:00Z"}`},
		{"modern", `{"taskId":"t1","status":"working","ttlMs":60000,"pollIntervalMs":250,"createdAt":"2026-12-04T00:00:00Z"}`},
	} {
		var task tasks.Task
		if err := json.Unmarshal([]byte(tc.in), &task); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if task.TaskID != "t1" || task.Status != tasks.Working || task.TTLMs == nil || *task.TTLMs != 60000 ||
			task.PollInterval() != 250*time.Millisecond || task.CreatedAt == "" {
			t.Errorf("%s: %+v", tc.name, task)
		}
	}
	var done tasks.Task
	in := `{"taskId":"t2","status":"failed","error":{"code":-32603,"message":"boom"},"result":null,"_meta":{"k":1}}`
	if err := json.Unmarshal([]byte(in), &done); err != nil {
		t.Fatal(err)
	}
	if done.Error == nil || done.Error.Code != -32603 || done.Result != nil || string(done.Meta) != `{"k":1}` || !done.Status.Terminal() {
		t.Errorf("%+v", done)
	}
	if (&tasks.Task{}).PollInterval() != 0 {
		t.Error("no suggestion should read as 0")
	}
}

// What a server says about a task is checked: an ID present and bounded,
// a known status, durations that are non-negative numbers; a huge one is
// clamped, not overflowed.
func TestTaskRefusesWhatTheClientCannotUse(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"status":"working"}`, "needs a taskId"},
		{`{"taskId":"","status":"working"}`, "needs a taskId"},
		{`{"taskId":"` + strings.Repeat("x", tasks.MaxIDBytes+1) + `","status":"working"}`, "over the limit"},
		{`{"taskId":"t","status":"sleeping"}`, "unknown status"},
		{`{"taskId":"t","status":"working","ttl":-1}`, "non-negative"},
		{`{"taskId":"t","status":"working","pollIntervalMs":-5}`, "non-negative"},
		{`{"taskId":"t","status":"failed","error":"boom"}`, "invalid error"},
	} {
		var task tasks.Task
		err := json.Unmarshal([]byte(tc.in), &task)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.80s: error %v, want one saying %q", tc.in, err, tc.want)
		}
	}
	var task tasks.Task
	if err := json.Unmarshal([]byte(`{"taskId":"t","status":"working","ttlMs":1e300}`), &task); err != nil {
		t.Fatal(err)
	}
	if *task.TTLMs != math.MaxInt64/int64(time.Millisecond) {
		t.Errorf("ttlMs %d, want the longest a time.Duration holds", *task.TTLMs)
	}
}

// Completed, failed and cancelled are terminal; working and input_required
// are not.
func TestStatusTerminal(t *testing.T) {
	for s, want := range map[tasks.Status]bool{
		tasks.Working: false, tasks.InputRequired: false,
		tasks.Completed: true, tasks.Failed: true, tasks.Cancelled: true,
	} {
		if s.Terminal() != want {
			t.Errorf("%s: Terminal() = %v", s, !want)
		}
	}
}
