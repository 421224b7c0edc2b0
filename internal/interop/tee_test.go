package interop

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snodo/snodo/internal/schemacheck"
)

// Environment of the tee role: where to write the log, and the command to
// run as a JSON array, with the role the child takes (if it is the test
// binary again).
const (
	teeLogEnv       = "SNODO_TEE_LOG"
	teeCmdEnv       = "SNODO_TEE_CMD"
	teeChildRoleEnv = "SNODO_TEE_CHILD_ROLE"
)

// runTee sits between the client and the real server: it copies the
// client's lines to the server and the server's lines to the client, and
// records both, marked "C " (client to server) and "S ", in the log.
// teeGrace is how long the tee waits for its server to exit at the end of
// the client's input before interrupting it.
const teeGrace = 3 * time.Second

func runTee() int {
	logf, err := os.Create(os.Getenv(teeLogEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "tee:", err)
		return 2
	}
	defer logf.Close()
	var argv []string
	if err := json.Unmarshal([]byte(os.Getenv(teeCmdEnv)), &argv); err != nil || len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "tee: bad", teeCmdEnv)
		return 2
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), roleEnv+"="+os.Getenv(teeChildRoleEnv))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return 2
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "tee:", err)
		return 2
	}
	var mu sync.Mutex
	record := func(dir string, line []byte) {
		mu.Lock()
		defer mu.Unlock()
		logf.WriteString(dir)
		logf.Write(line)
		logf.WriteString("\n")
	}
	copyLines := func(dir string, r io.Reader, w io.Writer) {
		br := bufio.NewReaderSize(r, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				record(dir, []byte(strings.TrimRight(string(line), "\r\n")))
				if _, werr := w.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	done := make(chan struct{})
	go func() {
		copyLines("S ", out, os.Stdout)
		close(done)
	}()
	copyLines("C ", os.Stdin, in)
	in.Close()
	select {
	case <-done:
	case <-time.After(teeGrace):
		// A server that outlives its stdin (server-everything keeps the
		// timers of its tasks) is interrupted, as the runner would.
		_ = cmd.Process.Signal(os.Interrupt)
		<-done
	}
	_ = cmd.Wait()
	return 0
}

// checkWire validates every client-written message of a tee log against
// the schema of the era in use: a request whose _meta names a protocol
// version is checked against that version's schema, initialize and what
// follows it against 2025-11-25's; a response to a server request is
// checked against the result of the request's method.
func checkWire(t *testing.T, logPath string) {
	t.Helper()
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatalf("wire log: %v", err)
	}
	check, err := schemacheck.Load()
	if err != nil {
		t.Fatal(err)
	}
	schema := schemacheck.Legacy
	serverRequests := map[string]string{} // id → method
	checked := 0
	for _, line := range strings.Split(string(data), "\n") {
		if len(line) < 2 {
			continue
		}
		dir, msg := line[:2], []byte(line[2:])
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta struct {
					Version string `json:"io.modelcontextprotocol/protocolVersion"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal(msg, &m); err != nil {
			if dir == "C " {
				t.Errorf("client wrote a line that is not JSON: %s", msg)
			}
			continue
		}
		if dir == "S " {
			if m.Method != "" && m.ID != nil {
				serverRequests[string(m.ID)] = m.Method
			}
			continue
		}
		switch {
		case m.Method != "" && m.ID != nil:
			if m.Params.Meta.Version != "" {
				schema = schemacheck.SchemaFor(m.Params.Meta.Version)
			} else if m.Method == "initialize" {
				schema = schemacheck.Legacy
			}
			err = check.ClientRequest(schema, msg)
		case m.Method != "":
			err = check.ClientNotification(schema, msg)
		default:
			method, ok := serverRequests[string(m.ID)]
			if !ok {
				t.Errorf("client answered a request the server never sent: %s", msg)
				continue
			}
			err = check.ClientResponse(schema, method, msg)
		}
		checked++
		if err != nil {
			t.Errorf("client message is not schema-valid: %v\n%s", err, msg)
		}
	}
	if checked == 0 {
		t.Error("the wire log has no client message")
	}
	t.Logf("%d client messages schema-valid", checked)
}

// clientLines returns the client-written lines of a tee log.
func clientLines(t *testing.T, logPath string) []string {
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "C ") {
			out = append(out, line[2:])
		}
	}
	return out
}
