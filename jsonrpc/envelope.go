package jsonrpc

import (
	"bytes"
	"unsafe"

	"github.com/bytedance/sonic"

	"github.com/snodo/snodo/internal/jsoncodec"
)

// scanEnvelopeMax is the longest line scanEnvelope takes. Past it, sonic's
// vectorised skipping of the raw members is faster than the scan.
const scanEnvelopeMax = 64 << 10

// scanEnvelope fills w from the common shape of a message, without the
// decoder: valid JSON (checked first, by sonic's validator) that is one
// object whose members are exactly-spelled, distinct members of wire other
// than "error", with "jsonrpc" the plain string "2.0" and a "method", when
// present, a string without escapes. It reports false, with w partly
// filled, for anything else, which the decoder then reads: the two give
// the same message (FuzzScanEnvelope). Strings share data's memory, as the
// decoder's do.
func scanEnvelope(data []byte, w *wire) bool {
	if len(data) > scanEnvelopeMax || !sonic.Valid(data) {
		return false
	}
	i := jsoncodec.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i++
	var seen uint8
	for {
		i = jsoncodec.SkipSpace(data, i)
		switch data[i] {
		case '}':
			return seen&seenJSONRPC != 0
		case ',':
			i = jsoncodec.SkipSpace(data, i+1)
		}
		// A key: valid JSON, so a string; one with an escape is left to
		// the decoder.
		end := bytes.IndexByte(data[i+1:], '"')
		if end < 0 {
			return false
		}
		key := data[i+1 : i+1+end]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		i = jsoncodec.SkipSpace(data, i+2+end) // past the quote
		i = jsoncodec.SkipSpace(data, i+1)     // past the colon
		start := i
		i = jsoncodec.SkipValue(data, i)
		if i < 0 {
			return false
		}
		val := bytes.TrimRight(data[start:i], " \t\r\n")
		var bit uint8
		switch string(key) {
		case "jsonrpc":
			if string(val) != `"2.0"` {
				return false
			}
			bit, w.JSONRPC = seenJSONRPC, "2.0"
		case "id":
			bit, w.ID = seenID, val
		case "method":
			if len(val) < 2 || val[0] != '"' || bytes.IndexByte(val, '\\') >= 0 {
				return false
			}
			m := unsafe.String(unsafe.SliceData(val[1:]), len(val)-2)
			if len(m) == 0 {
				m = ""
			}
			bit, w.Method = seenMethod, &m
		case "params":
			if string(val) == "null" {
				return false
			}
			bit, w.Params = seenParams, val
		case "result":
			if string(val) == "null" {
				return false
			}
			bit, w.Result = seenResult, val
		default:
			// "error", a key in another case (which the decoder matches),
			// or an unknown member.
			return false
		}
		if seen&bit != 0 {
			return false // a duplicate: the decoder's rule applies
		}
		seen |= bit
	}
}

const (
	seenJSONRPC uint8 = 1 << iota
	seenID
	seenMethod
	seenParams
	seenResult
)
