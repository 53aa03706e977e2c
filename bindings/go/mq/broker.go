package mq

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"runtime"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Broker is an in-process log of topics. It is safe for concurrent use by any number of
// goroutines. Close it when done: that wakes every blocked call, stops and releases its push
// subscriptions and members, and frees its memory.
type Broker struct {
	core *brokerCore

	regMu   sync.Mutex
	closing bool
	subs    map[*Subscription]struct{}
	members map[*Member]struct{}
}

// brokerCore is what the C broker needs to stay alive: the part a cleanup can free without
// reaching the Broker itself.
type brokerCore struct {
	ptr      C.mqgo_broker // the mq_broker *
	guard    *guard
	shared   *shared
	explicit atomic.Bool // released by Close (not by the garbage collector)
	// Waits are the blocking calls', each holding its thread (async.go): on the Kafka engine,
	// whose *_async calls are MQ_ERR_UNSUPPORTED (and a benchmark's baseline).
	blocking bool
}

// shared is what the library may use until the last handle of a broker is released (the
// broker's memory outlives the broker handle while members remain, mq.h "Lifetimes"): the
// manual clock it reads and the assignors its groups call. The broker's core and every
// member's core refer to it, so no cleanup frees it under a handle that still needs it.
type shared struct {
	clock     *ManualClock
	assignors *assignorList
}

type assignorList struct {
	mu    sync.Mutex
	boxes []assignorBox
}

type assignorBox struct {
	handle cgo.Handle
	box    unsafe.Pointer
}

func newShared() *shared {
	s := &shared{assignors: &assignorList{}}
	runtime.AddCleanup(s, func(l *assignorList) { l.release() }, s.assignors)
	return s
}

// release deletes the assignors' handles; only once nothing can call them.
func (l *assignorList) release() {
	l.mu.Lock()
	boxes := l.boxes
	l.boxes = nil
	l.mu.Unlock()
	for _, a := range boxes {
		deleteHandle(a.handle)
		C.free(a.box)
	}
}

// Option configures a broker (NewBroker).
type Option func(*brokerConfig)

// brokerConfig is what the options set: the C options and the Go objects they refer to.
type brokerConfig struct {
	c     C.mq_broker_options
	core  *brokerCore
	kafka kafkaOptions
}

// WithMaxMessageBytes sets the largest key + payload + headers accepted (default 1 MiB).
func WithMaxMessageBytes(n int) Option {
	return func(o *brokerConfig) { o.c.max_message_bytes = C.size_t(clampSize(n)) }
}

// WithSpin makes polls with nothing to hand out spin for up to d watching for a publish
// before they block: lower latency for a busy CPU, worth it only with cores to spare.
func WithSpin(d time.Duration) Option {
	return func(o *brokerConfig) { o.c.spin_ns = C.int64_t(d) }
}

// WithClock gives the broker a manual clock (for tests): leases, delays and ages follow it
// instead of the system's monotonic clock. Waits (contexts) stay in real time.
func WithClock(c *ManualClock) Option {
	return func(o *brokerConfig) {
		if c == nil {
			return
		}
		o.c.clock = C.mqgo_clock_fn()
		o.c.clock_user = unsafe.Pointer(c.ptr)
		o.core.shared.clock = c
	}
}

// clampSize maps a negative int to one the library refuses instead of a huge size_t.
func clampSize(n int) uint64 {
	if n < 0 {
		return 0
	}
	return uint64(n)
}

// NewBroker creates a broker.
func NewBroker(opts ...Option) (*Broker, error) {
	if versionErr != nil {
		return nil, versionErr
	}
	core := &brokerCore{shared: newShared()}
	o := brokerConfig{core: core}
	C.mq_broker_options_init(&o.c, C.sizeof_mq_broker_options)
	for _, opt := range opts {
		opt(&o)
	}
	freeStrings, err := o.kafka.cStrings(&o.c)
	if err != nil {
		return nil, invalid("new broker", err.Error())
	}
	var ptr *C.mq_broker
	err = direct("new broker", func() C.mq_status { return C.mq_broker_new(&o.c, &ptr) })
	freeStrings()
	if err != nil {
		return nil, err
	}
	core.ptr = C.mqgo_broker(uintptr(unsafe.Pointer(ptr)))
	core.blocking = o.kafka.hasBootstrap
	core.guard = newGuard(core.free)
	b := &Broker{core: core, subs: map[*Subscription]struct{}{}, members: map[*Member]struct{}{}}
	// A broker dropped without Close: nothing can be using it (open subscriptions and members
	// with callbacks keep it reachable). It is freed on a goroutine of its own all the same, so
	// that the cleanup never waits on the library.
	runtime.AddCleanup(b, func(c *brokerCore) { go c.guard.close() }, core)
	return b, nil
}

