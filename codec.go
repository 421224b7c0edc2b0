package snodo

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"github.com/bytedance/sonic"

	"github.com/snodo/snodo/internal/jsoncodec"
)

// The client's JSON goes through sonic: requests are built and results
// decoded on every call.
var api = sonic.ConfigDefault

func marshal(v any) ([]byte, error) { return api.Marshal(v) }

// marshalOnce and unmarshalOnce are for what a connection encodes or
// decodes once, in its handshake: the initialize request and result, the
// server/discover result, the server's capabilities and its tasks
// capability. They use encoding/json, because sonic generates machine code
// for each Go type it first meets, allocating 0.4–1.5 MB per type, which
// pays back for the types of every call and not for these. Like sonic's
// default configuration, marshalOnce does not escape HTML characters.
func marshalOnce(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func unmarshalOnce(data []byte, v any) error { return json.Unmarshal(data, v) }

// unmarshal decodes data into v without copying it first: see
// jsoncodec.Unmarshal. The client decodes only what transports return, which
// nothing writes to.
func unmarshal(data []byte, v any) error { return jsoncodec.Unmarshal(data, v) }

// eachMember scans the members of a JSON object: see jsoncodec.EachMember.
func eachMember(data []byte, f func(key, value []byte) bool) bool {
	return jsoncodec.EachMember(data, f)
}

// The types that keep the members they do not know in an Extra field
// (Tool, Resource, Content, ResourceContents) decode and encode through a
// defined type of themselves without methods (F), with decodeKeepingExtra
// and encodeKeepingExtra; F's JSON keys (jsonKeys) are the known members.

// decodeKeepingExtra decodes data into F's fields and returns the members
// that are not among known.
func decodeKeepingExtra[F any](data []byte, known []string) (F, map[string]json.RawMessage, error) {
	var f F
	if err := unmarshal(data, &f); err != nil {
		return f, nil, err
	}
	extra, err := splitExtra(data, known...)
	return f, extra, err
}

// encodeKeepingExtra encodes f, then the members of extra.
func encodeKeepingExtra[F any](f F, extra map[string]json.RawMessage) ([]byte, error) {
	b, err := marshal(f)
	if err != nil {
		return nil, err
	}
	return appendExtra(b, extra)
}

// jsonKeys returns the JSON member names of the fields of the struct type
// F (those with a json tag other than "-").
func jsonKeys[F any]() []string {
	t := reflect.TypeFor[F]()
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

// splitExtra decodes data's members and returns those not in known, for
// types that keep the fields they do not know.
func splitExtra(data []byte, known ...string) (map[string]json.RawMessage, error) {
	if !jsoncodec.HasUnknownKeys(data, known) {
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
