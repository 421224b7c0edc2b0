package snodo

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/bytedance/sonic"

	"github.com/snodo/snodo/jsonrpc"
)

// The client's JSON goes through sonic: requests are built and results
// decoded on every call.
var api = sonic.ConfigDefault

func marshal(v any) ([]byte, error) { return api.Marshal(v) }

// unmarshal decodes data into v without copying it first: see
// jsonrpc.Unmarshal. The client decodes only what transports return, which
// nothing writes to.
func unmarshal(data []byte, v any) error { return jsonrpc.Unmarshal(data, v) }

// splitExtra decodes data's members and returns those not in known, for
// types that keep the fields they do not know.
func splitExtra(data []byte, known ...string) (map[string]json.RawMessage, error) {
	if !hasUnknownKeys(data, known) {
		return nil, nil
	}
	var all map[string]json.RawMessage
	if err := unmarshal(data, &all); err != nil {
		return nil, err
	}
	for _, k := range known {
		delete(all, k)
	}
	if len(all) == 0 {
		return nil, nil
	}
	return all, nil
}

// appendExtra adds the members of extra to the JSON object obj.
func appendExtra(obj []byte, extra map[string]json.RawMessage) ([]byte, error) {
	if len(extra) == 0 {
		return obj, nil
	}
	obj = bytes.TrimRight(obj, " \t\r\n")
	if len(obj) < 2 || obj[len(obj)-1] != '}' {
		return obj, nil
	}
	body := obj[:len(obj)-1]
	empty := bytes.Equal(bytes.TrimSpace(body), []byte("{"))
	out := slices.Clip(body)
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !empty {
			out = append(out, ',')
		}
		empty = false
		kb, err := api.Marshal(k)
		if err != nil {
			return nil, err
		}
		out = append(out, kb...)
		out = append(out, ':')
		out = append(out, extra[k]...)
	}
	return append(out, '}'), nil
}

// hasUnknownKeys reports whether the JSON object data has a top-level
// member not in known. It scans without allocating; on anything it does
// not expect (an escaped key, malformed input) it answers true, so that
// the caller takes the exact, slower path.
func hasUnknownKeys(data []byte, known []string) bool {
	unknown := false
	ok := eachMember(data, func(key, _ []byte) bool {
		if !slices.ContainsFunc(known, func(k string) bool { return k == string(key) }) {
			unknown = true
			return false
		}
		return true
	})
	return unknown || !ok
}

// eachMember calls f with the raw key (without quotes) and raw value of
// each top-level member of the JSON object data, until f returns false. It
// reports false for input it cannot scan: not an object, malformed, or a
// key with an escape, whose raw bytes are not its value.
func eachMember(data []byte, f func(key, value []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i++
	for {
		i = skipSpace(data, i)
		if i >= len(data) {
			return false
		}
		if data[i] == '}' {
			return true
		}
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		if i >= len(data) || data[i] != '"' {
			return false
		}
		end := i + 1
		for end < len(data) && data[end] != '"' {
			if data[end] == '\\' {
				return false
			}
			end++
		}
		if end >= len(data) {
			return false
		}
		key := data[i+1 : end]
		i = skipSpace(data, end+1)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		start := skipSpace(data, i+1)
		i = skipValue(data, start)
		if i < 0 {
			return false
		}
		if !f(key, bytes.TrimRight(data[start:i], " \t\r\n")) {
			return true
		}
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value at data[i:], or -1.
func skipValue(data []byte, i int) int {
	depth := 0
	for i < len(data) {
		switch c := data[i]; c {
		case '"':
			// Jump from quote to quote (IndexByte is vectorised: a long
			// text is the common case); a quote preceded by an odd run of
			// backslashes is escaped.
			i++
			for {
				k := bytes.IndexByte(data[i:], '"')
				if k < 0 {
					return -1
				}
				q := i + k
				backslashes := 0
				for j := q - 1; j >= i && data[j] == '\\'; j-- {
					backslashes++
				}
				i = q + 1
				if backslashes%2 == 0 {
					break
				}
			}
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i
			}
			i++
		default:
			i++
		}
		if depth == 0 && i < len(data) {
			// A complete scalar or container ends at the next delimiter.
			j := skipSpace(data, i)
			if j < len(data) && (data[j] == ',' || data[j] == '}' || data[j] == ']') {
				return j
			}
		}
	}
	return -1
}
