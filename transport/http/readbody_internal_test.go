package http

import (
	"errors"
	"io"
	nethttp "net/http"
	"runtime"
	"strings"
	"testing"
)

// readBody reads as readBounded does, whatever the Content-Length says:
// the whole body when it is within the bound, ErrTooLarge past it, also
// when the body runs past or stops short of the declared length.
func TestReadBodyAgreesWithReadBounded(t *testing.T) {
	const max = 16
	for _, c := range []struct {
		name   string
		body   string
		length int64
	}{
		{"exact", "0123456789", 10},
		{"exact at the bound", "0123456789abcdef", 16},
		{"unknown length", "0123456789", -1},
		{"declared over the bound", "0123456789abcdefXYZ", 19},
		{"longer than declared", "0123456789abcdef", 4},
		{"longer than declared, past the bound", "0123456789abcdefXYZ", 4},
		{"longer than declared by one, at the bound", "0123456789abcdefX", 16},
		{"shorter than declared", "0123", 10},
		{"empty", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, wantErr := readBounded(strings.NewReader(c.body), max)
			resp := &nethttp.Response{ContentLength: c.length, Body: io.NopCloser(strings.NewReader(c.body))}
			got, err := readBody(resp, max)
			if string(got) != string(want) || errors.Is(err, ErrTooLarge) != errors.Is(wantErr, ErrTooLarge) || (err == nil) != (wantErr == nil) {
				t.Fatalf("readBody %q, %v; readBounded %q, %v", got, err, want, wantErr)
			}
			if err != nil && err.Error() != wantErr.Error() {
				t.Errorf("error %q, want %q", err, wantErr)
			}
		})
	}
}

// A Content-Length is not an allocation the server gets for free: a body
// that declares 16 MiB and sends 4 bytes makes the client allocate about
// what arrived, not what was declared.
func TestReadBodyDoesNotTrustALargeContentLength(t *testing.T) {
	const declared = DefaultMaxMessageBytes
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 4 {
		resp := &nethttp.Response{ContentLength: declared, Body: io.NopCloser(strings.NewReader("{}  "))}
		if _, err := readBody(resp, DefaultMaxMessageBytes); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("4 bodies declaring %d bytes and sending 4 allocated %d bytes, want under 1 MiB", declared, got)
	}
}
