package http

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// errEventTooLarge is the cause of the error of an SSE event whose data, or
// one of whose lines, is longer than the transport's message bound.
var errEventTooLarge = errors.New("SSE event larger than the message bound")

// sseEvent is one dispatched Server-Sent Event.
type sseEvent struct {
	typ  string // "" or "message" for MCP messages
	data []byte // a fresh slice, owned by the receiver
}

// sseReader reads a text/event-stream body, as the WHATWG HTML standard's
// "event stream interpretation" says, with bounds: a line or an event's
// data longer than max fails the stream. Comments (keep-alives) are
// skipped; id and retry fields are remembered for resumption.
//
// Lines end in LF or CRLF; a CR inside a line ending in LF also ends a
// line. (A stream that uses CR alone never produces an LF and fails at the
// bound.)
type sseReader struct {
	br    *bufio.Reader
	max   int
	first bool // no line read yet: a leading BOM is dropped

	lastID    string        // the last event ID, for Last-Event-ID
	sawID     bool          // an id field has been seen
	retry     time.Duration // the server's reconnection time; 0 if none
	pending   [][]byte      // lines split off a CR, not yet processed
	data      bytes.Buffer
	typ       string
	idBuf     string
	idBufSet  bool
	lineAccum []byte
}

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 32<<10), max: max, first: true}
}

// line returns the next line without its ending.
func (r *sseReader) line() ([]byte, error) {
	if len(r.pending) > 0 {
		l := r.pending[0]
		r.pending = r.pending[1:]
		return l, nil
	}
	r.lineAccum = r.lineAccum[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(r.lineAccum)+len(chunk) > r.max+64 {
			return nil, fmt.Errorf("%w (%d bytes)", errEventTooLarge, r.max)
		}
		r.lineAccum = append(r.lineAccum, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(r.lineAccum) > 0 {
				// An unterminated last line is not a complete line: the
				// event it belongs to is never dispatched.
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		break
	}
	l := r.lineAccum[:len(r.lineAccum)-1]
	l = bytes.TrimSuffix(l, []byte{'\r'})
	if r.first {
		r.first = false
		l = bytes.TrimPrefix(l, []byte("\xEF\xBB\xBF"))
	}
	if bytes.IndexByte(l, '\r') >= 0 {
		parts := bytes.Split(l, []byte{'\r'})
		for _, p := range parts[1:] {
			r.pending = append(r.pending, append([]byte(nil), p...))
		}
		l = parts[0]
	}
	return l, nil
}

// next returns the next event with data. Events without data (such as a
// priming event, which only carries an id) update the last event ID and
// are not returned.
func (r *sseReader) next() (sseEvent, error) {
	for {
		l, err := r.line()
		if err != nil {
			return sseEvent{}, err
		}
		if len(l) == 0 {
			if r.idBufSet {
				r.lastID, r.sawID = r.idBuf, true
			}
			if r.data.Len() == 0 {
				r.typ = ""
				continue
			}
			data := r.data.Bytes()
			data = data[:len(data)-1] // the last LF
			ev := sseEvent{typ: r.typ, data: append([]byte(nil), data...)}
			r.data.Reset()
			r.typ = ""
			return ev, nil
		}
		if l[0] == ':' {
			continue // a comment: keep-alive
		}
		field, value := l, []byte(nil)
		if i := bytes.IndexByte(l, ':'); i >= 0 {
			field, value = l[:i], l[i+1:]
			value = bytes.TrimPrefix(value, []byte{' '})
		}
		switch string(field) {
		case "data":
			if r.data.Len()+len(value)+1 > r.max+1 {
				return sseEvent{}, fmt.Errorf("%w (%d bytes)", errEventTooLarge, r.max)
			}
			r.data.Write(value)
			r.data.WriteByte('\n')
		case "event":
			r.typ = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				r.idBuf, r.idBufSet = string(value), true
			}
		case "retry":
			if n, err := strconv.ParseUint(string(value), 10, 31); err == nil && isDigits(value) {
				r.retry = time.Duration(n) * time.Millisecond
			}
		}
	}
}

func isDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
