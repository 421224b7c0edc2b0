package stdio_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/snodo/snodo/internal/fakeserver"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/internal/transporttest"
	"github.com/snodo/snodo/transport/stdio"
)

func init() { scenarios["stall"] = stallServer }

// stallServer reads its stdin line by line and checks that every line is
// one complete JSON value: a line cut short and run into the next one is
// not. Each request is answered with {"bytes", "bad", "answers"}: the
// length of its line, how many lines so far were not JSON-RPC, and how many
// responses (answers to its own requests) it has read. Each notification is
// reported as test/saw {method, bytes}.
//
// After answering test/stall it stops reading its stdin until it gets
// SIGUSR1. test/flood {count, method} is answered, then count requests
// for method are sent to the client, and then it stalls the same way.
func stallServer(s *fakeserver.Server) {
	resume := make(chan os.Signal, 1)
	signal.Notify(resume, syscall.SIGUSR1)
	in := jsonrpc.NewLineReader(os.Stdin, 1<<30)
	bad, answers := 0, 0
	for {
		line, err := in.ReadLine()
		if err != nil {
			return
		}
		m, err := jsonrpc.Decode(line)
		if err != nil || !json.Valid(line) {
			bad++
			s.Notify("test/badline", map[string]any{"bytes": len(line), "head": string(line[:min(len(line), 80)])})
			continue
		}
		switch m := m.(type) {
		case *jsonrpc.Response:
			answers++
		case *jsonrpc.Notification:
			s.Notify("test/saw", map[string]any{"method": m.Method, "bytes": len(line)})
		case *jsonrpc.Request:
			s.Reply(m.ID, map[string]any{"bytes": len(line), "bad": bad, "answers": answers})
			switch m.Method {
			case "test/stall":
				<-resume
			case "test/flood":
				var p struct {
					Count  int    `json:"count"`
					Method string `json:"method"`
				}
				json.Unmarshal(m.Params, &p)
				for i := range p.Count {
					s.Send(&jsonrpc.Request{ID: jsonrpc.Int64ID(int64(i + 1)), Method: p.Method})
				}
				<-resume
			}
		}
	}
}

