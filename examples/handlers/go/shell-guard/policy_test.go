package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// commands is testdata/commands.json: the configuration and the command
// lines the module lets through and refuses with it.
type commands struct {
	Config    json.RawMessage
	Harmless  []string
	Dangerous []string
}

func loadCommands(t *testing.T) commands {
	b, err := os.ReadFile("testdata/commands.json")
	if err != nil {
		t.Fatal(err)
	}
	var c commands
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// Dangerous lines, each spelled the way an attacker would, are refused;
// harmless ones go. (The same table runs through the host in
// handlers/wasm and cmd/snodo-run.)
func TestCheck(t *testing.T) {
	c := loadCommands(t)
	if _, err := loadConfig(c.Config); err != nil {
		t.Fatal(err)
	}
	defer loadConfig(nil)
	for _, s := range c.Harmless {
		if err := check(s); err != nil {
			t.Errorf("harmless %q refused: %v", s, err)
		}
	}
	for _, s := range c.Dangerous {
		if err := check(s); err == nil {
			t.Errorf("dangerous %q let through", s)
		}
	}
}

// With "allow", every command the line runs must be listed, exactly.
func TestAllow(t *testing.T) {
	if _, err := loadConfig([]byte(`{"allow":["ls","git","grep"]}`)); err != nil {
		t.Fatal(err)
	}
	defer loadConfig(nil)
	for s, ok := range map[string]bool{
		"ls -la":                    true,
		"git status && ls | grep x": true,
		"FOO=1 ls":                  true,
		"cat /etc/passwd":           false,
		"ls; cat x":                 false,
		"ls $(cat x)":               false,
		"git log -n 3 `whoami`":     false,
		"/tmp/ls":                   false,
		"./ls":                      false,
		"LS":                        false,
		"ls | sh":                   false,
		"$X":                        false,
	} {
		if err := check(s); (err == nil) != ok {
			t.Errorf("%q: %v, want allowed %v", s, err, ok)
		}
	}
}

// A configuration the module cannot follow is an error saying what is
// wrong.
func TestConfigErrors(t *testing.T) {
	defer loadConfig(nil)
	for in, want := range map[string]string{
		`{"tool":["x"]}`:      `unknown field "tool"`,
		`{"tools":[]}`:        `"tools" must list`,
		`{"deny":["a | b"]}`:  "one command",
		`{"deny":[""]}`:       "one command",
		`{"deny":["rm $X"]}`:  "literal words",
		`{"allow":["ls -l"]}`: `"allow" lists command names`,
		`{"argument":1}`:      "configuration",
		`[1]`:                 "configuration",
	} {
		if _, err := loadConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

// Lines built to make the checks blow up — brace expansion past its
// bound, a word too long to expand, a command of 100,000 words behind a
// wrapper, deep nesting, strings in code nested in strings in code, many
// functions — are refused rather than let through unchecked; a long
// harmless here-document goes.
func TestHostileLines(t *testing.T) {
	if _, err := loadConfig(nil); err != nil {
		t.Fatal(err)
	}
	nest := func(open, close string, n int) string {
		return strings.Repeat(open, n) + "rm -rf /" + strings.Repeat(close, n)
	}
	py := "rm -rf /"
	for i := 0; i < 10; i++ {
		py = `python3 -c ` + strconv.Quote(`os.system(`+strconv.Quote(py)+`)`)
	}
	var fns strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&fns, "f%d() { :; }; ", i)
	}
	for name, line := range map[string]string{
		"257 alternatives":      "rm -rf {" + strings.Repeat("x,", 300) + "/}",
		"a long word to expand": "rm -rf {" + strings.Repeat("x", 5000) + ",/}",
		"100,000 words":         "sudo " + strings.Repeat("rm ", 100000) + "-rf /",
		"$( 100 deep":           nest("echo $(", ")", 100),
		"${ 1000 deep":          nest("echo ${x:-", "}", 1000),
		"( 100 deep":            nest("(", ")", 100),
		"python in python":      py,
		"300 functions":         fns.String() + "rm -rf /",
	} {
		if err := check(line); err == nil {
			t.Errorf("%s: let through", name)
		}
	}
	doc := "cat > notes.md <<'EOF'\n" + strings.Repeat("it's a line of notes, with $HOME and (parens)\n", 20000) + "EOF\n"
	if err := check(doc); err != nil {
		t.Errorf("a long here-document: %v", err)
	}
}
