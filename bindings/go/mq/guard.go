package mq

import (
	"sync"
	"sync/atomic"
)

// guard counts the calls that are using a C handle, so that the handle is released only after
// the last of them has returned, whichever goroutine closes it and whenever. Nobody blocks on
// it: a call that arrives after close is refused, and the last call out runs the release.
type guard struct {
	state   atomic.Int64 // 2 per call in flight; bit 0 set once closed
	once    sync.Once
	drained chan struct{} // closed when closed and no call is in flight
	onDrain func()        // runs once then, on the goroutine that got there last
}

func newGuard(onDrain func()) *guard {
	return &guard{drained: make(chan struct{}), onDrain: onDrain}
}

// acquire registers a call; false once the guard is closed.
func (g *guard) acquire() bool {
	if g.state.Add(2)&1 != 0 {
		g.release()
		return false
	}
	return true
}

// hold registers one more call for a caller that already holds one (so it cannot be refused).
func (g *guard) hold() { g.state.Add(2) }

func (g *guard) release() {
	if g.state.Add(-2) == 1 {
		g.drain()
	}
}

// close refuses later calls; true for the first close. Calls in flight finish normally.
func (g *guard) close() bool {
	for {
		v := g.state.Load()
		if v&1 != 0 {
			return false
		}
		if g.state.CompareAndSwap(v, v|1) {
			if v == 0 {
				g.drain()
			}
			return true
		}
	}
}

func (g *guard) closed() bool { return g.state.Load()&1 != 0 }

func (g *guard) drain() {
	g.once.Do(func() {
		if g.onDrain != nil {
			g.onDrain()
		}
		close(g.drained)
	})
}
