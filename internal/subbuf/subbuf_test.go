package subbuf

import (
	"context"
	"io"
	"testing"

	"github.com/snodo/snodo/jsonrpc"
)

// A buffer whose owner has already ended is closed at once, from a
// goroutine of the owner's: New must not let that Close run before the
// buffer is whole (it did: a nil stopOwn, a panic at shutdown).
func TestOwnerEndedBeforeNew(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 2000 {
		cancelled := make(chan struct{})
		b := New[int](ctx, jsonrpc.ID{}, Config{}, func() error { close(cancelled); return nil })
		<-cancelled // the owner's Close told the server
		if _, err := b.Next(context.Background()); err != io.EOF {
			t.Fatalf("run %d: Next after the owner ended: %v, want io.EOF", i, err)
		}
	}
}
