package snodo_test

import (
	"os"
	"strings"
	"testing"
)

// The README's Go API example is example_test.go's goAPI, verbatim, so that
// it compiles and runs (Example_goAPI) as the README shows it.
func TestREADMEGoAPI(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	examples, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "## The Go API\n")
	if !ok {
		t.Fatal(`README.md has no "## The Go API" section`)
	}
	_, code, ok := strings.Cut(section, "```go\n")
	if ok {
		code, _, ok = strings.Cut(code, "```\n")
	}
	if !ok {
		t.Fatal("the Go API section of README.md has no Go code block")
	}
	if !strings.Contains(string(examples), code) {
		t.Errorf("README.md's Go API example is not in example_test.go verbatim:\n%s", code)
	}
	for _, line := range strings.Split(string(examples), "\n") {
		if strings.HasPrefix(line, "\t\"github.com/snodo/snodo") && line != "\t\"github.com/snodo/snodo\"" && line != "\t\"github.com/snodo/snodo/transport/stdio\"" && line != "\t\"github.com/snodo/snodo/abi\"" {
			t.Errorf("example_test.go imports %s: the README's example needs only snodo, transport/stdio and abi", strings.TrimSpace(line))
		}
	}
}
