package stdio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/snodo/snodo/internal/admit"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/internal/rpc"
)

// DefaultMaxQueuedBytes is the default of Config.MaxQueuedBytes: four
// times jsonrpc.DefaultMaxLineBytes.
const DefaultMaxQueuedBytes = 4 * jsonrpc.DefaultMaxLineBytes

// ErrQueueFull is the cause of the error of a message refused because
// Config.MaxQueuedBytes are already waiting for the server to read its
// stdin. The connection stays up.
var ErrQueueFull = errors.New("stdio: too many bytes queued for the server's stdin")

// ErrClosed is the cause of the error of a connection stopped by Close.
var ErrClosed = errors.New("stdio: connection closed")

// exitGrace is how long the reader keeps reading stdout after the server
// process has exited, for the responses still in the pipe. A grandchild that
// inherited stdout could otherwise keep it open for ever.
const exitGrace = 500 * time.Millisecond

// stderrGrace is how long reaping waits, after the server has exited, for
// a Stderr copy to reach EOF.
const stderrGrace = 2 * time.Second

// EnvVar is one change to the server's environment.
type EnvVar struct {
	Name, Value string
	// Unset removes the variable from the inherited environment; Value is
	// then ignored.
	Unset bool
}

// Set returns an EnvVar that sets name to value.
func Set(name, value string) EnvVar { return EnvVar{Name: name, Value: value} }

// Unset returns an EnvVar that removes name from the environment.
func Unset(name string) EnvVar { return EnvVar{Name: name, Unset: true} }

// Config says which server to start and how to talk to it.
type Config struct {
	// Command is the program to run. It is run directly, never through a
	// shell; a name without a slash is looked up in PATH.
	Command string
	Args    []string
	// Env is applied over the parent's environment, in order.
	Env []EnvVar
	// Dir is the working directory; empty means the parent's.
	Dir string
	// Stderr receives the server's stderr; nil means inherited (os.Stderr).
	// A writer that is not an *os.File is fed by a goroutine that copies
	// continuously, so the server never blocks on an unread pipe unless the
	// writer itself blocks.
	Stderr io.Writer

	// MaxLineBytes is the longest line accepted from the server; 0 means
	// jsonrpc.DefaultMaxLineBytes (16 MiB). The rest of a longer line is
	// discarded as it arrives, so the request it answered times out; later
	// responses are unaffected.
	MaxLineBytes int
	// OnServerRequest answers the requests the server sends to the
	// client when the connection is used without the Snodo client, at
	// most 16 at once: a request over that limit, or a function that
	// panics, is answered with -32603. nil answers -32601 to every
	// server-to-client request. The Snodo client replaces it with its own
	// admission (SetInbound), under its one limit
	// (snodo.Options.MaxServerRequests) shared by both protocol eras.
	OnServerRequest transport.ServerRequestFunc
	// OnNotification receives the server's notifications that are not
	// routed to a request (progress) or a subscription (events). It runs in
	// the goroutine reading stdout (a caller waiting for its response, or
	// the connection's own) and must not block. nil drops them.
	OnNotification transport.NotificationFunc
	// MaxQueuedBytes is the most bytes of messages that may wait for the
	// server to read its stdin; 0 means DefaultMaxQueuedBytes (64 MiB).
	// Only a server that stops reading (or reads slower than the client
	// sends) fills the queue. A message that would take it past the limit
	// is refused at once: Request, Notify and Listen return a -32000
	// error of kind transport wrapping ErrQueueFull, which says how many
	// bytes are queued, and the connection stays up, so a server that
	// resumes reading gets what was queued. A message larger than the
	// limit is accepted when nothing else is waiting. The message the
	// writer is in the middle of does not count: memory held for the
	// server is at most MaxQueuedBytes plus that one message. Messages
	// whose senders give up (a timeout, a context, a closed subscription)
	// leave the queue, and free their bytes, at once. Answers to
	// server-to-client requests and notifications/cancelled count against
	// the limit too, so a server that sends requests without reading the
	// answers cannot grow the queue past it.
	MaxQueuedBytes int

	// SysProcAttr is passed to the server's exec.Cmd, e.g. to start it in
	// its own process group.
	SysProcAttr *syscall.SysProcAttr
}

