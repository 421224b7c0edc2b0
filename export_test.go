package snodo

import "time"

// SetModernVersions replaces the modern versions Snodo speaks, newest
// first, so that tests can exercise version choice among several; it
// returns a function that restores them.
func SetModernVersions(vs []string) (restore func()) {
	old := modernVersions
	modernVersions = vs
	return func() { modernVersions = old }
}

// SetPollTimer replaces the timer that spaces a task's polls: f receives
// each wait's duration and returns the channel that ends it (nil: only a
// notification or the context ends it). It returns a function that
// restores the real timer.
func SetPollTimer(f func(d time.Duration) <-chan time.Time) (restore func()) {
	old := pollTimer
	pollTimer = func(d time.Duration) (<-chan time.Time, func()) { return f(d), func() {} }
	return func() { pollTimer = old }
}

// SetCacheClock makes c's result cache read the time from now.
func SetCacheClock(c *Client, now func() time.Time) {
	if c.cache != nil {
		c.cache.now = now
	}
}

// CacheLen returns the number of results c's cache holds.
func CacheLen(c *Client) int {
	if c.cache == nil {
		return 0
	}
	return c.cache.len()
}

// SetMaxClientTaskBytes replaces the bound on the bytes of the client's
// task results, and returns a function that restores it.
func SetMaxClientTaskBytes(n int) (restore func()) {
	old := maxClientTaskBytes
	maxClientTaskBytes = n
	return func() { maxClientTaskBytes = old }
}
