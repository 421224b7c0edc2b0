package progq

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestQueueKeepsEverythingWithinTheLimit(t *testing.T) {
	q := New(100)
	for i := range 5 {
		q.Push(json.RawMessage(fmt.Sprintf(`{"p":%d}`, i)))
	}
	if !q.Pending() {
		t.Fatal("no Ready after a Push")
	}
	<-q.Ready()
	got := q.Take(nil)
	if len(got) != 5 || string(got[0]) != `{"p":0}` || string(got[4]) != `{"p":4}` || q.Dropped() != 0 {
		t.Fatalf("took %q, dropped %d", got, q.Dropped())
	}
	if again := q.Take(got); len(again) != 0 {
		t.Fatalf("second Take = %q", again)
	}
}

func TestQueueDropsTheOldestPastTheLimit(t *testing.T) {
	q := New(20) // two 8-byte notifications fit, a third does not
	for i := range 3 {
		q.Push(json.RawMessage(fmt.Sprintf(`{"p":%d}`, i)))
	}
	got := q.Take(nil)
	if len(got) != 2 || string(got[0]) != `{"p":1}` || q.Dropped() != 1 {
		t.Fatalf("took %q, dropped %d; want the two newest, one dropped", got, q.Dropped())
	}
	// The newest is kept even when it alone is over the limit.
	big := json.RawMessage(`{"p":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`)
	q.Push(json.RawMessage(`{"p":9}`))
	q.Push(big)
	if got := q.Take(nil); len(got) != 1 || string(got[0]) != string(big) || q.Dropped() != 2 {
		t.Fatalf("took %q, dropped %d; want only the newest", got, q.Dropped())
	}
}
