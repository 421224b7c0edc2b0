package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, lr *LineReader) (lines []string, tooLong []int64) {
	t.Helper()
	for {
		line, err := lr.ReadLine()
		var tl *LineTooLongError
		switch {
		case err == nil:
			lines = append(lines, string(line))
		case errors.As(err, &tl):
			tooLong = append(tooLong, tl.Bytes)
		case err == io.EOF:
			return
		default:
			t.Fatal(err)
		}
	}
}

func TestLineReaderSplitsLines(t *testing.T) {
	in := "a\n\nbb\r\n\r\nccc\nlast"
	for name, r := range map[string]io.Reader{
		"whole":    strings.NewReader(in),
		"bytewise": iotest.OneByteReader(strings.NewReader(in)),
		"halves":   iotest.HalfReader(strings.NewReader(in)),
	} {
		lines, tooLong := readAll(t, NewLineReader(r, 100))
		if strings.Join(lines, "|") != "a|bb|ccc|last" || tooLong != nil {
			t.Errorf("%s: lines %q, too long %v", name, lines, tooLong)
		}
	}
}

// "past the limit the rest of the line is discarded as it arrives ... and
// reading goes on with the next line".
func TestLineReaderDiscardsOverLongLineAndGoesOn(t *testing.T) {
	long := strings.Repeat("x", 1000)
	in := "ok1\n" + long + "\n" + "ok2\n" + strings.Repeat("y", 11) + "\n" + strings.Repeat("z", 10) + "\n"
	for name, r := range map[string]io.Reader{
		"whole":    strings.NewReader(in),
		"bytewise": iotest.OneByteReader(strings.NewReader(in)),
	} {
		lines, tooLong := readAll(t, NewLineReader(r, 10))
		if strings.Join(lines, "|") != "ok1|ok2|"+strings.Repeat("z", 10) {
			t.Errorf("%s: lines %q", name, lines)
		}
		if len(tooLong) != 2 || tooLong[0] != 1000 || tooLong[1] != 11 {
			t.Errorf("%s: too-long reports %v, want [1000 11]", name, tooLong)
		}
	}
}

func TestLineReaderLineSpanningReads(t *testing.T) {
	line := strings.Repeat("a", 3*readBufferSize+17)
	lines, _ := readAll(t, NewLineReader(strings.NewReader(line+"\nb\n"), 4*readBufferSize))
	if len(lines) != 2 || lines[0] != line || lines[1] != "b" {
		t.Fatalf("got %d lines", len(lines))
	}
}

// The returned slice is the caller's: later reads do not overwrite it.
func TestLineReaderLinesAreNotReused(t *testing.T) {
	lr := NewLineReader(strings.NewReader("first\nsecond\n"), 0)
	a, _ := lr.ReadLine()
	b, _ := lr.ReadLine()
	if string(a) != "first" || string(b) != "second" {
		t.Fatalf("got %q, %q", a, b)
	}
}

// endless yields n bytes of 'x' and then a newline and "tail\n", without
// ever holding them.
type endless struct{ n, off int64 }

func (e *endless) Read(p []byte) (int, error) {
	tail := "\ntail\n"
	total := e.n + int64(len(tail))
	if e.off >= total {
		return 0, io.EOF
	}
	i := 0
	for ; i < len(p) && e.off < total; i++ {
		if e.off < e.n {
			p[i] = 'x'
		} else {
			p[i] = tail[e.off-e.n]
		}
		e.off++
	}
	return i, nil
}

// "a 100 MiB line under the default limit grows the heap by no more than
// about the limit plus one read buffer".
func TestLineReaderMemoryBoundedByLimitNotLine(t *testing.T) {
	const line = 100 << 20
	limit := 1 << 20 // a small limit makes the bound sharp; the default is covered by BENCHMARKS.md
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	lr := NewLineReader(&endless{n: line}, limit)
	_, err := lr.ReadLine()
	var tl *LineTooLongError
	if !errors.As(err, &tl) || tl.Bytes != line {
		t.Fatalf("err = %v, want a LineTooLongError of %d bytes", err, line)
	}
	next, err := lr.ReadLine()
	if err != nil || string(next) != "tail" {
		t.Fatalf("after the long line: %q, %v", next, err)
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	// Bound: the limit (+1 byte), one read buffer, and slack for the
	// collector's own bookkeeping — far below the 100 MiB line.
	if bound := uint64(limit + readBufferSize + 256<<10); allocated > bound {
		t.Fatalf("reading a %d-byte line allocated %d bytes; bound %d", line, allocated, bound)
	}
}

func TestLineReaderReturnsReadErrors(t *testing.T) {
	boom := errors.New("boom")
	lr := NewLineReader(io.MultiReader(strings.NewReader("a\nb"), iotest.ErrReader(boom)), 0)
	if l, err := lr.ReadLine(); err != nil || string(l) != "a" {
		t.Fatalf("%q %v", l, err)
	}
	if _, err := lr.ReadLine(); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
}

// timeoutReader returns its parts one Read at a time, with
// os.ErrDeadlineExceeded between them, as a file past its read deadline.
type timeoutReader struct {
	parts   []string
	timeout bool // the next Read times out
}

func (r *timeoutReader) Read(p []byte) (int, error) {
	if len(r.parts) == 0 {
		return 0, io.EOF
	}
	if r.timeout {
		r.timeout = false
		return 0, os.ErrDeadlineExceeded
	}
	r.timeout = true
	n := copy(p, r.parts[0])
	r.parts = r.parts[1:]
	return n, nil
}

// A read deadline does not end the input: lines cut by it, within the
// limit and past it, come out whole (or reported too long) afterwards.
func TestLineReaderGoesOnAfterReadDeadline(t *testing.T) {
	r := &timeoutReader{parts: []string{"ab", "c\nxxxx", "xxxx", "xx\nd", "e\n"}}
	lr := NewLineReader(r, 5)
	var got []string
	timeouts := 0
	for range 100 {
		line, err := lr.ReadLine()
		var tl *LineTooLongError
		switch {
		case err == nil:
			got = append(got, string(line))
			continue
		case errors.Is(err, os.ErrDeadlineExceeded):
			timeouts++
			continue
		case errors.As(err, &tl):
			got = append(got, fmt.Sprintf("too long: %d", tl.Bytes))
			continue
		case err != io.EOF:
			t.Fatal(err)
		}
		break
	}
	if want := "abc|too long: 10|de"; strings.Join(got, "|") != want || timeouts != 4 {
		t.Fatalf("lines %q after %d timeouts, want %q after 4", got, timeouts, want)
	}
}

func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nb\r\n\n"), 3)
	f.Add([]byte(strings.Repeat("x", 100)+"\nshort\n"), 10)
	f.Add([]byte("no newline"), 4)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		if limit <= 0 || limit > 1<<16 {
			limit = 1 + (limit&0xffff+0xffff)%(1<<10)
		}
		// The expected lines, computed the obvious way.
		var want []string
		var wantLong int
		for _, raw := range bytes.Split(data, []byte("\n")) {
			if len(raw) > limit {
				wantLong++
				continue
			}
			raw = bytes.TrimSuffix(raw, []byte("\r"))
			if len(raw) > 0 {
				want = append(want, string(raw))
			}
		}
		lines, tooLong := readAll(t, NewLineReader(iotest.HalfReader(bytes.NewReader(data)), limit))
		if strings.Join(lines, "\x00") != strings.Join(want, "\x00") || len(tooLong) != wantLong {
			t.Fatalf("limit %d: got %q (%d too long), want %q (%d too long)", limit, lines, len(tooLong), want, wantLong)
		}
	})
}
