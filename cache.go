package snodo

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/snodo/snodo/jsonrpc"
)

// The result cache (2026-07-28 server/utilities/caching.mdx).
//
// It is on by default: a 2026-07-28 server must put ttlMs on the results
// of tools/list, prompts/list, resources/list, resources/templates/list
// and resources/read, and the specification says a client SHOULD consider
// a result fresh for that long; a result without ttlMs, or with 0, is
// stale at once and never kept. What is kept:
//
//   - per method and cursor (lists) or uri (resources/read): a request
//     whose parameters differ is never answered from another's result;
//   - only results of the first round: a result reached through input
//     rounds (inputResponses, requestState) is never kept;
//   - per Client: a Client is one connection with one authorization
//     context, so a "private" result (reusable within one authorization
//     context) and a "public" one are both kept, and neither is seen by
//     another Client. A result without cacheScope is taken as private; one
//     with any other value is not kept;
//   - within limits: at most Options.ResultCacheMaxEntries entries and bytes of
//     result (defaults 512 and 8 MiB), least recently used dropped first;
//     a result larger than the byte limit is not kept.
//
// Every list-changed and resources/updated notification the client sees —
// a legacy notification, or an event of any subscription (Listen) in
// either era — drops the matching entries at once (resources/updated: the
// uri and the resources under it), and a result whose request was in
// flight when such a notification arrived is not kept. An error for a
// cursor drops every cached page of that list. The legacy versions have no
// caching hints: nothing is cached there.

type cacheConfig struct {
	off        bool
	maxEntries int
	maxBytes   int64
}

var defaultCacheConfig = cacheConfig{maxEntries: 512, maxBytes: 8 << 20}

// WithoutCache makes the call ask the server even when the result cache
// holds a fresh result; the new result replaces the cached one.
func WithoutCache() CallOption { return func(c *callConfig) { c.noCache = true } }

// entryOverhead is what an entry is counted for beyond its bytes.
const entryOverhead = 128

type cacheKey struct{ method, arg string }

type cacheEntry struct {
	key      cacheKey
	raw      []byte
	received time.Time
	expires  time.Time
}

// resultCache is the client's result cache; safe for concurrent use.
type resultCache struct {
	cfg cacheConfig
	now func() time.Time

	mu      sync.Mutex
	entries map[cacheKey]*list.Element // of *cacheEntry
	lru     list.List                  // front: most recently used
	bytes   int64
	gen     uint64 // counts invalidations
}

func newResultCache(cfg cacheConfig) *resultCache {
	if cfg.off {
		return nil
	}
	return &resultCache{cfg: cfg, now: time.Now, entries: map[cacheKey]*list.Element{}}
}

func (e *cacheEntry) size() int64 {
	return int64(len(e.raw)+len(e.key.method)+len(e.key.arg)) + entryOverhead
}

// get returns a fresh entry's result and when it was received.
func (rc *resultCache) get(k cacheKey, now time.Time) ([]byte, time.Time, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	el, ok := rc.entries[k]
	if !ok {
		return nil, time.Time{}, false
	}
	e := el.Value.(*cacheEntry)
	if !now.Before(e.expires) {
		rc.removeLocked(el)
		return nil, time.Time{}, false
	}
	rc.lru.MoveToFront(el)
	return e.raw, e.received, true
}

// generation returns the invalidation count, to be given to put.
func (rc *resultCache) generation() uint64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.gen
}

// put keeps raw (copied) for ttl from received, unless an invalidation
// came after gen was read or the entry does not fit.
func (rc *resultCache) put(k cacheKey, raw []byte, received time.Time, ttl time.Duration, gen uint64) {
	e := &cacheEntry{key: k, raw: append([]byte(nil), raw...), received: received, expires: received.Add(ttl)}
	if e.size() > rc.cfg.maxBytes {
		rc.drop(k)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.gen != gen {
		return
	}
	if old, ok := rc.entries[k]; ok {
		rc.removeLocked(old)
	}
	rc.entries[k] = rc.lru.PushFront(e)
	rc.bytes += e.size()
	for len(rc.entries) > rc.cfg.maxEntries || rc.bytes > rc.cfg.maxBytes {
		rc.removeLocked(rc.lru.Back())
	}
}

func (rc *resultCache) removeLocked(el *list.Element) {
	e := rc.lru.Remove(el).(*cacheEntry)
	delete(rc.entries, e.key)
	rc.bytes -= e.size()
}

// drop removes k's entry, if any: its new result is not to be kept.
func (rc *resultCache) drop(k cacheKey) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if el, ok := rc.entries[k]; ok {
		rc.removeLocked(el)
	}
}

