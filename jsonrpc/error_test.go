package jsonrpc

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// "the error type (kind, code, message, data; works with errors.Is/As)".
func TestErrorIsMatchesCodeAndKind(t *testing.T) {
	e := &Error{Kind: KindTransport, Code: CodeRequestTimeout, Message: "timed out"}
	wrapped := fmt.Errorf("calling tools/call: %w", e)

	cases := []struct {
		target *Error
		want   bool
	}{
		{&Error{Kind: KindTransport, Code: CodeRequestTimeout}, true},
		{&Error{Code: CodeRequestTimeout}, true},
		{&Error{Kind: KindTransport}, true},
		{&Error{Kind: KindServer, Code: CodeRequestTimeout}, false},
		{&Error{Kind: KindTransport, Code: CodeConnectionClosed}, false},
	}
	for _, c := range cases {
		if got := errors.Is(wrapped, c.target); got != c.want {
			t.Errorf("errors.Is(%v, kind=%q code=%d) = %v, want %v", wrapped, c.target.Kind, c.target.Code, got, c.want)
		}
	}
	var as *Error
	if !errors.As(wrapped, &as) || as != e {
		t.Fatal("errors.As did not find the *Error")
	}
}

func TestErrorUnwrapsCause(t *testing.T) {
	e := &Error{Kind: KindTransport, Code: CodeConnectionClosed, Message: "server exited", Cause: io.ErrUnexpectedEOF}
	if !errors.Is(e, io.ErrUnexpectedEOF) {
		t.Fatal("errors.Is does not reach the cause")
	}
	if msg := e.Error(); !strings.Contains(msg, "-32000") || !strings.Contains(msg, "server exited") || !strings.Contains(msg, io.ErrUnexpectedEOF.Error()) {
		t.Fatalf("Error() = %q", msg)
	}
}

func TestErrorWireFormKeepsData(t *testing.T) {
	e := (&Error{Code: -32602, Message: "bad \"x\""}).WithData([]byte(`{"field":"x"}`))
	got := string(e.AppendJSON(nil))
	want := `{"code":-32602,"message":"bad \"x\"","data":{"field":"x"}}`
	if got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// An error whose message already says its cause, or the cause's first part,
// says it once: "POST failed: EOF", not "POST failed: EOF: EOF".
func TestErrorSaysItsCauseOnce(t *testing.T) {
	eof := errors.New(`Post "http://127.0.0.1:1/mcp": EOF`)
	for _, c := range []struct {
		e    *Error
		want string
	}{
		{&Error{Code: CodeConnectionClosed, Message: "POST failed: " + eof.Error(), Cause: eof}, `POST failed: Post "http://127.0.0.1:1/mcp": EOF`},
		{&Error{Code: CodeInternalError, Message: "request abandoned: context canceled", Cause: errors.New("context canceled")}, "request abandoned: context canceled"},
		{&Error{Code: CodeInternalError, Message: "request abandoned: context canceled", Cause: fmt.Errorf("%w: %w", errors.New("context canceled"), errors.New("the server went away"))}, "request abandoned: context canceled: the server went away"},
		{&Error{Code: CodeConnectionClosed, Message: "server exited", Cause: io.ErrUnexpectedEOF}, "server exited: unexpected EOF"},
		// Only a whole part counts: "read EOF" does not end with the part "EOF".
		{&Error{Code: CodeConnectionClosed, Message: "read EOF", Cause: io.EOF}, "read EOF: EOF"},
		{&Error{Code: CodeConnectionClosed, Message: "EOF", Cause: io.EOF}, "EOF"},
		{&Error{Code: CodeConnectionClosed, Message: "closed", Cause: errors.New("")}, "closed"},
	} {
		if got := c.e.Detail(); got != c.want {
			t.Errorf("Detail() = %q, want %q", got, c.want)
		}
		if got, want := c.e.Error(), fmt.Sprintf("error %d: %s", c.e.Code, c.want); got != want {
			t.Errorf("Error() = %q, want %q", got, want)
		}
	}
}
