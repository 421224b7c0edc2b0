package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snodo/snodo"
)

// A call that ends before its progress does (Ctrl-C, an error) clears the
// bar where it stands: the bar never shows 100% that the server did not
// report. One that reached its total shows 100% until it ends.
func TestProgressBarEndsWhereItStands(t *testing.T) {
	total := 10.0
	for _, tc := range []struct {
		name    string
		reached float64
		want100 bool
	}{
		{"interrupted at 30%", 3, false},
		{"spinner interrupted", -1, false},
		{"completed", 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			a := &app{progress: &progressView{}}
			show := a.progress.showBar(f)
			if tc.reached < 0 {
				show(snodo.Progress{Progress: 1, Message: "working"})
			} else {
				show(snodo.Progress{Progress: tc.reached, Total: &total, Message: "step"})
			}
			a.endProgress()
			raw, err := os.ReadFile(f.Name())
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(raw), "100%"); got != tc.want100 {
				t.Errorf("bar drew 100%%: %v, want %v; it wrote %q", got, tc.want100, raw)
			}
		})
	}
}
