package snodo

import (
	"context"
	"time"
)

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

// ListTools, ListPrompts, ListResources, ListResourceTemplates and
// ListTasks return one page of the list at cursor, for the tests of the
// pages and of the result cache keyed by cursor.
func ListTools(c *Client, ctx context.Context, cursor string, opts ...CallOption) (*toolsPage, error) {
	return c.listTools(ctx, cursor, opts...)
}

func ListPrompts(c *Client, ctx context.Context, cursor string, opts ...CallOption) (*promptsPage, error) {
	return c.listPrompts(ctx, cursor, opts...)
}

func ListResources(c *Client, ctx context.Context, cursor string, opts ...CallOption) (*resourcesPage, error) {
	return c.listResources(ctx, cursor, opts...)
}

func ListResourceTemplates(c *Client, ctx context.Context, cursor string, opts ...CallOption) (*templatesPage, error) {
	return c.listResourceTemplates(ctx, cursor, opts...)
}

func ListTasks(c *Client, ctx context.Context, cursor string, opts ...CallOption) (*tasksPage, error) {
	return c.listTasks(ctx, cursor, opts...)
}

// KeepaliveTimeout gives o's keepalive its own wait for a ping's answer,
// so that tests of a server that answers do not depend on how fast a busy
// machine runs it.
func KeepaliveTimeout(o *Options, timeout time.Duration) {
	o.keepaliveTimeout = timeout
}

// SetMaxClientTaskBytes replaces the bound on the bytes of the client's
// task results, and returns a function that restores it.
func SetMaxClientTaskBytes(n int) (restore func()) {
	old := maxClientTaskBytes
	maxClientTaskBytes = n
	return func() { maxClientTaskBytes = old }
}