// resumeReading tells the stall server to read its stdin again.
func resumeReading(t *testing.T, c *stdio.Conn) {
	t.Helper()
	if err := syscall.Kill(c.Pid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
}

// stallStats is the stall server's answer to a request.
type stallStats struct {
	Bytes   int `json:"bytes"`
	Bad     int `json:"bad"`
	Answers int `json:"answers"`
}

func stats(t *testing.T, resp *jsonrpc.Response) stallStats {
	t.Helper()
	var st stallStats
	if err := json.Unmarshal(resp.Result, &st); err != nil {
		t.Fatalf("result %s: %v", resp.Result, err)
	}
	return st
}

// heapAfterGC returns the live heap, in bytes.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// padParams returns params whose line is a little over size bytes.
func padParams(size int) json.RawMessage {
	return mustJSON(map[string]string{"pad": strings.Repeat("x", size)})
}

// A server that stops reading its stdin must not make the client's memory
// grow without limit: a request that times out, or a notification that is
// withdrawn, before the writer has taken it leaves the queue and frees its
// bytes at once, so abandoned messages never count against
// Config.MaxQueuedBytes. The one message the writer is in the middle of is
// never cut: when the server reads again, every line it gets is whole.
func TestAbandonedMessagesFreeTheirBytesWhileServerStalls(t *testing.T) {
	const limit = 8 << 20
	cfg := config("stall")
	cfg.MaxQueuedBytes = limit
	c := connectHanging(t, cfg)
	call(t, c, "test/stall", nil, transport.RequestOptions{})

	pad := padParams(1 << 20) // shared: the test itself holds 1 MiB
	before := heapAfterGC()
	// 40 waves of 4 concurrent 1 MiB messages: 160 MiB in all, 4 MiB
	// at a time, so that only a queue that keeps abandoned messages
	// reaches the limit.
	const waves, perWave = 40, 4
	for w := range waves {
		errs := make(chan error, perWave)
		var wg sync.WaitGroup
		for i := range perWave {
			wg.Go(func() {
				if i == 0 {
					errs <- c.Notify(context.Background(), &jsonrpc.Notification{Method: "big", Params: pad}, transport.NotifyOptions{Timeout: 20 * time.Millisecond})
					return
				}
				_, err := c.Request(context.Background(), &jsonrpc.Request{Method: "big", Params: pad}, transport.RequestOptions{Timeout: 20 * time.Millisecond})
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if !errors.Is(err, transport.ErrTimeout) {
				t.Fatalf("wave %d: %v, want a timeout (abandoned messages must not count against the limit)", w, err)
			}
		}
	}
	after := heapAfterGC()
	grew := int64(after) - int64(before)
	t.Logf("heap %d → %d KiB (grew by %.1f MiB) over %d MiB of abandoned messages", before>>10, after>>10, float64(grew)/(1<<20), waves*perWave)
	if grew > limit+8<<20 {
		t.Fatalf("heap grew by %d bytes with the server stalled, want at most the limit (%d) and a little", grew, limit)
	}
	// What may still wait: the notifications/cancelled for the request
	// the writer was in the middle of.
	if q := stdio.QueuedBytes(c); q > 4096 {
		t.Fatalf("%d bytes still queued after every sender gave up", q)
	}
	if c.Err() != nil {
		t.Fatalf("connection stopped: %v", c.Err())
	}

	resumeReading(t, c)
	st := stats(t, call(t, c, "after", nil, transport.RequestOptions{}))
	if st.Bad != 0 {
		t.Fatalf("the server read %d lines that were not whole JSON-RPC messages", st.Bad)
	}
}

// Config.MaxQueuedBytes: with the server not reading, a message that would
// take the queue past the limit fails at once with a -32000 transport
// error wrapping ErrQueueFull, and the connection stays up: when the server
// reads again it gets every message that was queued, each line whole, and
// later requests, even one larger than the limit, succeed.
func TestQueueLimitRefusesFastAndServerThatResumesGetsTheRest(t *testing.T) {
	const limit = 4 << 20
	cfg, n := notedConfig("stall")
	cfg.MaxQueuedBytes = limit
	c := connectHanging(t, cfg)
	call(t, c, "test/stall", nil, transport.RequestOptions{})

	type result struct {
		resp *jsonrpc.Response
		err  error
	}
	results := make(chan result, 16)
	request := func(req *jsonrpc.Request) {
		go func() {
			resp, err := c.Request(context.Background(), req, transport.RequestOptions{})
			results <- result{resp, err}
		}()
	}
	pad := padParams(1 << 20)
	// The first goes to the writer, which is stuck in the middle of it;
	// it does not count against the limit.
	request(&jsonrpc.Request{Method: "big", Params: pad})
	waitQueued(t, c, func(q int) bool { return q == 0 })
	// Three more fit under 4 MiB; the next four do not.
	for range 7 {
		request(&jsonrpc.Request{Method: "big", Params: pad})
	}
	for range 4 {
		wantQueueFull(t, c, transporttest.Recv(t, results, "results").err, limit)
	}
	if q := stdio.QueuedBytes(c); q < 3<<20 || q > limit {
		t.Fatalf("%d bytes queued, want three 1 MiB requests", q)
	}
	// A notification is refused the same way; a small request still fits.
	err := c.Notify(context.Background(), &jsonrpc.Notification{Method: "big", Params: pad}, transport.NotifyOptions{})
	wantQueueFull(t, c, err, limit)
	request(&jsonrpc.Request{Method: "small"})
	waitQueued(t, c, func(q int) bool { return q > 3<<20+20 })

	resumeReading(t, c)
	for range 5 {
		r := transporttest.Recv(t, results, "results")
		if r.err != nil {
			t.Fatalf("queued request after the server resumed: %v", r.err)
		}
		if st := stats(t, r.resp); st.Bad != 0 {
			t.Fatalf("the server read %d lines that were not whole JSON-RPC messages", st.Bad)
		}
	}
	// With nothing queued, a request larger than the limit goes out.
	st := stats(t, call(t, c, "huge", padParams(6<<20), transport.RequestOptions{}))
	if st.Bytes < 6<<20 || st.Bad != 0 {
		t.Fatalf("huge request: server saw %+v", st)
	}
	if err := c.Notify(context.Background(), &jsonrpc.Notification{Method: "after"}, transport.NotifyOptions{}); err != nil {
		t.Fatal(err)
	}
	n.waitN(t, "test/saw", 1)
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, x := range n.all {
		if x.Method == "test/badline" {
			t.Fatalf("the server read a line that was not whole: %s", x.Params)
		}
	}
}

// A server that floods the client with requests and stops reading its
// stdin cannot make the answers pile up past Config.MaxQueuedBytes.
func TestServerRequestFloodAnswersBoundedByQueueLimit(t *testing.T) {
	const limit = 256 << 10
	const count = 2000
	answer := json.RawMessage(mustJSON(map[string]string{"pad": strings.Repeat("a", 1<<10)}))
	var answered atomic.Int64
	cfg := config("stall")
	cfg.MaxQueuedBytes = limit
	c := connectHanging(t, cfg)
	// Each request is answered at once, in the reader, so that none is
	// refused over the admission limit.
	c.SetInbound(func(ctx context.Context, req *jsonrpc.Request, reply transport.ReplyFunc) func() {
		answered.Add(1)
		reply(answer, nil)
		return nil
	}, nil)
	call(t, c, "test/flood", map[string]any{"count": count, "method": "ping"}, transport.RequestOptions{})
	deadline := time.Now().Add(30 * time.Second)
	for answered.Load() < count {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d server requests answered", answered.Load(), count)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Every answer has been queued, written or refused once the queue
	// stops changing.
	last, still := -1, 0
	for still < 20 {
		q := stdio.QueuedBytes(c)
		if q > limit {
			t.Fatalf("%d bytes of answers queued for a server that does not read, limit %d", q, limit)
		}
		if q == last {
			still++
		} else {
			last, still = q, 0
		}
		time.Sleep(10 * time.Millisecond)
	}
	if c.Err() != nil {
		t.Fatalf("connection stopped: %v", c.Err())
	}
	resumeReading(t, c)
	st := stats(t, call(t, c, "after", nil, transport.RequestOptions{}))
	if st.Bad != 0 || st.Answers == 0 || st.Answers > count {
		t.Fatalf("server saw %+v", st)
	}
	t.Logf("the server got %d of %d answers", st.Answers, count)
}

// waitQueued waits until ok reports true for the bytes queued in c.
func waitQueued(t *testing.T, c *stdio.Conn, ok func(int) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok(stdio.QueuedBytes(c)) {
		if time.Now().After(deadline) {
			t.Fatalf("queued bytes stuck at %d", stdio.QueuedBytes(c))
		}
		time.Sleep(time.Millisecond)
	}
}

func wantQueueFull(t *testing.T, c *stdio.Conn, err error, limit int) {
	t.Helper()
	je := transporttest.WantCode(t, err, jsonrpc.CodeConnectionClosed)
	if je.Kind != jsonrpc.KindTransport || !errors.Is(err, stdio.ErrQueueFull) || !errors.Is(err, transport.ErrConnection) {
		t.Fatalf("error %v, want a transport error wrapping ErrQueueFull", err)
	}
	if !strings.Contains(je.Message, "not reading its stdin") || !strings.Contains(je.Message, strconv.Itoa(limit)) {
		t.Fatalf("message %q should name the cause and the limit", je.Message)
	}
	if c.Err() != nil {
		t.Fatalf("connection stopped by a full queue: %v", c.Err())
	}
}
