package wasm

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/snodo/snodo/internal/safetext"
)

// rawHandler keeps log records as they are, unquoted: what a handler that
// prints messages verbatim (such as slog's default one) would show.
type rawHandler struct {
	mu   *sync.Mutex
	recs *[]string
	pre  string
}

func (h rawHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h rawHandler) Handle(_ context.Context, r slog.Record) error {
	line := h.pre + r.Message
	r.Attrs(func(a slog.Attr) bool { line += " " + a.Key + "=" + a.Value.String(); return true })
	h.mu.Lock()
	*h.recs = append(*h.recs, line)
	h.mu.Unlock()
	return nil
}
func (h rawHandler) WithAttrs(as []slog.Attr) slog.Handler {
	for _, a := range as {
		h.pre += a.Key + "=" + a.Value.String() + " "
	}
	return h
}
func (h rawHandler) WithGroup(string) slog.Handler { return h }

// wantNoRawControl fails if s holds a control character or a bidi
// override that SanitizeText escapes.
func wantNoRawControl(t *testing.T, what, s string) {
	t.Helper()
	for _, r := range s {
		if safetext.Unsafe(r) {
			t.Fatalf("%s holds a raw %U: %q", what, r, s)
		}
	}
}

// Guest text — log messages, the message and data of a guest's error
// object, a module's name from its file name — reaches the host's logs
// and errors escaped: a newline cannot start a forged log line, an ANSI
// escape cannot reach a terminal, a bidi override cannot reorder it.
func TestGuestTextIsEscapedInLogsAndErrors(t *testing.T) {
	var mu sync.Mutex
	var recs []string
	h, err := NewHost(HostConfig{CacheDir: filepath.Join(goGuestDir, "cache"), Logger: slog.New(rawHandler{mu: &mu, recs: &recs})})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())

	path := filepath.Join(t.TempDir(), "forge\n[INFO] name\x1b[2J\u202e.wasm")
	if err := os.WriteFile(path, wasmFile(t, "wat/hostile/log-forge.wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := load(t, h, ModuleConfig{Path: path})
	wantNoRawControl(t, "module name", m.Name())
	if want := `forge\n[INFO] name\x1b[2J\u202e`; m.Name() != want {
		t.Fatalf("module name %q, want %q", m.Name(), want)
	}
	_, err = m.HandleRequest(context.Background(), "elicitation/create", elicit("x"))
	e := wantHandlerError(t, err, -32000, `refused\n[ERROR] forged\x1b[31m\r\u202e`)
	wantNoRawControl(t, "error message", e.Message)

	mu.Lock()
	defer mu.Unlock()
	if len(recs) != 1 {
		t.Fatalf("log records %q, want one", recs)
	}
	wantNoRawControl(t, "log record", recs[0])
	if !strings.Contains(recs[0], `\n[INFO] forged\x1b[31m\u202e`) {
		t.Fatalf("log record %q does not show the guest's message escaped", recs[0])
	}

	// A failure's cause quotes the guest's stderr; a load error its
	// file's name.
	_, err = h.Load(context.Background(), ModuleConfig{Path: filepath.Join(t.TempDir(), "gone\n[INFO] x\x1b[31m.wasm")})
	if err == nil {
		t.Fatal("loaded a missing file")
	}
	wantNoRawControl(t, "load error", err.Error())
}

func TestSanitizeText(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcödé ✓":    "plain text, ünïcödé ✓",
		"a\nb\r\tc":                `a\nb\r\tc`,
		"\x1b[31mred\x1b[0m":       `\x1b[31mred\x1b[0m`,
		"\x00\x7f\u0085\u009b":     `\x00\x7f\x85\x9b`,
		"abc\u202edef\u2066\u2029": `abc\u202edef\u2066\u2029`,
		"bad \xff utf-8":           "bad \uFFFD utf-8",
		"kept \uFFFD":              "kept \uFFFD",
	} {
		if got := SanitizeText(in); got != want {
			t.Errorf("SanitizeText(%q) = %q, want %q", in, got, want)
		}
	}
	raw := json.RawMessage("{\n  \"why\": \"\u202egnp.exe\\n\"\n}")
	got := sanitizeJSON(raw)
	if string(got) != `{"why":"\u202egnp.exe\n"}` {
		t.Fatalf("sanitizeJSON = %s", got)
	}
	var v map[string]string
	if err := json.Unmarshal(got, &v); err != nil || v["why"] != "\u202egnp.exe\n" {
		t.Fatalf("sanitizeJSON changed the meaning: %v %q", err, v)
	}
}
