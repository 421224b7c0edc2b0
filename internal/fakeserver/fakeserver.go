// Package fakeserver runs a test binary as a scripted MCP server, the way
// os/exec's own tests re-execute the test binary as a helper process.
//
// A test package lists its scenarios and calls Main first thing in TestMain:
//
//	func TestMain(m *testing.M) {
//		fakeserver.Main(map[string]fakeserver.Scenario{
//			"echo": func(s *fakeserver.Server) { ... },
//		})
//		os.Exit(m.Run())
//	}
//
// A test then starts Executable() with ScenarioEnv set to a scenario's name
// (and any arguments, which the scenario finds in Server.Args). The
// scenario talks JSON-RPC on stdin and stdout with Read and Send; when it
// returns, the process exits with status 0.
package fakeserver

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/snodo/snodo/jsonrpc"
)

// ScenarioEnv is the environment variable that makes a test binary run as
// the fake server it names instead of running its tests.
const ScenarioEnv = "SNODO_FAKE_SERVER"

// Scenario is a scripted server.
type Scenario func(s *Server)

// Main runs the scenario named by ScenarioEnv and exits, when the variable
// is set; otherwise it returns at once. An unknown name exits with status 2.
func Main(scenarios map[string]Scenario) {
	name, ok := os.LookupEnv(ScenarioEnv)
	if !ok {
		return
	}
	run, ok := scenarios[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "fakeserver: no scenario %q\n", name)
		os.Exit(2)
	}
	s := &Server{
		Args: os.Args[1:],
		in:   jsonrpc.NewLineReader(os.Stdin, 1<<30),
	}
	run(s)
	os.Exit(0)
}

// Executable returns the path of the running test binary.
func Executable() string {
	exe, err := os.Executable()
	if err != nil {
		panic("fakeserver: " + err.Error())
	}
	return exe
}

// Server is the scenario's side of the connection: stdin and stdout.
type Server struct {
	// Args are the command-line arguments the server was started with.
	Args []string

	in *jsonrpc.LineReader
	mu sync.Mutex // serializes writes to stdout
}

// Read returns the next message from stdin, skipping lines that are not
// JSON-RPC. It returns io.EOF when stdin is closed.
func (s *Server) Read() (jsonrpc.Message, error) {
	for {
		line, err := s.in.ReadLine()
		if err != nil {
			return nil, err
		}
		if m, err := jsonrpc.Decode(line); err == nil {
			return m, nil
		}
	}
}

// Send writes m as one line to stdout. A failed write exits the process
// with status 3.
func (s *Server) Send(m jsonrpc.Message) {
	b, err := jsonrpc.Encode(m)
	if err != nil {
		panic(err)
	}
	s.WriteLine(b)
}

// WriteLine writes b and a newline to stdout, in one Write.
func (s *Server) WriteLine(b []byte) {
	s.Write(append(b[:len(b):len(b)], '\n'))
}

// Write writes b to stdout as it is. A failed write exits the process with
// status 3.
func (s *Server) Write(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := os.Stdout.Write(b); err != nil {
		os.Exit(3)
	}
}

// WriteFrom copies r to stdout, holding the output for the whole copy, so
// that a huge line can be streamed without being built in memory.
func (s *Server) WriteFrom(r io.Reader) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := io.Copy(os.Stdout, r); err != nil {
		os.Exit(3)
	}
}

// Notify sends a notification whose params are v encoded with
// encoding/json.
func (s *Server) Notify(method string, v any) {
	s.Send(&jsonrpc.Notification{Method: method, Params: mustJSON(v)})
}

// Reply sends a success response whose result is v encoded with
// encoding/json.
func (s *Server) Reply(id jsonrpc.ID, v any) {
	s.Send(jsonrpc.NewResult(id, mustJSON(v)))
}

func mustJSON(v any) json.RawMessage {
	if raw, ok := v.(json.RawMessage); ok {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