// Conn is a connection to a server running as a child process.
type Conn struct {
	cmd     *exec.Cmd
	stdin   *os.File // our end of the server's stdin
	stdout  *os.File // our end of the server's stdout
	maxLine int

	out      outQueue        // messages for the writer
	writeMu  sync.Mutex      // held by whoever writes to stdin
	rawStdin syscall.RawConn // stdin, for the non-blocking fast path
	fast     fastWrite       // the fast path's write, under writeMu

	// Reading stdout (see reader.go).
	lr         *jsonrpc.LineReader // used by the holder of the baton only
	baton      chan struct{}       // holds the baton while it is free
	watch      *time.Timer         // starts the background reader (onWatch)
	watchArmed atomic.Bool         // watch is set and has not run yet
	watchDelay atomic.Int64        // watchDelay, as a time.Duration (tests change it)
	grace      atomic.Int64        // end of reading after the server's exit (UnixNano); 0: not exited

	// core is the call table, the routing of what the server sends, the
	// listens and server requests, and the connection's error. Its Mu
	// also guards the watches below and stopOwner.
	core       rpc.Core[*call]
	watches    map[<-chan struct{}]*ctxWatch // the contexts of pending calls, by Done channel
	spareWatch *ctxWatch                     // a watch stopped before it ran, for the next one
	sendAnswer func(*jsonrpc.Response)       // c.answer, made once

	done       chan struct{} // closed when the connection stops
	stopOnce   sync.Once
	handlerCtx context.Context // parent of server-request functions' contexts
	stopCtx    context.CancelCauseFunc
	stopOwner  func() bool

	exited  chan struct{} // closed when the server process has been reaped
	waitErr error
}

// Compile-time checks of the capabilities Conn offers.
var (
	_ transport.Transport = (*Conn)(nil)
	_ transport.Notifier  = (*Conn)(nil)
	_ transport.Listener  = (*Conn)(nil)
	_ transport.Inbound   = (*Conn)(nil)
)

// Connect starts the server and returns the connection to it.
//
// ctx is the connection's owner: when it ends, the connection closes, with
// context.Cause(ctx) as the reason (see CloseWithCause). Cancelling ctx
// after Connect has returned does not kill the server; it closes its stdin.
func Connect(ctx context.Context, cfg Config) (*Conn, error) {
	if cfg.Command == "" {
		return nil, errors.New("stdio: Config.Command is empty")
	}
	if err := ctx.Err(); err != nil {
		return nil, transport.ConnectionError("not started", context.Cause(ctx))
	}
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Dir = cfg.Dir
	cmd.Env = environ(os.Environ(), cfg.Env)
	cmd.SysProcAttr = cfg.SysProcAttr
	cmd.Stderr = cfg.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	// For a Stderr that is not a file, exec copies from a pipe until EOF; a
	// grandchild holding that pipe must not keep the server unreaped.
	cmd.WaitDelay = stderrGrace
	// Our own pipes, not cmd.StdinPipe/StdoutPipe: os.Pipe files are in
	// the runtime poller, so a blocked Write is woken by Close and a Read
	// can be given a deadline.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdio: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("stdio: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("stdio: starting %s: %w", cfg.Command, err)
	}
	// The child has its copies; ours would hide EOF from either side.
	inR.Close()
	outW.Close()

	c := &Conn{
		cmd:     cmd,
		stdin:   inW,
		stdout:  outR,
		maxLine: cfg.MaxLineBytes,
		watches: make(map[<-chan struct{}]*ctxWatch),
		done:    make(chan struct{}),
		exited:  make(chan struct{}),
	}
	c.core.Init(admit.Serve(cfg.OnServerRequest, admit.New(0)), cfg.OnNotification)
	c.core.OnRemove = c.unwatchLocked
	c.sendAnswer = c.answer
	if c.maxLine <= 0 {
		c.maxLine = jsonrpc.DefaultMaxLineBytes
	}
	if c.rawStdin, err = inW.SyscallConn(); err != nil {
		// Not expected for a pipe; the process is running, so end it
		// the polite way.
		inW.Close()
		outR.Close()
		go cmd.Wait()
		return nil, fmt.Errorf("stdio: %w", err)
	}
	c.out.init(cfg.MaxQueuedBytes)
	c.fast.init()
	c.handlerCtx, c.stopCtx = context.WithCancelCause(context.Background())
	c.lr = jsonrpc.NewLineReader(c.stdout, c.maxLine)
	c.baton = make(chan struct{}, 1)
	c.watch = time.AfterFunc(time.Hour, c.onWatch)
	c.watch.Stop()
	c.watchDelay.Store(int64(watchDelay))
	go c.waitLoop()
	go c.writeLoop()
	go c.background() // holding the baton from the start
	stopOwner := context.AfterFunc(ctx, func() { c.CloseWithCause(context.Cause(ctx)) })
	c.core.Mu.Lock()
	c.stopOwner = stopOwner
	c.core.Mu.Unlock()
	return c, nil
}

