package stdio_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo/internal/fakeserver"
	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	"github.com/snodo/snodo/transport/stdio"
)

// The benchmark servers. "echo" answers each request with its params as
// the result, except "big", answered with an 8 MiB result, and "long",
// answered with a line of Args[0] bytes. "lineecho" is the floor: it
// copies each line of stdin to stdout, with no JSON at all ("big" and
// "long" as above, as raw lines).
func init() {
	scenarios["echo"] = benchEcho
	scenarios["lineecho"] = benchLineEcho
}

const bigBytes = 8 << 20

// bigResult is an 8 MiB JSON object.
func bigResult() json.RawMessage {
	return json.RawMessage(`{"data":"` + string(bytes.Repeat([]byte("y"), bigBytes-len(`{"data":""}`))) + `"}`)
}

func benchEcho(s *fakeserver.Server) {
	var long int64
	if len(s.Args) > 0 {
		long, _ = strconv.ParseInt(s.Args[0], 10, 64)
	}
	big := bigResult()
	// Like a good server, it writes what it has in one go when no more
	// input is waiting.
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	var buf []byte
	for {
		line, err := in.ReadSlice('\n')
		if err != nil {
			return
		}
		m, err := jsonrpc.Decode(line)
		if err != nil {
			continue
		}
		r, ok := m.(*jsonrpc.Request)
		if !ok {
			continue
		}
		switch r.Method {
		case "big":
			// Built once; only the ID changes.
			out.WriteString(`{"jsonrpc":"2.0","id":`)
			out.Write(r.ID.AppendJSON(buf[:0]))
			out.WriteString(`,"result":`)
			out.Write(big)
			out.WriteString("}\n")
		case "long":
			out.Flush()
			s.WriteFrom(longResponse(r.ID, long))
		default:
			result := r.Params
			if len(result) == 0 {
				result = json.RawMessage("{}")
			}
			buf, _ = jsonrpc.Append(buf[:0], jsonrpc.NewResult(r.ID, result))
			out.Write(append(buf, '\n'))
		}
		if in.Buffered() == 0 {
			out.Flush()
		}
	}
}

func benchLineEcho(s *fakeserver.Server) {
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	out := os.Stdout
	bigLine := append(bytes.Repeat([]byte("y"), bigBytes), '\n')
	for {
		line, err := in.ReadSlice('\n')
		if err != nil {
			return
		}
		if bytes.Equal(line, []byte("big\n")) {
			out.Write(bigLine)
			continue
		}
		out.Write(line)
	}
}

var benchParams = json.RawMessage(`{"name":"echo","arguments":{"text":"hello, world"}}`)

func benchConn(b *testing.B, scenario string, args ...string) *stdio.Conn {
	b.Helper()
	return connect(b, config(scenario, args...))
}

// BenchmarkRoundTrip is one request at a time against the echo server.
func BenchmarkRoundTrip(b *testing.B) {
	c := benchConn(b, "echo")
	req := &jsonrpc.Request{Method: "tools/call", Params: benchParams}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b, c.Pid())
	for range b.N {
		if _, err := c.Request(context.Background(), req, transport.RequestOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(b)
}

// BenchmarkRoundTripContext is BenchmarkRoundTrip with a context that can
// end and a timeout, as the root package's client gives them.
func BenchmarkRoundTripContext(b *testing.B) {
	c := benchConn(b, "echo")
	req := &jsonrpc.Request{Method: "tools/call", Params: benchParams}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b, c.Pid())
	defer cpu.report(b)
	for range b.N {
		if _, err := c.Request(ctx, req, transport.RequestOptions{Timeout: time.Minute}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConcurrent64 is 64 goroutines with requests in flight at once;
// ns/op is per request.
func BenchmarkConcurrent64(b *testing.B) { benchConcurrent64(b, transport.RequestOptions{}) }

// BenchmarkConcurrent64Timeout is BenchmarkConcurrent64 with a timeout on
// each request, as the root package's client gives them (60 s by default).
func BenchmarkConcurrent64Timeout(b *testing.B) {
	benchConcurrent64(b, transport.RequestOptions{Timeout: time.Minute})
}

// BenchmarkConcurrent64Context is BenchmarkConcurrent64Timeout with a
// context that can end, shared by the callers, as the side-by-side client
// has (a deadline for the whole run).
func BenchmarkConcurrent64Context(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	benchConcurrent64Ctx(b, ctx, transport.RequestOptions{Timeout: time.Minute})
}

func benchConcurrent64(b *testing.B, opts transport.RequestOptions) {
	benchConcurrent64Ctx(b, context.Background(), opts)
}

func benchConcurrent64Ctx(b *testing.B, ctx context.Context, opts transport.RequestOptions) {
	c := benchConn(b, "echo")
	req := &jsonrpc.Request{Method: "tools/call", Params: benchParams}
	var left atomic.Int64
	left.Store(int64(b.N))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b, c.Pid())
	defer cpu.report(b)
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if _, err := c.Request(ctx, req, opts); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkResponse8MiB is a request answered with an 8 MiB result.
func BenchmarkResponse8MiB(b *testing.B) {
	c := benchConn(b, "echo")
	req := &jsonrpc.Request{Method: "big"}
	b.SetBytes(bigBytes)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b, c.Pid())
	for range b.N {
		resp, err := c.Request(context.Background(), req, transport.RequestOptions{})
		if err != nil || len(resp.Result) != bigBytes {
			b.Fatal(err)
		}
	}
	cpu.report(b)
}

// floor is a raw newline echo over the same kind of pipes: the test binary
// as "lineecho", written and read with bufio, no JSON, no Snodo.
type floor struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	acc []byte // reused for lines longer than out's buffer
}

func startFloor(b *testing.B) *floor {
	b.Helper()
	cmd := exec.Command(fakeserver.Executable())
	cmd.Env = append(os.Environ(), fakeserver.ScenarioEnv+"=lineecho")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	f := &floor{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10)}
	b.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	return f
}

