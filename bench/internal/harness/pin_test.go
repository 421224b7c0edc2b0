package harness

import (
	"slices"
	"strings"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	for list, want := range map[string][]int{"0": {0}, "0-1": {0, 1}, "0,2-3": {0, 2, 3}, "1-1,4": {1, 4}} {
		got, err := parseCPUList(list)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v %v, want %v", list, got, err, want)
		}
	}
	for _, bad := range []string{"", "a", "3-1", "0,", "1-x"} {
		if got, err := parseCPUList(bad); err == nil {
			t.Errorf("%q: %v, want an error", bad, got)
		}
	}
}

// With pinning, the client runs under taskset on its CPU and the server's
// command line (which the client starts) moves the server to its own.
func TestPinnedServerCommandLine(t *testing.T) {
	p := Paths{Root: "/r", Bin: "/r/bin", Pin: &Pinning{Server: "0", Client: "1"}}
	c := Case{Server: Lean, Era: "legacy", Scenario: "seq", N: 1}
	if got := ServerArgv(p, c, Client{Name: Snodo}); !strings.HasPrefix(got, "taskset -c 0 /r/bin/leanserver --era legacy") {
		t.Errorf("pinned server argv %q", got)
	}
	if got := ServerArgv(p, c, Client{Name: Floor}); got != "taskset -c 0 /r/bin/floorchild" {
		t.Errorf("pinned floor server argv %q", got)
	}
	p.Pin = nil
	if got := ServerArgv(p, c, Client{Name: Snodo}); got != "/r/bin/leanserver --era legacy" {
		t.Errorf("unpinned server argv %q", got)
	}
}
