package transport_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/snodo/snodo/transport"
)

// A request abandoned by its caller says "context canceled" once, and its
// context's cause after it.
func TestContextErrorSaysCancelledOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if msg := transport.ContextError(ctx).Error(); strings.Count(msg, "context canceled") != 1 {
		t.Errorf("Error() = %q, want context canceled once", msg)
	}
	ctx, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(errors.New("the user pressed Ctrl-C"))
	msg := transport.ContextError(ctx).Error()
	if strings.Count(msg, "context canceled") != 1 || !strings.HasSuffix(msg, "context canceled: the user pressed Ctrl-C") {
		t.Errorf("Error() = %q, want context canceled once, then the cause", msg)
	}
}