// free releases the C broker handle; the guard runs it after the last call. After Close the
// broker's members are closed too, so nothing can call an assignor any more; a broker the
// garbage collector found may still have members waiting for their own cleanups, and the
// assignors then go with the last of them.
func (c *brokerCore) free() {
	C.mqgo_broker_free(c.ptr)
	if c.explicit.Load() {
		c.shared.assignors.release()
	}
	runtime.KeepAlive(c.shared)
}

// acquire returns the C broker for one call, or 0 once Close has begun; a non-zero result
// must be followed by release.
func (b *Broker) acquire() C.mqgo_broker {
	if !b.core.guard.acquire() {
		return 0
	}
	return b.core.ptr
}

func (b *Broker) release() { b.core.guard.release() }

// Shutdown closes the broker without releasing it: every waiting publish and poll returns
// ErrClosed at once, push subscriptions stop calling their handlers, and every later call
// returns ErrClosed, except introspection (TopicInfo, PartitionInfo, GroupInfo, Describe,
// Topics, Groups), which keeps working until Close. Idempotent; safe from a handler.
func (b *Broker) Shutdown() error {
	p := b.acquire()
	if p == 0 {
		return nil
	}
	C.mqgo_broker_close(p)
	b.release()
	return nil
}

// Close shuts the broker down (see Shutdown), closes its push subscriptions (waiting for
// running handlers, except the one Close is called from) and members, and frees the broker
// once the calls it woke have returned. Idempotent: later calls return nil. Safe from a
// handler: the handler's own subscription is then released when the handler returns.
func (b *Broker) Close() error {
	p := b.acquire()
	if p == 0 {
		return nil
	}
	C.mqgo_broker_close(p)

	b.regMu.Lock()
	b.closing = true
	subs := make([]*Subscription, 0, len(b.subs))
	for s := range b.subs {
		subs = append(subs, s)
	}
	members := make([]*Member, 0, len(b.members))
	for m := range b.members {
		members = append(members, m)
	}
	b.regMu.Unlock()

	// Subscriptions and members go before the broker: until the library frees them in any
	// order, freeing the broker would free them under their Go objects.
	var laterSubs []*Subscription
	var laterMembers []*Member
	for _, s := range subs {
		if s.inOwnHandler() {
			laterSubs = append(laterSubs, s)
			continue
		}
		s.close()
	}
	for _, m := range members {
		if m.inOwnCallback() {
			laterMembers = append(laterMembers, m)
			continue
		}
		m.close()
	}
	if len(laterSubs)+len(laterMembers) > 0 {
		// Called from their own handler or callback: they can only be closed once it
		// returns. Hold a call on the broker so it is freed after them.
		b.core.guard.hold()
		go func() {
			for _, s := range laterSubs {
				s.close()
			}
			for _, m := range laterMembers {
				m.close()
			}
			b.release()
		}()
	}
	b.core.explicit.Store(true)
	b.core.guard.close()
	b.release()
	return nil
}

func (b *Broker) register(s *Subscription, m *Member) bool {
	b.regMu.Lock()
	defer b.regMu.Unlock()
	if b.closing {
		return false
	}
	if s != nil {
		b.subs[s] = struct{}{}
	}
	if m != nil {
		b.members[m] = struct{}{}
	}
	return true
}

func (b *Broker) unregister(s *Subscription, m *Member) {
	b.regMu.Lock()
	defer b.regMu.Unlock()
	delete(b.subs, s)
	delete(b.members, m)
}

// ManualClock is a clock for tests that moves only when told to. The library reads it with
// partition locks held, so it is an atomic in C memory: reading it never enters Go.
type ManualClock struct {
	ptr *int64 // C memory
}

// NewManualClock returns a clock reading start nanoseconds.
func NewManualClock(start int64) *ManualClock {
	ptr := (*int64)(C.malloc(8))
	if ptr == nil {
		panic("mq: out of memory for a manual clock")
	}
	atomic.StoreInt64(ptr, start)
	c := &ManualClock{ptr: ptr}
	runtime.AddCleanup(c, func(p *int64) { C.free(unsafe.Pointer(p)) }, ptr)
	return c
}

// Now is the clock's reading in nanoseconds.
func (c *ManualClock) Now() int64 {
	defer runtime.KeepAlive(c)
	return atomic.LoadInt64(c.ptr)
}

// Set sets the clock to ns.
func (c *ManualClock) Set(ns int64) {
	defer runtime.KeepAlive(c)
	atomic.StoreInt64(c.ptr, ns)
}

// Advance moves the clock forward by d and returns the new reading.
func (c *ManualClock) Advance(d time.Duration) int64 {
	defer runtime.KeepAlive(c)
	return atomic.AddInt64(c.ptr, int64(d))
}
