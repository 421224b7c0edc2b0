package policy

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snodo/snodo/internal/gateway"
	"github.com/snodo/snodo/jsonrpc"
)

// admitNow runs Admit and fails the test if it does not return: a refusal
// must come at once, and the test's clock never moves by itself, so an
// Admit that waited for a token would wait for good.
func admitNow(t *testing.T, p *Policy, id *gateway.Identity, server string) (func(), error) {
	t.Helper()
	type res struct {
		release func()
		err     error
	}
	ch := make(chan res, 1)
	go func() {
		rel, err := p.Admit(context.Background(), id, server)
		ch <- res{rel, err}
	}()
	select {
	case r := <-ch:
		return r.release, r.err
	case <-time.After(time.Minute): // bounds the wait only
		t.Fatal("Admit waits instead of refusing")
		return nil, nil
	}
}

// wantLimited checks a -32029 refusal holding msg, and returns its
// retryAfterMs (0 if the data has none).
func wantLimited(t *testing.T, err error, msg string) int64 {
	t.Helper()
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != gateway.CodeRateLimited || !strings.Contains(je.Message, msg) {
		t.Fatalf("Admit: %v; want a -32029 *jsonrpc.Error holding %q", err, msg)
	}
	var data struct {
		RetryAfterMs int64 `json:"retryAfterMs"`
	}
	if len(je.Data) > 0 {
		if err := json.Unmarshal(je.Data, &data); err != nil {
			t.Fatalf("data %s: %v", je.Data, err)
		}
	}
	return data.RetryAfterMs
}

func TestAdmitRateLimit(t *testing.T) {
	rec := &recorder{}
	p, c := newPolicy(t, `{
	  "identities": {
	    "alice": {"rateLimit": {"perSecond": 2, "burst": 3}},
	    "bob":   {}
	  },
	  "limits": {"servers": {"fs": {"rateLimit": {"perSecond": 0.5, "burst": 2}}}}}`, Options{Auditor: rec})
	alice, bob := &gateway.Identity{Name: "alice"}, &gateway.Identity{Name: "bob"}

	// alice's burst of 3 on a server without limits, then refused.
	for i := range 3 {
		rel, err := admitNow(t, p, alice, "db")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		rel()
	}
	ms := wantLimited(t, func() error { _, err := admitNow(t, p, alice, "db"); return err }(), `identity "alice" is over 2 requests per second (burst 3)`)
	if ms != 500 {
		t.Errorf("retryAfterMs = %d, want 500 (one token at 2 a second)", ms)
	}
	// Refusals take no token: 250 ms on, 250 ms to wait; then admitted.
	c.advance(250 * time.Millisecond)
	if ms := wantLimited(t, func() error { _, err := admitNow(t, p, alice, "db"); return err }(), "alice"); ms != 250 {
		t.Errorf("retryAfterMs = %d after 250 ms, want 250", ms)
	}
	c.advance(250 * time.Millisecond)
	if rel, err := admitNow(t, p, alice, "db"); err != nil {
		t.Fatalf("after retryAfterMs: %v", err)
	} else {
		rel()
	}

	// The server's limit is everyone's: bob's two use the burst of fs.
	for range 2 {
		rel, err := admitNow(t, p, bob, "fs")
		if err != nil {
			t.Fatal(err)
		}
		rel()
	}
	if ms := wantLimited(t, func() error { _, err := admitNow(t, p, bob, "fs"); return err }(), `server "fs" is over 0.5 requests per second (burst 2)`); ms != 2000 {
		t.Errorf("retryAfterMs = %d, want 2000", ms)
	}
	// The anonymous host (nil identity) is under the server's limits too.
	wantLimited(t, func() error { _, err := admitNow(t, p, nil, "fs"); return err }(), `server "fs"`)

	// A refusal by the server's limit gives back the identity's token:
	// alice, refused three times on fs, still has her burst of 3 for db.
	c.advance(10 * time.Second) // refills alice (3) and fs (2)
	for range 2 {
		rel, err := admitNow(t, p, bob, "fs")
		if err != nil {
			t.Fatal(err)
		}
		rel()
	}
	for range 3 {
		wantLimited(t, func() error { _, err := admitNow(t, p, alice, "fs"); return err }(), `server "fs"`)
	}
	for i := range 3 {
		rel, err := admitNow(t, p, alice, "db")
		if err != nil {
			t.Fatalf("alice's token %d was taken by a refused request: %v", i, err)
		}
		rel()
	}

	// Every refusal is audited.
	var limited int
	for _, r := range rec.all() {
		if r.Direction != "policy" || r.Decision != "rate-limited" || r.ErrorCode != gateway.CodeRateLimited || r.Reason == "" {
			t.Errorf("audit record %+v", r)
		}
		limited++
	}
	if limited != 7 {
		t.Errorf("%d refusals audited, want 7", limited)
	}
}

