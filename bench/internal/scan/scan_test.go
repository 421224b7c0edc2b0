package scan

import "testing"

func TestFieldFindsNestedMembersAndSkipsLookalikes(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"x\"y"},"progressToken":7},"name":"echo","arguments":{"text":"a\\"}},"id":12}`)
	if got := string(Field(msg, "id")); got != "12" {
		t.Fatalf("id = %q", got)
	}
	if !Is(Field(msg, "method"), "tools/call") {
		t.Fatalf("method = %q", Field(msg, "method"))
	}
	if !Is(Path(msg, "params", "name"), "echo") {
		t.Fatalf("name = %q", Path(msg, "params", "name"))
	}
	if got := string(Path(msg, "params", "arguments", "text")); got != `"a\\"` {
		t.Fatalf("text = %q", got)
	}
	if n, ok := Int(Path(msg, "params", "_meta", "progressToken")); !ok || n != 7 {
		t.Fatalf("progressToken = %d %v", n, ok)
	}
	if Field(msg, "missing") != nil {
		t.Fatal("found a missing member")
	}
}
