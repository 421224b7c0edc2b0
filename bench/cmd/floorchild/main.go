// Command floorchild is the physical floor of the benchmarks: a child process
// that copies each line of its standard input to its standard output, so that a
// client driving it over pipes pays only for pipes, a process switch and its
// own bookkeeping. A line "B<n>" is answered instead with a line of n bytes,
// the floor for receiving a large result.
package main

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
)

func main() {
	r := bufio.NewReaderSize(os.Stdin, 64<<10)
	out := make([]byte, 0, 64<<10)
	blobs := map[int][]byte{}
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 1 && line[0] == 'B' {
			n, convErr := strconv.Atoi(string(bytes.TrimSpace(line[1:])))
			if convErr == nil {
				body, ok := blobs[n]
				if !ok {
					body = append(bytes.Repeat([]byte{'x'}, n), '\n')
					blobs[n] = body
				}
				os.Stdout.Write(out)
				out = out[:0]
				os.Stdout.Write(body)
				line = nil
			}
		}
		out = append(out, line...)
		// Write what was echoed once no more input is waiting, as the lean
		// server does.
		if r.Buffered() == 0 || len(out) > 32<<10 {
			os.Stdout.Write(out)
			out = out[:0]
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}
