package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// make demo shows each command it runs as a shell reads it back, so it can
// be copied and pasted: the JSON of --handler-config quoted, not bare.
func TestDemoShowsCommandsQuotedForAShell(t *testing.T) {
	raw, err := os.ReadFile("../../scripts/demo.sh")
	if err != nil {
		t.Fatal(err)
	}
	script := string(raw)
	start := strings.Index(script, "\nshellquote() {\n")
	end := strings.Index(script[max(start, 0):], "\n}\n")
	if start < 0 || end < 0 {
		t.Fatal("scripts/demo.sh has no shellquote function")
	}
	fn := script[start : start+end+3]
	if !strings.Contains(script, `step() { printf '\n\033[1m$ %s\033[0m\n' "$(shellquote "$@")"; }`) {
		t.Error("step does not show its command through shellquote")
	}
	args := []string{"bin/snodo-run", "--handler-config",
		`{"values": {"name": "Ada Lovelace", "plan": "pro"}, "rules": [{"match": "delete", "action": "decline"}]}`,
		"it's", "", "$HOME", "a\\b", "--arg", "steps=10", "bin/demo"}
	out, err := exec.Command("bash", append([]string{"-c", fn + `shellquote "$@"`, "demo"}, args...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	shown := string(out)
	if !strings.Contains(shown, "bin/snodo-run --handler-config '{") || !strings.Contains(shown, " --arg steps=10 bin/demo") {
		t.Errorf("shown as %s", shown)
	}
	// A shell reads back the words given.
	back, err := exec.Command("bash", "-c", `printf '%s\0' `+shown).Output()
	if err != nil {
		t.Fatalf("%s: %v", shown, err)
	}
	if got := strings.Split(strings.TrimSuffix(string(back), "\x00"), "\x00"); !slices.Equal(got, args) {
		t.Errorf("a shell reads %q back as %q, want %q", shown, got, args)
	}
}