func TestAdmitConcurrency(t *testing.T) {
	rec := &recorder{}
	p, _ := newPolicy(t, `{
	  "identities": {"alice": {"maxConcurrent": 2}, "bob": {}},
	  "limits": {"servers": {"fs": {"maxConcurrent": 3}}}}`, Options{Auditor: rec})
	alice, bob := &gateway.Identity{Name: "alice"}, &gateway.Identity{Name: "bob"}

	r1, err := admitNow(t, p, alice, "db")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := admitNow(t, p, alice, "fs")
	if err != nil {
		t.Fatal(err)
	}
	_, err = admitNow(t, p, alice, "db")
	wantLimited(t, err, `identity "alice": at most 2 requests at once`)

	// Release twice is harmless: it frees one slot, not two.
	r1()
	r1()
	r3, err := admitNow(t, p, alice, "db")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	_, err = admitNow(t, p, alice, "db")
	wantLimited(t, err, `identity "alice": at most 2 requests at once`)

	// fs holds alice's r2; bob takes the two other slots of fs.
	b1, err := admitNow(t, p, bob, "fs")
	if err != nil {
		t.Fatal(err)
	}
	b2, err := admitNow(t, p, bob, "fs")
	if err != nil {
		t.Fatal(err)
	}
	_, err = admitNow(t, p, bob, "fs")
	wantLimited(t, err, `server "fs": at most 3 requests at once`)
	// A refusal by the server's cap holds no slot of the identity's.
	r3()
	_, err = admitNow(t, p, alice, "fs")
	wantLimited(t, err, `server "fs"`)
	if rel, err := admitNow(t, p, alice, "db"); err != nil {
		t.Fatalf("alice's slot was kept by a refused request: %v", err)
	} else {
		rel()
	}
	for _, rel := range []func(){r2, b1, b2} {
		rel()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for n, s := range p.subjects {
		if s.inFlight != 0 {
			t.Errorf("identity %s: %d in flight after every release", n, s.inFlight)
		}
	}
	for n, s := range p.servers {
		if s.inFlight != 0 {
			t.Errorf("server %s: %d in flight after every release", n, s.inFlight)
		}
	}
	if n := len(rec.all()); n != 4 {
		t.Errorf("%d refusals audited, want 4", n)
	}
}

func TestAdmitCancelled(t *testing.T) {
	p, _ := newPolicy(t, `{}`, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Admit(ctx, nil, "fs"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Admit with an ended context: %v", err)
	}
}

func TestAdmitSubjectsBounded(t *testing.T) {
	// JWT subjects under defaultPolicy get limit states of their own, made
	// as they come; idle ones are dropped to keep them bounded.
	is := newIssuer(t)
	p, c := jwtPolicy(t, is, `, "defaultPolicy": {"rateLimit": {"perSecond": 1, "burst": 1}, "maxConcurrent": 1}`, Options{})
	held, err := p.Admit(context.Background(), &gateway.Identity{Name: "busy"}, "fs")
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxSubjectStates + 10 {
		rel, err := p.Admit(context.Background(), &gateway.Identity{Name: "s" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + time.Duration(i).String()}, "fs")
		if err != nil {
			t.Fatalf("subject %d: %v", i, err)
		}
		rel()
		c.advance(time.Second) // refills the subject: idle from now on
	}
	p.mu.Lock()
	n := len(p.subjects)
	_, busy := p.subjects["busy"]
	p.mu.Unlock()
	if n > maxSubjectStates+len(p.identities) || !busy {
		t.Errorf("%d limit states (busy kept: %v), want at most %d with busy kept", n, busy, maxSubjectStates+len(p.identities))
	}
	// busy's state survived: its one slot is still taken.
	_, err = p.Admit(context.Background(), &gateway.Identity{Name: "busy"}, "fs")
	wantLimited(t, err, `identity "busy": at most 1 requests at once`)
	held()
}

func TestAdmitStress(t *testing.T) {
	// Many goroutines admitting and releasing (some twice): the caps are
	// never exceeded and every slot comes back.
	p, _ := newPolicy(t, `{
	  "identities": {"a": {"maxConcurrent": 3, "rateLimit": {"perSecond": 1e9, "burst": 1000000}}, "b": {"maxConcurrent": 5}},
	  "limits": {"servers": {"fs": {"maxConcurrent": 4, "rateLimit": {"perSecond": 1e9, "burst": 1000000}}, "db": {"maxConcurrent": 2}}}}`, Options{})
	p.now = time.Now
	ids := []*gateway.Identity{{Name: "a"}, {Name: "b"}, nil}
	servers := []string{"fs", "db", "web"}
	var inA, inFS, inDB atomic.Int32
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				id, srv := ids[(g+i)%len(ids)], servers[(g*7+i)%len(servers)]
				rel, err := p.Admit(context.Background(), id, srv)
				if err != nil {
					var je *jsonrpc.Error
					if !errors.As(err, &je) || je.Code != gateway.CodeRateLimited {
						t.Errorf("Admit: %v", err)
						return
					}
					refused.Add(1)
					continue
				}
				admitted.Add(1)
				counters := []*atomic.Int32{}
				if id != nil && id.Name == "a" {
					counters = append(counters, &inA)
				}
				switch srv {
				case "fs":
					counters = append(counters, &inFS)
				case "db":
					counters = append(counters, &inDB)
				}
				for _, c := range counters {
					c.Add(1)
				}
				if inA.Load() > 3 || inFS.Load() > 4 || inDB.Load() > 2 {
					t.Errorf("over a cap: a %d, fs %d, db %d", inA.Load(), inFS.Load(), inDB.Load())
				}
				runtime.Gosched()
				for _, c := range counters {
					c.Add(-1)
				}
				rel()
				if i%3 == 0 {
					rel()
				}
			}
		}()
	}
	wg.Wait()
	if admitted.Load() == 0 {
		t.Fatal("nothing admitted")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range []map[string]*limitState{p.subjects, p.servers} {
		for n, s := range m {
			if s.inFlight != 0 {
				t.Errorf("%s: %d in flight after every release", n, s.inFlight)
			}
		}
	}
	t.Logf("%d admitted, %d refused", admitted.Load(), refused.Load())
}
