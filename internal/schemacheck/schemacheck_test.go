package schemacheck

import "testing"

// The checker accepts valid messages and refuses invalid ones, so that a
// test validating the wire can fail.
func TestCheckerAcceptsValidAndRefusesInvalid(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	good := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"x"}}`
	if err := c.ClientRequest(Modern, []byte(good)); err != nil {
		t.Errorf("valid modern tools/call refused: %v", err)
	}
	noMeta := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`
	if err := c.ClientRequest(Modern, []byte(noMeta)); err == nil {
		t.Error("modern tools/call without _meta accepted")
	}
	if err := c.ClientRequest(Legacy, []byte(noMeta)); err != nil {
		t.Errorf("legacy tools/call refused: %v", err)
	}
	if err := c.ClientRequest(Modern, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)); err == nil {
		t.Error("ping accepted in 2026-07-28, which has none")
	}
	if err := c.ClientNotification(Legacy, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		t.Errorf("initialized refused: %v", err)
	}
	if err := c.ClientResponse(Legacy, "elicitation/create", []byte(`{"jsonrpc":"2.0","id":3,"result":{"action":"accept","content":{"a":"b"}}}`)); err != nil {
		t.Errorf("valid elicit result refused: %v", err)
	}
	if err := c.ClientResponse(Legacy, "elicitation/create", []byte(`{"jsonrpc":"2.0","id":3,"result":{"action":"maybe"}}`)); err == nil {
		t.Error("invalid elicit result accepted")
	}
}
