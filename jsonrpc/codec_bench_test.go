package jsonrpc

import (
	"bytes"
	"testing"
)

func BenchmarkDecode8MiB(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + string(bytes.Repeat([]byte("x"), 8<<20)) + `"}]}}`)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeSmall(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"hello"}],"isError":false}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendRequest(b *testing.B) {
	req := &Request{ID: Int64ID(12345), Method: "tools/call", Params: []byte(`{"name":"echo","arguments":{"text":"hello"}}`)}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = Append(buf[:0], req); err != nil {
			b.Fatal(err)
		}
	}
}
