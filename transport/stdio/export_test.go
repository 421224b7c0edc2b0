package stdio

import "time"

// QueuedBytes returns the bytes of the messages waiting in c's writer
// queue, the one the writer is in the middle of not included.
func QueuedBytes(c *Conn) int { return c.out.queued() }

// SetWatchDelay sets how long the baton stays free before the background
// reader takes it: with a long delay, after a response has been routed,
// the next caller is sure to read stdout itself.
func SetWatchDelay(c *Conn, d time.Duration) { c.watchDelay.Store(int64(d)) }

// BatonFree reports whether the baton is free: the next caller to wait for
// a response takes it.
func BatonFree(c *Conn) bool { return len(c.baton) > 0 }

// TakeBaton takes the baton once it is free, so that nobody reads stdout
// (callers wait without it) until the function returned hands it back. It
// reports false if the baton was not free within a long while.
func TakeBaton(c *Conn) (giveBack func(), ok bool) {
	select {
	case <-c.baton:
		return c.release, true
	case <-time.After(30 * time.Second):
		return nil, false
	}
}

// Pending returns how many requests wait for their responses.
func Pending(c *Conn) int { return int(c.core.Pending()) }
