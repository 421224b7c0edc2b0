package snodo_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/snodo/snodo/internal/interop/gosdkserver"
)

// exampleServer is the command the examples run: this test binary, under
// that name, serves MCP with the official Go SDK (modern and legacy eras;
// --legacy for a legacy-only server).
const exampleServer = "mcp-example-server"

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == exampleServer {
		os.Exit(gosdkserver.Run(slices.Contains(os.Args[1:], "--legacy")))
	}
	dir, err := os.MkdirTemp("", "snodo-example")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	self, err := os.Executable()
	if err == nil {
		err = os.Symlink(self, filepath.Join(dir, exampleServer))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	code := 0
	func() {
		defer os.RemoveAll(dir)
		code = m.Run()
		if code == 0 {
			// The examples close their clients, which closes the servers'
			// stdin; a server exits at EOF in its own time (slowly under
			// the race detector), and its connection's last goroutine
			// with it.
			err := goleak.Find()
			for i := 0; err != nil && i < 60; i++ {
				time.Sleep(500 * time.Millisecond)
				err = goleak.Find()
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "goleak:", err)
				code = 1
			}
		}
	}()
	os.Exit(code)
}
