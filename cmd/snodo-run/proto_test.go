package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/snodo/snodo/jsonrpc"
)

// --trace starts a trace context: every request carries a traceparent of
// the printed trace ID (the demo's traceparent tool reports what it got),
// in both eras; SNODO_TRACE sets it too.
func TestTraceFlagPropagatesTraceparent(t *testing.T) {
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			r := ok(t, cli(t, "--trace", "tools", "call", "traceparent", "-o", "text", "--", demo, "--era", era))
			var line struct {
				TraceID     string `json:"traceId"`
				Traceparent string `json:"traceparent"`
			}
			first := strings.SplitN(r.stderr, "\n", 2)[0]
			if err := json.Unmarshal([]byte(first), &line); err != nil || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(line.TraceID) {
				t.Fatalf("stderr's first line %q: %v", first, err)
			}
			if !regexp.MustCompile(`^traceparent 00-`+line.TraceID+`-[0-9a-f]{16}-01\n?$`).MatchString(r.stdout) || !strings.Contains(r.stdout, line.Traceparent) {
				t.Errorf("the server got %q, the trace is %+v", r.stdout, line)
			}
		})
	}
	r := ok(t, cliWith(t, runOpts{env: []string{"SNODO_TRACE=true"}}, "tools", "call", "traceparent", "-o", "text", "--", demo))
	contains(t, "stdout", r.stdout, "traceparent 00-")
	r = ok(t, cli(t, "tools", "call", "traceparent", "-o", "text", "--", demo))
	contains(t, "stdout without --trace", r.stdout, "no traceparent")
	if strings.Contains(r.stderr, "traceId") {
		t.Errorf("a trace ID printed without --trace: %s", r.stderr)
	}
}

// --url-elicitation on: the server's URL-mode elicitation is shown (host,
// message, URL) and answered from stdin — Enter accepts, n declines, the
// end of input cancels — in both eras; in the legacy era the server's
// notifications/elicitation/complete is reported.
func TestURLElicitationInTheTerminal(t *testing.T) {
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			args := []string{"--url-elicitation", "on", "tools", "call", "connect", "-o", "text", "--", demo, "--era", era}
			r := ok(t, cliWith(t, runOpts{stdin: "\n"}, args...))
			contains(t, "stdout", r.stdout, "connected")
			contains(t, "stderr", r.stderr, "open a page on demo.example", "Sign in to the demo service", "https://demo.example/connect?session=42", "press Enter")
			if era == "legacy" {
				contains(t, "stderr", r.stderr, "interaction demo-login-42 is complete")
			}
			r = ok(t, cliWith(t, runOpts{stdin: "n\n"}, args...))
			contains(t, "stdout", r.stdout, "connect declined")
			r = ok(t, cliWith(t, runOpts{stdin: ""}, args...))
			contains(t, "stdout", r.stdout, "connect canceled")
			r = ok(t, cliWith(t, runOpts{stdin: "what\nyes\n"}, args...))
			contains(t, "stdout after asking again", r.stdout, "connected")
		})
	}
	// Off (and auto without a terminal) in 2026-07-28: the input nobody
	// answers is a configuration error that names the flag.
	for _, mode := range []string{"off", "auto"} {
		e := exits(t, cliWith(t, runOpts{stdin: "\n"}, "--url-elicitation", mode, "tools", "call", "connect", "--", demo), exitUsage, "config")
		contains(t, "error", e.Message, "elicitation.url", "--url-elicitation on")
	}
	e := exits(t, cli(t, "--url-elicitation", "maybe", "tools", "list", "--", demo), exitUsage, "usage")
	contains(t, "error", e.Message, "auto, on or off")
}

// The server's text is hostile: the message and URL are escaped before
// they reach the terminal.
func TestURLPrompterEscapesTheServersText(t *testing.T) {
	var out strings.Builder
	p := newURLPrompter(strings.NewReader("\n"), &out)
	res, err := p.HandleRequest(context.Background(), "elicitation/create", json.RawMessage(
		`{"mode":"url","message":"ok\u001b[2J\nFAKE: press Enter","url":"https://pay.example/\u202eevil","elicitationId":"e\u001b"}`))
	if err != nil || string(res) != `{"action":"accept"}` {
		t.Fatalf("%s %v", res, err)
	}
	p.completed("id\u001b[31m")
	got := out.String()
	if strings.ContainsAny(got, "\u001b\u202e") || strings.Contains(got, "\nFAKE") {
		t.Errorf("raw server text reached the terminal: %q", got)
	}
	contains(t, "output", got, `ok\x1b[2J\nFAKE`, `https://pay.example/\u202eevil`, `id\x1b[31m`, "pay.example")
}

// A -32042 URLElicitationRequiredError (2025-11-25): its pages are shown,
// escaped, before the error object; other errors show nothing.
func TestURLElicitationsRequiredArePrinted(t *testing.T) {
	var out strings.Builder
	err := &jsonrpc.Error{Kind: jsonrpc.KindServer, Code: jsonrpc.CodeURLElicitationRequired, Message: "needs more",
		Data: json.RawMessage(`{"elicitations":[{"mode":"url","elicitationId":"x","url":"https://auth.example/c?id=x","message":"Authorize\u001b[1m files"}]}`)}
	printURLElicitationsRequired(&out, err)
	got := out.String()
	contains(t, "output", got, "open a page on auth.example", `Authorize\x1b[1m files`, "https://auth.example/c?id=x", "run the command again")
	if strings.Contains(got, "\u001b") {
		t.Errorf("raw escape in %q", got)
	}
	out.Reset()
	printURLElicitationsRequired(&out, errors.New("other"))
	printURLElicitationsRequired(&out, &jsonrpc.Error{Kind: jsonrpc.KindServer, Code: -32603})
	if out.Len() != 0 {
		t.Errorf("printed for another error: %q", out.String())
	}
}

// handlers check says when a module declares sampling with tools.
func TestHandlersCheckShowsSamplingTools(t *testing.T) {
	mod := filepath.Join(t.TempDir(), "samplingtools.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", mod, "../../runtime/testdata/samplingtools")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	r := ok(t, cli(t, "handlers", "check", mod, "--output", "text"))
	contains(t, "stdout", r.stdout, "answers: sampling/createMessage", "sampling with tools (sampling.tools)")
	r = ok(t, cli(t, "--trace", "handlers", "check", samplingWasm, "--output", "text"))
	if strings.Contains(r.stderr, "traceId") {
		t.Errorf("a trace started for handlers check: %s", r.stderr)
	}
	if strings.Contains(r.stdout, "sampling.tools") {
		t.Errorf("sampling-echo declares no tools:\n%s", r.stdout)
	}
}
