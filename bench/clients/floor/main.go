// Command floor drives the floor child (cmd/floorchild), which only copies
// lines, over the same kind of pipes as the Go clients (os.Pipe, through Go's
// poller), with the least a client must do: write a line holding an id, read
// lines until that id comes back. It gives the physical
// floor for the seq, conc and blob scenarios; elicit and slow have no floor.
//
// For the sequential scenarios the caller reads its own reply (no goroutine
// hand-off); for conc, one reader goroutine hands each line to the caller
// waiting on its id, the least any client with concurrent callers must do.
//
// With --transport http the floor is a net/http client of the lean server
// (http.go).
package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"unsafe"

	"github.com/snodo/snodo/bench/internal/driver"
)

func main() { driver.Main("floor", connect) }

type conn struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *bufio.Reader
	direct bool   // the caller reads its own reply
	long   []byte // reused for lines longer than the reader's buffer

	wmu sync.Mutex

	mu      sync.Mutex
	nextID  int
	waiting map[int]chan []byte
	done    chan struct{}
}

func connect(ctx context.Context, cfg driver.Config) (driver.Conn, error) {
	if cfg.URL != "" {
		return connectHTTP(cfg), nil
	}
	childIn, stdin, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdout, childOut, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.Server[0], cfg.Server[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = childIn, childOut, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	childIn.Close()
	childOut.Close()
	c := &conn{
		cmd:     cmd,
		stdin:   stdin,
		stdout:  bufio.NewReaderSize(stdout, 64<<10),
		direct:  cfg.Scenario != "conc",
		waiting: map[int]chan []byte{},
		done:    make(chan struct{}),
	}
	if !c.direct {
		go c.readLoop()
	}
	return c, nil
}

// readLine returns the next line without its newline. A line longer than
// the reader's buffer is collected in c.long, which is reused, so the slice
// is valid until the next call.
func (c *conn) readLine() ([]byte, error) {
	line, err := c.stdout.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		c.long = append(c.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = c.stdout.ReadSlice('\n')
			c.long = append(c.long, line...)
		}
		line = c.long
	}
	if err != nil {
		return nil, err
	}
	return line[:len(line)-1], nil
}

func (c *conn) readLoop() {
	defer close(c.done)
	for {
		line, err := c.readLine()
		if err != nil {
			return
		}
		sp := bytes.IndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		id, _ := strconv.Atoi(string(line[:sp]))
		c.mu.Lock()
		ch := c.waiting[id]
		delete(c.waiting, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- append([]byte(nil), line[sp+1:]...)
		}
	}
}

// Echo sends "<id> <text>\n" and returns what comes back after the id.
func (c *conn) Echo(ctx context.Context, text string) (string, error) {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	var ch chan []byte
	if !c.direct {
		ch = make(chan []byte, 1)
		c.waiting[id] = ch
	}
	c.mu.Unlock()
	line := make([]byte, 0, 32+len(text))
	line = strconv.AppendInt(line, int64(id), 10)
	line = append(line, ' ')
	line = append(line, text...)
	line = append(line, '\n')
	c.wmu.Lock()
	_, err := c.stdin.Write(line)
	c.wmu.Unlock()
	if err != nil {
		return "", err
	}
	if c.direct {
		reply, err := c.readLine()
		if err != nil {
			return "", err
		}
		sp := bytes.IndexByte(reply, ' ')
		if sp < 0 || string(reply[:sp]) != strconv.Itoa(id) {
			return "", fmt.Errorf("reply %q is not for %d", reply, id)
		}
		return string(reply[sp+1:]), nil
	}
	select {
	case reply := <-ch:
		return string(reply), nil
	case <-c.done:
		return "", fmt.Errorf("floor child exited")
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Blob asks for a line of n bytes; only the sequential scenarios use it.
func (c *conn) Blob(ctx context.Context, n int) (string, error) {
	if !c.direct {
		return "", driver.ErrUnsupported
	}
	if _, err := c.stdin.Write([]byte("B" + strconv.Itoa(n) + "\n")); err != nil {
		return "", err
	}
	reply, err := c.readLine()
	if err != nil || len(reply) == 0 {
		return "", err
	}
	// The caller checks the reply before the next call, so the reused
	// buffer can be lent without a copy.
	return unsafe.String(&reply[0], len(reply)), nil
}

func (c *conn) Ask(ctx context.Context, q string) (string, error) {
	return "", driver.ErrUnsupported
}

func (c *conn) Slow(ctx context.Context, ms, steps int, progress func()) (string, error) {
	return "", driver.ErrUnsupported
}

func (c *conn) Close() error {
	c.stdin.Close()
	return c.cmd.Wait()
}
