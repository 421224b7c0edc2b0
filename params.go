package snodo

import (
	"bytes"
	"encoding/json"
	"github.com/snodo/snodo/abi"
	"slices"
)

// Building a request's params: the dialect's _meta members, the progress
// token, trace context and the caller's own _meta, then the method's
// members; and the client capabilities a request declares.
func appendMember(dst []byte, key string, value []byte) []byte {
	if plainKey(key) {
		dst = append(dst, '"')
		dst = append(dst, key...)
		dst = append(dst, '"')
	} else {
		dst = append(dst, mustMarshal(key)...)
	}
	dst = append(dst, ':')
	return append(dst, value...)
}

// plainKey reports whether key encodes as itself between quotes with any
// JSON encoder: letters, digits and the punctuation of MCP's _meta keys
// ("io.modelcontextprotocol/...", "progressToken").
func plainKey(key string) bool {
	for i := 0; i < len(key); i++ {
		switch b := key[i]; {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9',
			b == '.', b == '/', b == '_', b == '-', b == ':':
		default:
			return false
		}
	}
	return true
}

func mustMarshal(v any) []byte {
	b, err := marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// clientCapabilities returns the capabilities the handlers can answer, for
// version: elicitation (in the configured modes, where the version has
// them), sampling and roots. Nothing is advertised without a handler. The
// extensions of Options.Extensions, and the extra extension members, are
// declared in every version.
func (c *config) clientCapabilities(version string, extra ...string) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	member := func(name, value string) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + name + `":` + value)
	}
	switch form, url := c.declaresFormElicitation(), c.declaresURLElicitation(); {
	case version >= version20251125:
		var modes []string
		if form {
			modes = append(modes, `"form":{}`)
		}
		if url {
			modes = append(modes, `"url":{}`)
		}
		if len(modes) > 0 {
			member("elicitation", "{"+joinComma(modes)+"}")
		}
	case version >= version20250618:
		// Elicitation came in 2025-06-18, form mode only.
		if form {
			member("elicitation", "{}")
		}
	}
	if _, ok := c.handlers[abi.MethodRootsList]; ok {
		member("roots", "{}")
	}
	if _, ok := c.handlers[abi.MethodSamplingCreate]; ok {
		if c.samplingTools && version >= version20251125 {
			// Tool use in sampling came in 2025-11-25.
			member("sampling", `{"tools":{}}`)
		} else {
			member("sampling", "{}")
		}
	}
	if tasks := c.clientTasksCapability(version); tasks != "" {
		member("tasks", tasks)
	}
	if ext := c.extensionsMember(extra...); ext != "" {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(ext)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func joinComma(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(x)
	}
	return b.String()
}

// buildParams returns the params object of one request: _meta (the
// dialect's members, the progress token, and the caller's own _meta
// members), then the method's members from base (a JSON object or nil),
// then the members in tail (already encoded, comma-joined). With own, base
// is a compact object encoded for this request alone, and is returned
// itself when nothing is added to it.
func buildParams(d dialect, cc *callConfig, progressToken []byte, base []byte, tail []byte, own bool) ([]byte, error) {
	base = bytes.TrimSpace(base)
	hasMeta := len(base) > 0 && bytes.Contains(base, []byte(`"_meta"`))
	if own && !hasMeta && d.metaSize() == 0 && progressToken == nil && len(cc.traceMeta) == 0 && len(tail) == 0 &&
		len(base) >= 2 && base[0] == '{' && base[len(base)-1] == '}' && len(objectBody(base)) == len(base)-2 {
		return base, nil
	}
	var userMeta map[string]json.RawMessage
	if hasMeta {
		um, b, err := splitUserMeta(base)
		if err != nil {
			return nil, err
		}
		userMeta, base = um, b
	}

	// One buffer: the _meta object is written in place and taken out
	// again when it stays empty.
	const metaOpen = `{"_meta":{`
	out := make([]byte, 0, len(metaOpen)+d.metaSize()+48+len(progressToken)+len(cc.traceMeta)+len(base)+len(tail))
	out = append(out, metaOpen...)
	metaStart := len(out)
	out = d.metaMembers(out, cc.logLevel)
	if progressToken != nil {
		if len(out) > metaStart {
			out = append(out, ',')
		}
		out = appendMember(out, metaProgressToken, progressToken)
	}
	if len(cc.traceMeta) > 0 {
		if len(out) > metaStart {
			out = append(out, ',')
		}
		out = append(out, cc.traceMeta...)
	}
	if len(userMeta) > 0 {
		for _, k := range d.reservedMeta() {
			delete(userMeta, k)
		}
		if cc.logLevel != "" {
			delete(userMeta, metaLogLevel)
		}
		if progressToken != nil {
			delete(userMeta, metaProgressToken)
		}
		if len(cc.traceMeta) > 0 {
			delete(userMeta, metaTraceparent)
			delete(userMeta, metaTracestate)
			delete(userMeta, metaBaggage)
		}
		keys := make([]string, 0, len(userMeta))
		for k := range userMeta {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if len(out) > metaStart {
				out = append(out, ',')
			}
			out = appendMember(out, k, userMeta[k])
		}
	}
	if len(out) > metaStart {
		out = append(out, '}')
	} else {
		out = out[:1] // no _meta: just the opening brace
	}
	if inner := objectBody(base); len(inner) > 0 {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, inner...)
	}
	if len(tail) > 0 {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, tail...)
	}
	out = append(out, '}')
	return out, nil
}

// splitUserMeta takes the caller's _meta members out of the params object
// base: it returns them and base without them (base itself when it has no
// _meta member).
func splitUserMeta(base []byte) (map[string]json.RawMessage, []byte, error) {
	var members map[string]json.RawMessage
	if err := unmarshal(base, &members); err != nil {
		return nil, nil, err
	}
	m, ok := members["_meta"]
	if !ok {
		return nil, base, nil
	}
	var userMeta map[string]json.RawMessage
	if err := unmarshal(m, &userMeta); err != nil {
		return nil, nil, err
	}
	delete(members, "_meta")
	b, err := marshal(members)
	if err != nil {
		return nil, nil, err
	}
	return userMeta, b, nil
}

// objectBody returns the members of the JSON object obj, without braces.
func objectBody(obj []byte) []byte {
	obj = bytes.TrimSpace(obj)
	if len(obj) < 2 || obj[0] != '{' {
		return nil
	}
	return bytes.TrimSpace(obj[1 : len(obj)-1])
}
