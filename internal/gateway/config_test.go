package gateway

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseConfigRefusesUnknownSections(t *testing.T) {
	_, err := ParseConfig([]byte(`{"mcpServers":{},"identites":{}}`), ".json")
	if err == nil || !strings.Contains(err.Error(), `"identites"`) {
		t.Fatalf("a misspelt section: got %v, want an error naming it", err)
	}
}

func TestParseConfigYAMLAndJSONAgree(t *testing.T) {
	j, err := ParseConfig([]byte(`{"listen":"127.0.0.1:9","mcpServers":{"fs":{"command":"x","args":["a"]}}}`), ".json")
	if err != nil {
		t.Fatal(err)
	}
	y, err := ParseConfig([]byte("listen: 127.0.0.1:9\nmcpServers:\n  fs:\n    command: x\n    args: [a]\n"), ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	var a, b struct {
		FS struct {
			Command string
			Args    []string
		} `json:"fs"`
	}
	if err := j.Decode("mcpServers", &a); err != nil {
		t.Fatal(err)
	}
	if err := y.Decode("mcpServers", &b); err != nil {
		t.Fatal(err)
	}
	if a.FS.Command != "x" || b.FS.Command != "x" || len(b.FS.Args) != 1 || string(j["listen"]) != string(y["listen"]) {
		t.Fatalf("json %+v %s, yaml %+v %s", a, j["listen"], b, y["listen"])
	}
}

func TestDecodeRefusesUnknownMembers(t *testing.T) {
	s, err := ParseConfig([]byte(`{"telemetry":{"otlpEndpont":"x"}}`), ".json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		OTLPEndpoint string `json:"otlpEndpoint"`
	}
	if err := s.Decode("telemetry", &v); err == nil || !strings.Contains(err.Error(), "otlpEndpont") {
		t.Fatalf("got %v, want an error naming the unknown member", err)
	}
}

func TestReadConfigBoundsTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(p, []byte(`{"audit":"`+strings.Repeat("a", MaxConfigBytes)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadConfig(p); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("got %v", err)
	}
	for _, bad := range []string{`[]`, `null`, `{"mcpServers":`} {
		if _, err := ParseConfig([]byte(bad), ".json"); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestOpenAuditAppendsJSONLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := ParseConfig([]byte(`{"audit":{"file":`+strconv.Quote(p)+`}}`), ".json")
	if err != nil {
		t.Fatal(err)
	}
	a, closeIt, err := OpenAudit(s)
	if err != nil || a == nil {
		t.Fatalf("OpenAudit: %v %v", a, err)
	}
	a.Audit(AuditRecord{Method: "tools/call", Decision: "deny", Identity: "alice"})
	a.Audit(AuditRecord{Method: "tools/list", Decision: "allow"})
	closeIt()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"identity":"alice"`) || !strings.Contains(lines[1], `"method":"tools/list"`) {
		t.Fatalf("audit file:\n%s", b)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode())
	}
	if a, _, err := OpenAudit(Sections{}); a != nil || err != nil {
		t.Fatalf("no section: %v %v", a, err)
	}
}