// environ applies changes over base, in order.
func environ(base []string, changes []EnvVar) []string {
	env := append([]string(nil), base...)
	for _, ch := range changes {
		prefix := ch.Name + "="
		kept := env[:0]
		for _, kv := range env {
			if !strings.HasPrefix(kv, prefix) {
				kept = append(kept, kv)
			}
		}
		env = kept
		if !ch.Unset {
			env = append(env, prefix+ch.Value)
		}
	}
	return env
}

// SetInbound replaces the dispatcher of server-to-client requests (and with
// it Config.OnServerRequest) and the receiver of unrouted notifications,
// for messages that arrive after it.
func (c *Conn) SetInbound(onRequest transport.DispatchFunc, onNotification transport.NotificationFunc) {
	c.core.SetInbound(onRequest, onNotification)
}

// Close closes the server's stdin. An MCP stdio server exits at EOF after
// finishing the requests it admitted; Close neither signals nor kills it
// (use Wait to see it exit). Requests in flight and later requests fail
// with a -32000 connection error wrapping ErrClosed; running
// server-request functions are cancelled and their answers not sent; open
// subscriptions end with -32000.
//
// Note: until the server exits, a goroutine keeps reading (and discarding)
// its stdout, so that it never blocks on a full pipe while finishing, and
// another waits to reap it. A server that does not exit at EOF must be
// stopped by its owner, with a signal to Pid (see Config.SysProcAttr for
// process groups).
func (c *Conn) Close() error { return c.CloseWithCause(ErrClosed) }

// CloseWithCause is Close with cause as the reason: Err, and the errors of
// requests that fail because of it, wrap cause. A nil cause is ErrClosed.
// Closing a stopped connection does nothing.
func (c *Conn) CloseWithCause(cause error) error {
	if cause == nil {
		cause = ErrClosed
	}
	c.stop(transport.ConnectionError("connection closed", cause))
	return nil
}

// Done returns a channel that is closed once the connection has stopped.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection stopped: a -32000 *jsonrpc.Error whose
// cause is the reason. It is nil while the connection runs.
func (c *Conn) Err() error { return c.core.Err() }

// Pid returns the server's process ID.
func (c *Conn) Pid() int { return c.cmd.Process.Pid }

// Wait waits for the server process to exit and returns its state, with the
// error of exec.Cmd.Wait (an *exec.ExitError for a non-zero exit). The
// process is reaped whether or not Wait is called. If ctx ends first, Wait
// returns ctx's error; the server keeps running.
func (c *Conn) Wait(ctx context.Context) (*os.ProcessState, error) {
	select {
	case <-c.exited:
		return c.cmd.ProcessState, c.waitErr
	default:
	}
	select {
	case <-c.exited:
		return c.cmd.ProcessState, c.waitErr
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// waitLoop reaps the server.
func (c *Conn) waitLoop() {
	c.waitErr = c.cmd.Wait()
	close(c.exited)
	// The responses the server wrote before exiting are in the pipe; give
	// the reader a moment for them, then end it even if a grandchild holds
	// stdout open.
	c.grace.Store(time.Now().Add(exitGrace).UnixNano())
	c.poke()
}

// stop stops the connection with err (a -32000 error), once.
func (c *Conn) stop(err *jsonrpc.Error) {
	c.stopOnce.Do(func() {
		c.core.Mu.Lock()
		// Every call still pending is claimed here, and sent the
		// connection's sentinel: its caller waits on its response channel
		// alone. No call is added once the error is set.
		calls, listens := c.core.StopLocked(err)
		for _, cl := range calls {
			c.unwatchLocked(cl)
		}
		stopOwner := c.stopOwner
		c.core.Mu.Unlock()
		// Sent before done is closed: a caller that sees the connection
		// stopped finds its value in its channel.
		for _, cl := range calls {
			cl.resp <- respStopped
		}
		close(c.done)
		c.poke()  // a caller reading stdout returns
		c.drain() // nobody may read: drain stdout until the server exits
		c.stopCtx(err)
		// Closing stdin is what tells the server to finish; it also wakes
		// a writer blocked on a server that does not read.
		c.stdin.Close()
		for _, ls := range listens {
			ls.Fail(err)
		}
		if stopOwner != nil {
			stopOwner()
		}
	})
}

// stopped returns the connection's error if it has stopped.
func (c *Conn) stopped() error {
	select {
	case <-c.done:
		return c.Err()
	default:
		return nil
	}
}
