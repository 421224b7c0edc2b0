// Command floor drives the floor child (cmd/floorchild), which only copies
// lines, over the same kind of pipes as the MCP clients use, with the least a
// client must do: write a line holding an id, and hand the echoed line to the
// caller waiting on that id. It gives the physical floor for the seq, conc and
// blob scenarios; elicit and slow have no floor.
package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"

	"github.com/snodo/snodo/bench/internal/driver"
)

func main() { driver.Main("floor", connect) }

type conn struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser

	wmu  sync.Mutex
	wbuf []byte

	mu      sync.Mutex
	nextID  int
	waiting map[int]chan []byte
	done    chan struct{}
}

func connect(ctx context.Context, cfg driver.Config) (driver.Conn, error) {
	cmd := exec.Command(cfg.Server[0], cfg.Server[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &conn{cmd: cmd, stdin: stdin, waiting: map[int]chan []byte{}, done: make(chan struct{})}
	go c.readLoop(stdout)
	return c, nil
}

func (c *conn) readLoop(r io.Reader) {
	defer close(c.done)
	br := bufio.NewReaderSize(r, 64<<10)
	var blobWaiter chan []byte
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return
		}
		line = line[:len(line)-1]
		if len(line) > 0 && line[0] == 'x' {
			// A blob line carries no id: it answers the one blob call.
			c.mu.Lock()
			blobWaiter = c.waiting[-1]
			delete(c.waiting, -1)
			c.mu.Unlock()
			blobWaiter <- line
			continue
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
			ch <- line[sp+1:]
		}
	}
}

func (c *conn) send(ctx context.Context, id int, line []byte) ([]byte, error) {
	ch := make(chan []byte, 1)
	c.mu.Lock()
	c.waiting[id] = ch
	c.mu.Unlock()
	c.wmu.Lock()
	_, err := c.stdin.Write(line)
	c.wmu.Unlock()
	if err != nil {
		return nil, err
	}
	select {
	case reply := <-ch:
		return reply, nil
	case <-c.done:
		return nil, fmt.Errorf("floor child exited")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Echo sends "<id> <text>\n" and returns what comes back after the id.
func (c *conn) Echo(ctx context.Context, text string) (string, error) {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	line := make([]byte, 0, 32+len(text))
	line = strconv.AppendInt(line, int64(id), 10)
	line = append(line, ' ')
	line = append(line, text...)
	line = append(line, '\n')
	reply, err := c.send(ctx, id, line)
	return string(reply), err
}

func (c *conn) Blob(ctx context.Context, n int) (string, error) {
	reply, err := c.send(ctx, -1, []byte("B"+strconv.Itoa(n)+"\n"))
	return string(reply), err
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
