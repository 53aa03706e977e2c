package mq

// #include "shim.h"
import "C"

import (
	"fmt"
	"log"
	"runtime/cgo"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// SubscribeOption configures a push subscription (SubscribeFunc).
type SubscribeOption func(*subscribeOptions) error

type subscribeOptions struct {
	prefetch      int32
	hasPrefetch   bool
	partitions    []C.int32_t
	hasPartitions bool
	session       int64
	hasSession    bool
	onError       func(*Message, error)
	onRelease     func()
}

// Prefetch sets how many messages a loop polls at a time (default 10).
func Prefetch(n int) SubscribeOption {
	return func(o *subscribeOptions) error {
		o.prefetch, o.hasPrefetch = clamp32(int64(n)), true
		return nil
	}
}

// OnPartitions makes the subscription claim exactly these partitions (instead of being a
// member of the group that owns what the group assigns it). ErrOwned if another live
// subscription of the group holds one of them.
func OnPartitions(partitions ...int) SubscribeOption {
	return func(o *subscribeOptions) error {
		o.partitions = make([]C.int32_t, len(partitions))
		for i, p := range partitions {
			c, err := partition32("subscribe func", p)
			if err != nil {
				return err
			}
			o.partitions[i] = c
		}
		o.hasPartitions = true
		return nil
	}
}

// SubscriptionSessionTimeout sets the session timeout of the group member a subscription
// without OnPartitions is (mq 1.3; default 10 s; 1 ms to 2^40 ms, rounded up to whole
// milliseconds, else ErrInvalid). On Kafka it is the consumer's session.timeout.ms: how long
// the partitions of a process that died stay with it before the group moves them to its other
// members (plan for the timeout plus about 3 s). In-process the subscription's membership
// lives exactly as long as the subscription, so the value is only checked. SessionTimeout is
// the same for a Member.
func SubscriptionSessionTimeout(d time.Duration) SubscribeOption {
	return func(o *subscribeOptions) error {
		o.session, o.hasSession = durationMs(d), true
		return nil
	}
}

// OnError receives every failure of the handler: the error it returned, or a *PanicError
// when it panicked. The message has been nacked either way. Without OnError, failures are
// logged with the standard log package. f runs on the handler's goroutine.
func OnError(f func(msg *Message, err error)) SubscribeOption {
	return func(o *subscribeOptions) error {
		o.onError = f
		return nil
	}
}

// OnRelease sets a function called exactly once when the library releases the handler: after
// the handler can no longer run (from Close, or Broker.Close), or before SubscribeFunc returns
// when it fails. A panic in it is recovered and logged.
func OnRelease(f func()) SubscribeOption {
	return func(o *subscribeOptions) error {
		o.onRelease = f
		return nil
	}
}

// Subscription is a push subscription: the library polls, calls the handler for each message
// in partition order and acks it; a handler error or panic nacks it (the message and the rest
// of its batch come again). Close it when done.
type Subscription struct {
	b            *Broker
	topic, group string
	handler      func(*Message) error
	onError      func(*Message, error)
	onRelease    func()
	box          unsafe.Pointer // the user data the library passes back: a box holding our handle

	mu    sync.Mutex // held while opening, so Close waits for a subscription being opened
	state subState
	ptr   *C.mq_subscription
	done  chan struct{} // closed when the C subscription has been released
}

type subState int

const (
	subOpening subState = iota
	subOpen
	subClosing
	subClosed
)

// SubscribeFunc starts a push subscription of group on topic: for each partition it owns, a
// library thread polls messages, calls handler for each in order and acks it when handler
// returns nil. Handlers of different partitions run concurrently, on threads of the library
// (each call on a goroutine locked to one of them).
//
// An error from handler, or a panic (recovered: it never crosses into the library), nacks
// the message: it and the rest of its batch are delivered again, at once or after the delay
// set with SetHandlerNackDelay. The failure goes to the OnError option (else to the log).
//
// Without OnPartitions the subscription is a member of the group: it owns what the group
// assigns it, and its loops start and stop as members come and go. The group is subscribed
// (at the end of the log) if it is not yet.
func (b *Broker) SubscribeFunc(topic, group string, handler func(*Message) error, opts ...SubscribeOption) (*Subscription, error) {
	const op = "subscribe func"
	if handler == nil {
		return nil, invalid(op, "handler is nil")
	}
	var o subscribeOptions
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	s := &Subscription{b: b, topic: topic, group: group, handler: handler, onError: o.onError,
		onRelease: o.onRelease, done: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !b.register(s, nil) {
		s.state = subClosed
		close(s.done)
		return nil, closedError(op)
	}
	p := b.acquire()
	if p == 0 {
		s.failOpen()
		return nil, closedError(op)
	}
	defer b.release()
	h := newHandle(s)
	s.box = newBox(h)
	if s.box == nil {
		deleteHandle(h)
		s.failOpen()
		return nil, &Error{Op: op, Status: StatusNoMemory, Message: "out of memory for the handler's user data"}
	}
	var parts *C.int32_t
	if len(o.partitions) > 0 {
		parts = &o.partitions[0]
	}
	var out *C.mq_subscription
	t, tl := cstr(topic)
	g, gl := cstr(group)
	// On failure the library has already released the box (user_free) and so the handle.
	r := C.mqgo_subscription_open(p, t, tl, g, gl, C.int32_t(o.prefetch), cbool(o.hasPrefetch),
		parts, C.size_t(len(o.partitions)), cbool(o.hasPartitions),
		C.int64_t(o.session), cbool(o.hasSession), s.box, &out)
	if err := check(op, r); err != nil {
		s.box = nil
		s.failOpen()
		return nil, err
	}
	s.ptr = out
	s.state = subOpen
	return s, nil
}

// failOpen retires a subscription that never opened (s.mu held).
func (s *Subscription) failOpen() {
	s.state = subClosed
	close(s.done)
	s.b.unregister(s, nil)
}

// Topic and Group name what the subscription consumes.
func (s *Subscription) Topic() string { return s.topic }
func (s *Subscription) Group() string { return s.group }

// Close stops the subscription's loops, waits until no handler of it is running, and releases
// its partitions. Messages a handler had not finished are delivered again. Idempotent. From
// the subscription's own handler it returns ErrDeadlock and does nothing (return from the
// handler first, or close it from another goroutine).
func (s *Subscription) Close() error {
	if s.inOwnHandler() {
		// The handler is running, so the subscription is open or being closed by someone
		// waiting for this very handler: its handle is valid. The library refuses.
		s.mu.Lock()
		p := s.ptr
		s.mu.Unlock()
		return direct("subscription close", func() C.mq_status { return C.mq_subscription_close(p) })
	}
	return s.close()
}

// inOwnHandler reports whether the calling goroutine is running one of s's handlers (a
// handler's goroutine stays on its library thread, whose shim remembers the box).
func (s *Subscription) inOwnHandler() bool {
	return s.box != nil && C.mqgo_current_handler_box() == s.box
}

func (s *Subscription) close() error {
	s.mu.Lock()
	switch s.state {
	case subClosed:
		s.mu.Unlock()
		return nil
	case subClosing:
		done := s.done
		s.mu.Unlock()
		<-done
		return nil
	}
	s.state = subClosing
	p := s.ptr
	s.mu.Unlock()
	err := direct("subscription close", func() C.mq_status { return C.mq_subscription_close(p) })
	s.mu.Lock()
	s.state = subClosed
	s.ptr = nil
	close(s.done)
	s.mu.Unlock()
	s.b.unregister(s, nil)
	return err
}

// liveHandles counts the cgo handles of handlers, assignors and callbacks not yet deleted
// (tests check that each is released exactly once).
var liveHandles atomic.Int64

func newHandle(v any) cgo.Handle {
	liveHandles.Add(1)
	return cgo.NewHandle(v)
}

func deleteHandle(h cgo.Handle) {
	h.Delete()
	liveHandles.Add(-1)
}

//export mqgoHandle
func mqgoHandle(h C.uintptr_t, m *C.mq_message) C.int {
	return cgo.Handle(h).Value().(*Subscription).deliver(m)
}

//export mqgoRelease
func mqgoRelease(h C.uintptr_t) {
	s := cgo.Handle(h).Value().(*Subscription)
	cgo.Handle(h).Delete()
	liveHandles.Add(-1)
	if s.onRelease != nil {
		defer func() {
			if v := recover(); v != nil {
				log.Printf("mq: OnRelease of the subscription of group %s on %s panicked: %v", s.group, s.topic, v)
			}
		}()
		s.onRelease()
	}
}

// deliver runs the handler on a copy of the view: 0 acks, 1 nacks. No panic leaves it.
func (s *Subscription) deliver(view *C.mq_message) (rc C.int) {
	msg := copyView(view)
	defer func() {
		if v := recover(); v != nil {
			rc = 1
			s.report(msg, &PanicError{Value: v, Stack: debug.Stack()})
		}
	}()
	if err := s.handler(msg); err != nil {
		s.report(msg, err)
		return 1
	}
	return 0
}

func (s *Subscription) report(msg *Message, err error) {
	defer func() {
		if v := recover(); v != nil {
			log.Printf("mq: OnError of the subscription of group %s on %s panicked: %v", s.group, s.topic, v)
		}
	}()
	if s.onError != nil {
		s.onError(msg, err)
		return
	}
	log.Printf("mq: handler of group %s on %s failed on partition %d offset %d (nacked): %v",
		s.group, s.topic, msg.Partition, msg.Offset, err)
}

// ExtendHandlerLease restarts the lease of the messages the calling handler's loop holds, for
// work that outlives the ack timeout. Call it from a SubscribeFunc handler, on its goroutine;
// elsewhere it returns ErrInvalid.
func ExtendHandlerLease() error {
	return direct("extend handler lease", func() C.mq_status { return C.mq_handler_extend_lease() })
}

// SetHandlerNackDelay delays the nack that follows if the calling handler then fails (returns
// an error or panics): the message comes back no sooner than delay on the broker clock.
// Applies to the current handler call only; call it from the handler, on its goroutine.
func SetHandlerNackDelay(delay time.Duration) error {
	return direct("set handler nack delay", func() C.mq_status { return C.mq_handler_set_nack_delay(C.int64_t(durationMs(delay))) })
}

func (s *Subscription) String() string {
	return fmt.Sprintf("mq.Subscription(%s/%s)", s.topic, s.group)
}