// readLine reads a line of any length.
func (f *floor) readLine(b *testing.B) []byte {
	acc := f.acc[:0]
	for {
		part, err := f.out.ReadSlice('\n')
		if err == nil {
			if len(acc) == 0 {
				return part
			}
			f.acc = append(acc, part...)
			return f.acc
		}
		if err != bufio.ErrBufferFull {
			b.Fatal(err)
		}
		acc = append(acc, part...)
	}
}

// The same request line the transport writes.
var floorLine = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, world"}}}` + "\n")

// BenchmarkFloorRoundTrip is the floor of BenchmarkRoundTrip.
func BenchmarkFloorRoundTrip(b *testing.B) {
	f := startFloor(b)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b, f.cmd.Process.Pid)
	for range b.N {
		if _, err := f.in.Write(floorLine); err != nil {
			b.Fatal(err)
		}
		f.readLine(b)
	}
	cpu.report(b)
}

// BenchmarkFloorConcurrent64 is the floor of BenchmarkConcurrent64: 64
// lines kept in flight on one pipe (a writer and a reader), per line.
func BenchmarkFloorConcurrent64(b *testing.B) {
	f := startFloor(b)
	credits := make(chan struct{}, 64)
	for range 64 {
		credits <- struct{}{}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b, f.cmd.Process.Pid)
	defer cpu.report(b)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range b.N {
			f.readLine(b)
			credits <- struct{}{}
		}
	}()
	for range b.N {
		<-credits
		if _, err := f.in.Write(floorLine); err != nil {
			b.Fatal(err)
		}
	}
	<-done
}

// BenchmarkFloorResponse8MiB is the floor of BenchmarkResponse8MiB.
func BenchmarkFloorResponse8MiB(b *testing.B) {
	f := startFloor(b)
	b.SetBytes(bigBytes)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b, f.cmd.Process.Pid)
	defer cpu.report(b)
	for range b.N {
		f.in.Write([]byte("big\n"))
		if line := f.readLine(b); len(line) != bigBytes+1 {
			b.Fatalf("line of %d bytes", len(line))
		}
	}
}

// BenchmarkDiscardLine100MiB reads a 100 MiB line under the default 16 MiB
// limit (discarded as it arrives) and reports the peak heap growth while
// it does: peak-heap-MiB should stay near the limit plus a read buffer,
// not the line.
func BenchmarkDiscardLine100MiB(b *testing.B) {
	const size = 100 << 20
	c := benchConn(b, "echo", strconv.Itoa(size))
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() int64 {
		metrics.Read(samples)
		return int64(samples[0].Value.Uint64())
	}
	runtime.GC()
	base := heap()
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if h := heap() - base; h > peak.Load() {
					peak.Store(h)
				}
			}
		}
	}()
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := c.Request(ctx, &jsonrpc.Request{Method: "long"}, transport.RequestOptions{})
			errc <- err
		}()
		// The echo's response comes after the whole long line.
		time.Sleep(time.Millisecond)
		if _, err := c.Request(context.Background(), &jsonrpc.Request{Method: "echo"}, transport.RequestOptions{}); err != nil {
			b.Fatal(err)
		}
		cancel()
		if err := <-errc; err == nil {
			b.Fatal("the 100 MiB line was accepted")
		}
	}
	b.StopTimer()
	close(stop)
	<-sampled
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
}