// dropWhere removes the entries f selects, and counts an invalidation.
func (rc *resultCache) dropWhere(f func(cacheKey) bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.gen++
	for k, el := range rc.entries {
		if f(k) {
			rc.removeLocked(el)
		}
	}
}

// len returns the number of entries (for tests).
func (rc *resultCache) len() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.entries)
}

// invalidateCache drops what a notification or event says has changed.
func (c *Client) invalidateCache(method string, params json.RawMessage) {
	rc := c.cache
	if rc == nil {
		return
	}
	switch method {
	case "notifications/tools/list_changed":
		rc.dropWhere(func(k cacheKey) bool { return k.method == "tools/list" })
	case "notifications/prompts/list_changed":
		rc.dropWhere(func(k cacheKey) bool { return k.method == "prompts/list" })
	case "notifications/resources/list_changed":
		rc.dropWhere(func(k cacheKey) bool {
			return k.method == "resources/list" || k.method == "resources/templates/list"
		})
	case "notifications/resources/updated":
		var p struct {
			URI string `json:"uri"`
		}
		if err := unmarshal(params, &p); err != nil {
			// Which resource is unknown: drop them all.
			p.URI = ""
		}
		prefix := strings.TrimSuffix(p.URI, "/") + "/"
		rc.dropWhere(func(k cacheKey) bool {
			return k.method == "resources/read" && (p.URI == "" || k.arg == p.URI || strings.HasPrefix(k.arg, prefix))
		})
	}
}

// cacheHolder is a result type with caching hints (it embeds Cache).
type cacheHolder interface{ cacheHints() *Cache }

func (c *Cache) cacheHints() *Cache { return c }

// maxTTL is the longest ttlMs a time.Duration holds.
const maxTTL = math.MaxInt64 / int64(time.Millisecond)

// cachedCall is callTyped for the cacheable methods: arg is the parameter
// that keys the result (the cursor, or the uri), out a cacheHolder.
func (c *Client) cachedCall(ctx context.Context, method, arg string, v any, out cacheHolder, opts []CallOption) error {
	rc := c.dialect.cache(c)
	if rc == nil {
		return c.callTyped(ctx, method, v, out, opts)
	}
	cc := c.callConfig(opts)
	k := cacheKey{method, arg}
	if !cc.noCache && !c.chain.Intercepts(method, false) && !c.chain.Intercepts(method, true) {
		// An intercepted method is never served from the cache: each
		// call passes the interceptors, which may decide otherwise
		// this time (interceptors.go).
		if raw, received, ok := rc.get(k, rc.now()); ok {
			// unmarshal copies what it decodes (raw members included):
			// the caller's result shares nothing with the cache.
			if err := unmarshal(raw, out); err != nil {
				return badResult(method, err)
			}
			out.cacheHints().Received = received
			return nil
		}
	}
	params, err := marshal(v)
	if err != nil {
		return protocolError(jsonrpc.CodeInvalidParams, err, "invalid params for %s", method)
	}
	gen := rc.generation()
	raw, err := c.call(ctx, method, params, cc)
	if err != nil {
		var e *Error
		if arg != "" && method != "resources/read" && errors.As(err, &e) && e.Kind == jsonrpc.KindServer {
			// The cursor may no longer be valid: every page of the list
			// goes (caching.mdx "Interaction with Pagination").
			rc.dropWhere(func(k cacheKey) bool { return k.method == method })
		}
		return err
	}
	if err := unmarshal(raw, out); err != nil {
		return badResult(method, err)
	}
	h := out.cacheHints()
	h.Received = rc.now()
	if cc.rounds > 0 || h.TTLMs == nil || *h.TTLMs <= 0 || (h.Scope != "" && h.Scope != "public" && h.Scope != "private") {
		rc.drop(k)
		return nil
	}
	ttl := min(*h.TTLMs, maxTTL)
	rc.put(k, raw, h.Received, time.Duration(ttl)*time.Millisecond, gen)
	return nil
}
