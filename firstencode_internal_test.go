package snodo

import (
	"reflect"
	"testing"
	"time"
)

// TestFirstEncodeRunsAlone checks that a second caller with the same
// arguments type waits for the first encode to end, and that later callers
// and other types do not wait.
func TestFirstEncodeRunsAlone(t *testing.T) {
	type args struct{ A string }
	typ := reflect.TypeFor[args]()
	done := firstEncode(typ)

	waited := make(chan struct{})
	go func() {
		firstEncode(typ)()
		close(waited)
	}()
	select {
	case <-waited:
		t.Fatal("a second first encode of the same type did not wait")
	case <-time.After(20 * time.Millisecond):
	}

	type other struct{ B int }
	otherDone := make(chan struct{})
	go func() {
		firstEncode(reflect.TypeFor[other]())()
		close(otherDone)
	}()
	select {
	case <-otherDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the first encode of another type waited")
	}

	done()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting caller was not released")
	}
	firstEncode(typ)() // returns at once
}
