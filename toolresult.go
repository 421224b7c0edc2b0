package snodo

import (
	"bytes"
	"encoding/json"

	"github.com/snodo/snodo/internal/jsoncodec"
)

func decodeToolResult(raw json.RawMessage) (*CallToolResult, error) {
	if len(raw) <= maxFlatResult {
		if res := decodeFlatToolResult(raw); res != nil {
			return res, nil
		}
	}
	var res CallToolResult
	if err := unmarshal(raw, &res); err != nil {
		return nil, badResult("tools/call", err)
	}
	return &res, nil
}

// maxFlatResult bounds the results decodeFlatToolResult scans: it saves a
// decoder pass on small results, but its byte-by-byte scan is slower than
// the codec's over a large one.
const maxFlatResult = 64 << 10

// maxFlatRaw bounds the structuredContent and _meta values that
// decodeFlatToolResult validates itself; longer ones take the exact path.
const maxFlatRaw = 4096

// decodeFlatToolResult decodes the common tool result without a decoder
// pass: an object whose members are a non-empty "content" array of blocks
// decodeFlatContent takes and, optionally, "isError" as true or false,
// "resultType" as a plain string (which CallToolResult has no field for) and
// structuredContent and _meta as JSON values (not null) of at most
// maxFlatRaw bytes, kept as copies as json.RawMessage keeps them.
// It returns nil for anything else (any other member, a repeated one,
// other values, malformed input), which takes the exact path.
func decodeFlatToolResult(raw []byte) *CallToolResult {
	// One allocation for the result and its first content block, the
	// common case.
	box := new(struct {
		res CallToolResult
		one [1]Content
	})
	res := &box.res
	seenContent, seenIsError := false, false
	i := jsoncodec.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil
	}
	i = jsoncodec.SkipSpace(raw, i+1)
	for {
		key, next, ok := plainString(raw, i)
		if !ok {
			return nil
		}
		i = jsoncodec.SkipSpace(raw, next)
		if i >= len(raw) || raw[i] != ':' {
			return nil
		}
		i = jsoncodec.SkipSpace(raw, i+1)
		switch string(key) {
		case "content":
			if seenContent || i >= len(raw) || raw[i] != '[' {
				return nil
			}
			seenContent = true
			i = jsoncodec.SkipSpace(raw, i+1)
			for {
				end := flatObjectEnd(raw, i)
				if end < 0 {
					return nil
				}
				c := &box.one[0]
				if len(res.Content) > 0 {
					c = new(Content)
				}
				if !decodeFlatContent(raw[i:end], c) {
					return nil
				}
				if len(res.Content) == 0 {
					res.Content = box.one[:1:1]
				} else {
					res.Content = append(res.Content, *c)
				}
				i = jsoncodec.SkipSpace(raw, end)
				if i >= len(raw) {
					return nil
				}
				if raw[i] == ']' {
					i++
					break
				}
				if raw[i] != ',' {
					return nil
				}
				i = jsoncodec.SkipSpace(raw, i+1)
			}
		case "resultType":
			// Not a member of CallToolResult (call has read it).
			_, next, ok := plainString(raw, i)
			if !ok {
				return nil
			}
			i = next
		case "structuredContent", "_meta":
			dst := &res.StructuredContent
			if key[0] == '_' {
				dst = &res.Meta
			}
			end := jsoncodec.SkipValue(raw, i)
			if *dst != nil || end < 0 {
				return nil
			}
			v := bytes.TrimRight(raw[i:end], " \t\r\n")
			if len(v) > maxFlatRaw || raw[i] == 'n' || !json.Valid(v) {
				return nil
			}
			*dst = bytes.Clone(v)
			i = end
		case "isError":
			if seenIsError {
				return nil
			}
			seenIsError = true
			switch {
			case bytes.HasPrefix(raw[i:], []byte("true")):
				res.IsError, i = true, i+4
			case bytes.HasPrefix(raw[i:], []byte("false")):
				i += 5
			default:
				return nil
			}
		default:
			return nil
		}
		i = jsoncodec.SkipSpace(raw, i)
		if i >= len(raw) {
			return nil
		}
		if raw[i] == '}' {
			if !seenContent || jsoncodec.SkipSpace(raw, i+1) != len(raw) {
				return nil
			}
			return res
		}
		if raw[i] != ',' {
			return nil
		}
		i = jsoncodec.SkipSpace(raw, i+1)
	}
}

// flatObjectEnd returns the index just past the object at data[i:] when
// it holds no nested object or array and no escape (what
// decodeFlatContent can take), or -1.
func flatObjectEnd(data []byte, i int) int {
	if i >= len(data) || data[i] != '{' {
		return -1
	}
	inString := false
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '"':
			inString = !inString
		case '\\':
			return -1
		case '{', '[', ']':
			if !inString {
				return -1
			}
		case '}':
			if !inString {
				return j + 1
			}
		}
	}
	return -1
}
