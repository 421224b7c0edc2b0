package snodo_test

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/transport"
)

// The re-exported sentinels match what transports return.
func TestTransportSentinelsReexported(t *testing.T) {
	for _, tc := range []struct {
		err    error
		target error
		want   bool
	}{
		{transport.ConnectionError("server exited", io.EOF), snodo.ErrConnection, true},
		{transport.TimeoutError(time.Second), snodo.ErrTimeout, true},
		{transport.TimeoutError(time.Second), transport.ErrMaxTotalTimeout, false},
		{transport.MaxTotalTimeoutError(time.Minute), snodo.ErrTimeout, true},
		{transport.MaxTotalTimeoutError(time.Minute), transport.ErrMaxTotalTimeout, true},
		{transport.TimeoutError(time.Second), snodo.ErrConnection, false},
	} {
		if got := errors.Is(tc.err, tc.target); got != tc.want {
			t.Errorf("errors.Is(%v, %v) = %v, want %v", tc.err, tc.target, got, tc.want)
		}
	}
	if snodo.ErrOverflow != transport.ErrOverflow {
		t.Error("snodo.ErrOverflow is not transport.ErrOverflow")
	}
}
