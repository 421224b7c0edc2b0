package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// DefaultMaxLineBytes is the default largest line a LineReader accepts:
// 16 MiB.
const DefaultMaxLineBytes = 16 << 20

// readBufferSize is the size of a LineReader's fixed read buffer.
const readBufferSize = 64 << 10

// LineTooLongError is returned by LineReader.ReadLine for a line longer than
// the limit. By the time it is returned the whole line, up to and including
// its newline, has been read and thrown away; the next ReadLine starts with
// the next line.
type LineTooLongError struct {
	Limit int   // the limit in force
	Bytes int64 // the length of the discarded line, without its newline
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("jsonrpc: line of %d bytes discarded: longer than the limit of %d bytes", e.Bytes, e.Limit)
}

// LineReader reads newline-delimited messages with a maximum line length.
//
// Memory is bounded by the limit, not by the input: a line is collected only
// while it is within the limit; past it, the bytes collected so far are
// released and the rest of the line is skipped as it arrives, read buffer by
// read buffer, without being kept.
//
// A LineReader is not safe for concurrent use; goroutines may take turns
// with it, one at a time.
type LineReader struct {
	r     io.Reader
	max   int
	buf   []byte // fixed read buffer
	start int    // unread data is buf[start:end]
	end   int
	err   error // sticky read error, returned once buffered data is used up

	// The line in progress, kept across a read that timed out.
	acc       lineBuffer // the line so far, when it spans reads
	size      int64      // the line's length so far
	discarded bool       // the line has passed the limit
}

// NewLineReader returns a LineReader reading from r that accepts lines of at
// most maxLineBytes bytes (without the newline). maxLineBytes <= 0 means
// DefaultMaxLineBytes.
func NewLineReader(r io.Reader, maxLineBytes int) *LineReader {
	if maxLineBytes <= 0 {
		maxLineBytes = DefaultMaxLineBytes
	}
	return &LineReader{r: r, max: maxLineBytes, buf: make([]byte, readBufferSize)}
}

// ReadLine returns the next non-empty line, without its newline and without
// a trailing carriage return. The returned slice is the caller's: it is never
// reused by the reader.
//
// A line longer than the limit is consumed and reported as a
// *LineTooLongError; reading may go on after it. At the end of input,
// ReadLine returns io.EOF (a final line without a newline is returned first);
// other read errors are returned as they are. A read that fails with
// os.ErrDeadlineExceeded (a read deadline) does not end the input: the
// error is returned, the line in progress is kept, and the next ReadLine
// goes on with it.
func (lr *LineReader) ReadLine() ([]byte, error) {
	line, err := lr.readLine()
	if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		lr.acc, lr.size, lr.discarded = lineBuffer{}, 0, false
	}
	return line, err
}

func (lr *LineReader) readLine() ([]byte, error) {
	acc, size, discarded := &lr.acc, &lr.size, &lr.discarded
	for {
		if lr.start < lr.end {
			chunk := lr.buf[lr.start:lr.end]
			i := bytes.IndexByte(chunk, '\n')
			part := chunk
			if i >= 0 {
				part = chunk[:i]
				lr.start += i + 1
			} else {
				lr.start = lr.end
			}
			*size += int64(len(part))
			switch {
			case *discarded:
			case *size > int64(lr.max):
				*discarded = true
				*acc = lineBuffer{} // release what was collected
			case i >= 0 && acc.empty():
				// The common case: the whole line is in the read buffer.
				if line := trimCR(part); len(line) > 0 {
					return bytes.Clone(line), nil
				}
				*size = 0
				continue
			default:
				acc.append(part, lr.max+1)
			}
			if i < 0 {
				continue
			}
			if *discarded {
				return nil, &LineTooLongError{Limit: lr.max, Bytes: *size}
			}
			if line := trimCR(acc.bytes()); len(line) > 0 {
				return line, nil
			}
			*acc, *size = lineBuffer{}, 0
			continue
		}
		if lr.err != nil {
			if lr.err == io.EOF && *size > 0 {
				// A final line without a newline.
				if *discarded {
					return nil, &LineTooLongError{Limit: lr.max, Bytes: *size}
				}
				if line := trimCR(acc.bytes()); len(line) > 0 {
					return line, nil
				}
			}
			return nil, lr.err
		}
		lr.start = 0
		n, err := lr.r.Read(lr.buf)
		lr.end = n
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			// Not sticky: the next read may succeed.
			if n == 0 {
				return nil, err
			}
		default:
			lr.err = err
		}
	}
}

// maxChunk bounds one chunk of a lineBuffer.
const maxChunk = 4 << 20

// lineBuffer collects a line that spans reads in chunks of growing size.
// Chunks are never copied while the line grows, so the memory held is the
// line's length (rounded up to a chunk) and never more than the capacity
// bound it is given; an over-long line costs at most the limit.
type lineBuffer struct {
	chunks [][]byte
	total  int // capacity of all chunks
}

func (lb *lineBuffer) empty() bool { return len(lb.chunks) == 0 }

// append adds part, keeping the total capacity within capBound.
func (lb *lineBuffer) append(part []byte, capBound int) {
	for len(part) > 0 {
		if n := len(lb.chunks); n > 0 {
			last := lb.chunks[n-1]
			if free := cap(last) - len(last); free > 0 {
				k := min(free, len(part))
				lb.chunks[n-1] = append(last, part[:k]...)
				part = part[k:]
				continue
			}
		}
		size := readBufferSize
		if n := len(lb.chunks); n > 0 {
			size = 2 * cap(lb.chunks[n-1])
		}
		size = max(min(size, maxChunk, capBound-lb.total), len(part))
		lb.chunks = append(lb.chunks, make([]byte, 0, size))
		lb.total += size
	}
}

// bytes returns the collected line as one slice.
func (lb *lineBuffer) bytes() []byte {
	switch len(lb.chunks) {
	case 0:
		return nil
	case 1:
		return lb.chunks[0]
	}
	n := 0
	for _, c := range lb.chunks {
		n += len(c)
	}
	line := make([]byte, 0, n)
	for _, c := range lb.chunks {
		line = append(line, c...)
	}
	return line
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}
