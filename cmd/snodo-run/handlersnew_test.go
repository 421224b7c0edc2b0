package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `handlers new` for every language: what it writes builds with that
// language's toolchain (the ones .ci/deps.d/30-wasm-toolchain.sh installs),
// passes `handlers check`, and answers its request.json through
// `handlers test`, as written.
func TestHandlersNewBuildsChecksAndTestsInEveryLanguage(t *testing.T) {
	asc := filepath.Join(examplesDir, "assemblyscript", "node_modules", ".bin", "asc")
	cases := []struct {
		lang    string
		methods []string
		build   []string // the build command, run in the project
		want    string   // in the handlers test output
	}{
		{"go", []string{"elicitation/create", "sampling/createMessage", "roots/list", "progress", "events"},
			[]string{"go", "build", "-buildmode=c-shared", "-o", "NAME.wasm", "."}, `{"action":"decline"}`},
		{"rust", nil, []string{"./build.sh"}, `{"action":"decline"}`},
		{"rust", []string{"progress", "events", "sampling/createMessage"}, []string{"./build.sh"}, `{"stop":false}`},
		{"c", []string{"sampling/createMessage", "roots/list"}, []string{"./build.sh"}, `"text":"Hello from c-sampling."`},
		{"as", []string{"roots/list", "progress"}, []string{"./build.sh"}, `{"roots":[]}`},
		{"wat", []string{"events", "elicitation/create"}, []string{"wat2wasm", "NAME.wat", "-o", "NAME.wasm"}, `{"stop":false}`},
	}
	for _, c := range cases {
		name := c.lang + "-default"
		if c.methods != nil {
			name = c.lang + "-" + strings.SplitN(c.methods[0], "/", 2)[0]
		}
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, name)
			args := []string{"handlers", "new", dir, "--lang", c.lang}
			for _, m := range c.methods {
				args = append(args, "--method", m)
			}
			rep := ok(t, cli(t, args...)).json(t)
			if rep["name"] != name || rep["lang"] != c.lang {
				t.Fatalf("report %v", rep)
			}
			for _, f := range []string{"README.md", "request.json"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Fatalf("%s not written: %v", f, err)
				}
			}
			argv := make([]string, len(c.build))
			for i, a := range c.build {
				argv[i] = strings.ReplaceAll(a, "NAME", name)
			}
			build := exec.Command(argv[0], argv[1:]...)
			build.Dir = dir
			build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "ASC="+asc)
			if goCache != "" {
				build.Env = append(build.Env, "GOCACHE="+goCache)
			}
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
			}
			wasm := filepath.Join(dir, name+".wasm")
			check := ok(t, cli(t, "handlers", "check", wasm)).json(t)
			if check["name"] != name {
				t.Fatalf("handlers check: %v", check)
			}
			// The README's try command, as the report gives it.
			try := strings.Fields(rep["try"].(string))
			if len(try) != 8 || try[0] != "snodo-run" || try[7] != "@request.json" {
				t.Fatalf("try command %q", rep["try"])
			}
			r := ok(t, cliWith(t, runOpts{dir: dir}, try[1:]...))
			if !strings.Contains(r.stdout, c.want) {
				t.Fatalf("%s answered %s, want %s\nstderr: %s", rep["try"], r.stdout, c.want, r.stderr)
			}
			readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
			if !strings.Contains(string(readme), rep["try"].(string)) {
				t.Fatalf("README.md does not say how to try the module:\n%s", readme)
			}
		})
	}
}

// `handlers new` refuses an existing directory, a bad name, an unknown
// language or method, with a usage error that says what to give instead,
// and writes nothing.
func TestHandlersNewRefusesBadInput(t *testing.T) {
	parent := t.TempDir()
	existing := filepath.Join(parent, "taken")
	if err := os.Mkdir(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(parent, "elsewhere"), filepath.Join(parent, "link")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{existing, "--lang", "go"}, []string{"already exists", "give a new directory"}},
		{[]string{filepath.Join(parent, "link"), "--lang", "go"}, []string{"already exists"}},
		{[]string{filepath.Join(parent, "Bad_Name"), "--lang", "go"}, []string{`bad name "Bad_Name"`, "lower-case letters"}},
		{[]string{filepath.Join(parent, "x\x1b[2J"), "--lang", "go"}, []string{"bad name"}},
		{[]string{filepath.Join(parent, "ok"), "--lang", "cobol"}, []string{`unknown language "cobol"`, "go, rust, c, as, wat"}},
		{[]string{filepath.Join(parent, "ok"), "--lang", "rust", "--method", "tools/call"}, []string{`unknown method "tools/call"`, "elicitation/create"}},
		{[]string{filepath.Join(parent, "ok"), "--lang", "rust", "--method", "events", "--method", "events"}, []string{"given twice"}},
		{[]string{filepath.Join(parent, "ok")}, []string{"wants --lang"}},
		{[]string{filepath.Join(parent, "missing", "ok"), "--lang", "c"}, []string{"parent directory must exist"}},
	} {
		e := exits(t, cli(t, append([]string{"handlers", "new"}, c.args...)...), 2, "usage")
		contains(t, "error", e.Message, c.want...)
		if strings.ContainsRune(e.Message, '\x1b') {
			t.Errorf("raw escape in %q", e.Message)
		}
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		b, _ := json.Marshal(names)
		t.Fatalf("refused runs wrote %s", b)
	}
}
