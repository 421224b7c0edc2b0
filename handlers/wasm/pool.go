package wasm

import (
	"context"
	"errors"
	"sync"
	"time"
)

// pool holds a module's instances: at most cap(slots) alive, each running
// one call at a time. An instance is created when a call finds none idle,
// returned after a call that went well, and closed after one that failed.
type pool struct {
	m     *Module
	slots chan struct{} // one token per call in progress

	mu        sync.Mutex
	idle      []*instance
	closed    bool
	alive     int
	peak      int
	created   int64
	discarded int64
	evicted   int64
}

var errClosed = errors.New("module is closed")

func (p *pool) init(m *Module, max int) {
	p.m = m
	p.slots = make(chan struct{}, max)
}

// get takes a call slot, waiting for one while ctx allows, and returns an
// idle instance or a new one.
func (p *pool) get(ctx context.Context) (*instance, error) {
	select {
	case p.slots <- struct{}{}:
	default:
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			<-p.slots
			return nil, errClosed
		}
		if n := len(p.idle); n > 0 {
			inst := p.idle[n-1]
			p.idle[n-1] = nil
			p.idle = p.idle[:n-1]
			p.mu.Unlock()
			return inst, nil
		}
		p.mu.Unlock()
		// A new instance needs its memory limit from the host's budget; an
		// instance of this module that goes idle meanwhile is taken instead.
		ok, err := p.m.host.reserve(ctx, p.m, p.hasIdle)
		if err != nil {
			<-p.slots
			return nil, err
		}
		if ok {
			break
		}
	}
	p.mu.Lock()
	p.alive++
	p.peak = max(p.peak, p.alive)
	p.mu.Unlock()

	inst, err := p.m.newInstance(ctx)
	p.mu.Lock()
	if err != nil {
		p.alive--
		p.discarded++
	} else {
		p.created++
	}
	p.mu.Unlock()
	if err != nil {
		<-p.slots
		return nil, err
	}
	return inst, nil
}

// put gives back the slot of a call; the instance goes back to the idle
// list if the call went well, and is closed otherwise.
func (p *pool) put(inst *instance, healthy bool) {
	p.mu.Lock()
	keep := healthy && !p.closed
	if keep {
		p.idle = append(p.idle, inst)
	} else {
		p.alive--
		p.discarded++
	}
	p.mu.Unlock()
	if !keep {
		// Before the slot is given back: drain waits for the instance to
		// be closed too.
		inst.close(context.Background())
		<-p.slots
	} else {
		<-p.slots
		// A call waiting for memory may take this instance, or close it
		// to make room for one of another module.
		p.m.host.budget.notify()
	}
}

func (p *pool) hasIdle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle) > 0
}

// takeIdle removes an idle instance, if there is one, for the host to
// close: its memory is wanted by another instance.
func (p *pool) takeIdle() *instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	inst := p.idle[0]
	p.idle = p.idle[1:]
	p.alive--
	p.evicted++
	return inst
}

// adopt adds an instance made outside get (the one Load makes).
func (p *pool) adopt(inst *instance) {
	p.mu.Lock()
	p.alive++
	p.peak = max(p.peak, p.alive)
	p.created++
	p.idle = append(p.idle, inst)
	p.mu.Unlock()
}

func (p *pool) close(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.alive -= len(idle)
	p.mu.Unlock()
	for _, inst := range idle {
		inst.close(ctx)
	}
}

// drain waits, once the pool is closed, until no call holds a slot — the
// calls in flight have ended and their instances are closed — and says
// whether they did; it gives up when ctx ends or limit passes. A call that
// starts meanwhile finds the pool closed.
func (p *pool) drain(ctx context.Context, limit time.Duration) bool {
	t := time.NewTimer(limit)
	defer t.Stop()
	held := 0
	defer func() {
		for ; held > 0; held-- {
			<-p.slots
		}
	}()
	for held < cap(p.slots) {
		select {
		case p.slots <- struct{}{}:
			held++
		case <-ctx.Done():
			return false
		case <-t.C:
			return false
		}
	}
	return true
}

func (p *pool) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// PoolStats describes a module's instances.
type PoolStats struct {
	// Alive is the number of instances alive now, idle or busy.
	Alive int
	// Idle is the number waiting for a call.
	Idle int
	// Peak is the most instances ever alive at once.
	Peak int
	// Created counts the instances made; Discarded those closed after a
	// failure (or whose creation failed); Evicted the idle ones closed to
	// free memory for another instance (HostConfig.MaxTotalMemory).
	Created, Discarded, Evicted int64
}

// Stats returns the state of the module's instance pool.
func (m *Module) Stats() PoolStats {
	p := &m.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{Alive: p.alive, Idle: len(p.idle), Peak: p.peak, Created: p.created, Discarded: p.discarded, Evicted: p.evicted}
}
