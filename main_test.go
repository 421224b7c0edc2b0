package snodo_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/snodo/snodo/internal/fakeserver"
	"github.com/snodo/snodo/internal/interop/gosdkserver"
)

// exampleServer is the command the examples run: this test binary, under
// that name, serves MCP with the official Go SDK (modern and legacy eras;
// --legacy for a legacy-only server).
const exampleServer = "mcp-example-server"

// readmeServer stands in for npx in the README's example (goAPI): run as
// "npx -y @modelcontextprotocol/server-everything", this test binary serves
// the same Go SDK server, which has the reference server's
// trigger-long-running-operation tool, so that the README's code runs as
// written without Node.js or the network.
const readmeServer = "npx"

func TestMain(m *testing.M) {
	fakeserver.Main(map[string]fakeserver.Scenario{"keepalive-freeze": keepaliveFreeze})
	switch filepath.Base(os.Args[0]) {
	case exampleServer:
		os.Exit(gosdkserver.Run(slices.Contains(os.Args[1:], "--legacy")))
	case readmeServer:
		if !slices.Contains(os.Args[1:], "@modelcontextprotocol/server-everything") {
			fmt.Fprintln(os.Stderr, "the test stand-in for npx serves only @modelcontextprotocol/server-everything")
			os.Exit(2)
		}
		os.Exit(gosdkserver.Run(false))
	}
	dir, err := os.MkdirTemp("", "snodo-example")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	self, err := os.Executable()
	for _, name := range []string{exampleServer, readmeServer} {
		if err == nil {
			err = os.Symlink(self, filepath.Join(dir, name))
		}
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
