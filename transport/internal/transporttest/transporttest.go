// Package transporttest holds what the tests of Snodo's transports (stdio,
// Streamable HTTP) and of their call core share: a bounded receive, the
// JSON text of a response, and the check of a JSON-RPC error's code.
package transporttest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/snodo/snodo/jsonrpc"
)

// Patience bounds a wait for something the behaviour under test is to
// bring. It only keeps a failing test finite: a test never waits for it to
// pass, so a busy machine cannot fail a test by being slow.
const Patience = 30 * time.Second

// Recv receives from ch, failing the test with what (what was awaited) if
// nothing comes within Patience.
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(Patience):
		t.Fatalf("%s: nothing came in %v", what, Patience)
		panic("unreachable")
	}
}

// Response returns the JSON text of a response to id with member, the
// rest of the object: `"result":{}` or `"error":{…}`.
func Response(id jsonrpc.ID, member string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,%s}`, id.AppendJSON(nil), member)
}

// WantCode fails the test unless err is a *jsonrpc.Error with code, which
// it returns.
func WantCode(t testing.TB, err error, code int64) *jsonrpc.Error {
	t.Helper()
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		t.Fatalf("error %v (%T), want a *jsonrpc.Error with code %d", err, err, code)
	}
	if je.Code != code {
		t.Fatalf("error %v, want code %d", err, code)
	}
	return je
}
