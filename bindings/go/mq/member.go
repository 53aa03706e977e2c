package mq

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"context"
	"log"
	"runtime"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Assignor divides a group's partitions among its members: for each partition p it sets
// owners[p] to an index into memberIDs (listed in join order). A partition left at -1, or set
// out of range, stays unowned until the next rebalance. It runs with the group's membership
// lock held, on whichever goroutine or library thread caused the rebalance: it must be fast and
// pure, and must not call into mq. A panic is recovered (every partition is then unowned) and
// logged. The group keeps the assignor of its first member.
type Assignor func(memberIDs []string, owners []int)

// MemberOption configures a member (Join).
type MemberOption func(*memberOptions) error

type memberOptions struct {
	id          string
	hasID       bool
	session     int64
	hasSession  bool
	assignor    Assignor
	onRebalance func(*Member, int64)
}

// MemberID sets the member's id (default: generated "<group>-<n>").
func MemberID(id string) MemberOption {
	return func(o *memberOptions) error {
		o.id, o.hasID = id, true
		return nil
	}
}

// SessionTimeout sets how long the member may go without a call before the group removes it
// (default 10 s). A member blocked in Poll is calling.
func SessionTimeout(d time.Duration) MemberOption {
	return func(o *memberOptions) error {
		o.session, o.hasSession = durationMs(d), true
		return nil
	}
}

// WithAssignor sets the group's assignment strategy (used if this member is the group's
// first; default round-robin).
func WithAssignor(a Assignor) MemberOption {
	return func(o *memberOptions) error {
		o.assignor = a
		return nil
	}
}

// OnRebalance sets a callback run for this member after every rebalance of its group (its own
// join included, before Join returns, with the *Member Join is about to return), on the
// goroutine or library thread that caused it, with no library lock held. It may call
// m.Assignment; it must not close m (that returns ErrDeadlock). A panic is recovered and logged.
func OnRebalance(f func(m *Member, generation int64)) MemberOption {
	return func(o *memberOptions) error {
		o.onRebalance = f
		return nil
	}
}

// Member is a live member of a consumer group: the group divides the topic's partitions among
// its members and numbers each division with a generation. After a change its next call
// returns ErrRebalanced (nothing was done): call Assignment and carry on. A call on a
// partition the member no longer owns returns ErrFenced. Safe for concurrent use.
type Member struct {
	b          *Broker
	id         atomic.Pointer[string] // set by Join, or first by the callback of its own join
	core       *memberCore
	guard      *guard
	rebalance  func(*Member, int64)
	rbHandle   cgo.Handle
	rbBox      unsafe.Pointer // set by Join, then only compared
	rbReleased atomic.Bool

	wake    closeWake // ends the blocking polls in flight (Kafka) on Close
	joining bool      // under wake.mu: Join is in the library, and closes the member if closing

	closeOnce sync.Once
	closeErr  error
}

// Join adds a member to a group of topic (subscribing the group at the end of the log if
// needed), which rebalances the group. ErrExists if the id is taken in the group; ErrOwned if
// push subscriptions with partition lists own partitions of the group.
func (b *Broker) Join(topic, group string, opts ...MemberOption) (*Member, error) {
	const op = "join"
	var o memberOptions
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	m := &Member{b: b, core: &memberCore{shared: b.core.shared}, guard: newGuard(nil), rebalance: o.onRebalance}
	if !b.register(nil, m) {
		return nil, closedError(op)
	}
	p := b.acquire()
	if p == 0 {
		b.unregister(nil, m)
		return nil, closedError(op)
	}
	defer b.release()
	if o.onRebalance != nil {
		m.rbHandle = newHandle(m)
		if m.rbBox = newBox(m.rbHandle); m.rbBox == nil {
			deleteHandle(m.rbHandle)
			b.unregister(nil, m)
			return nil, &Error{Op: op, Status: StatusNoMemory, Message: "out of memory for the callback's user data"}
		}
	}
	var aBox unsafe.Pointer
	if o.assignor != nil {
		if aBox = b.core.addAssignor(o.assignor); aBox == nil {
			m.releaseCallback()
			b.unregister(nil, m)
			return nil, &Error{Op: op, Status: StatusNoMemory, Message: "out of memory for the assignor's user data"}
		}
	}
	var out C.mqgo_member
	t, tl := cstr(topic)
	g, gl := cstr(group)
	id, il := cstr(o.id)
	m.wake.mu.Lock()
	m.joining = true
	m.wake.mu.Unlock()
	r := C.mqgo_member_join(p, t, tl, g, gl, id, il, cbool(o.hasID), C.int64_t(o.session), cbool(o.hasSession),
		aBox, m.rbBox, &out)
	m.wake.mu.Lock()
	m.joining = false
	closing := m.wake.closing
	m.wake.mu.Unlock()
	if err := check(op, r); err != nil {
		m.releaseCallback()
		b.unregister(nil, m)
		return nil, err
	}
	m.core.ptr.Store(uintptr(out))
	m.setID(out)
	// A member dropped without Close leaves when collected. It has no rebalance callback (a
	// callback's handle keeps its member reachable), but leaving calls the other members'
	// callbacks and the group's assignor: on a goroutine of its own, so the cleanup never
	// waits on user code.
	runtime.AddCleanup(m, func(c *memberCore) { go c.leave() }, m.core)
	if closing {
		// The broker was closed (from a callback of this join) while the member joined:
		// it has been told to close, and Join is where that can happen.
		m.leave()
		return nil, memberClosed(op)
	}
	return m, nil
}

// addAssignor keeps an assignor for as long as the broker's memory lives: the group goes on
// using its first member's strategy after that member leaves.
func (c *brokerCore) addAssignor(a Assignor) unsafe.Pointer {
	h := newHandle(a)
	box := newBox(h)
	if box == nil {
		deleteHandle(h)
		return nil
	}
	l := c.shared.assignors
	l.mu.Lock()
	l.boxes = append(l.boxes, assignorBox{handle: h, box: box})
	l.mu.Unlock()
	return box
}

// releaseCallback drops the rebalance callback's handle once no call of it can start.
func (m *Member) releaseCallback() {
	if m.rbBox != nil && m.rbReleased.CompareAndSwap(false, true) {
		deleteHandle(m.rbHandle)
		C.free(m.rbBox)
	}
}

// memberCore is the part of a member its cleanup uses (never the Member itself).
type memberCore struct {
	ptr    atomic.Uintptr // the mq_member *, set once (its join's own callback may set it first)
	left   atomic.Bool
	shared *shared // the clock and assignors the library may use while the member leaves
}

// leave closes the C member, once.
func (c *memberCore) leave() error {
	if c.left.Swap(true) {
		return nil
	}
	err := direct("member close", func() C.mq_status { return C.mq_member_close(cMember(C.mqgo_member(c.ptr.Load()))) })
	runtime.KeepAlive(c.shared)
	return err
}

func (m *Member) cptr() C.mqgo_member { return C.mqgo_member(m.core.ptr.Load()) }

// setID records the member's id from its handle, once.
func (m *Member) setID(cm C.mqgo_member) {
	if m.id.Load() == nil {
		id := C.GoString(C.mqgo_member_id(cm))
		m.id.CompareAndSwap(nil, &id)
	}
}

// ID is the member's id.
func (m *Member) ID() string {
	if id := m.id.Load(); id != nil {
		return *id
	}
	return ""
}

// Broker is the broker the member belongs to.
func (m *Member) Broker() *Broker { return m.b }

// acquire returns the C member for one call, or nil once Close has begun.
func (m *Member) acquire() C.mqgo_member {
	if !m.guard.acquire() {
		return 0
	}
	return m.cptr()
}

func memberClosed(op string) *Error { return handleClosed(op, "member") }

// Assignment returns the member's generation and partitions (in increasing order), and marks
// the generation as seen, so its calls stop returning ErrRebalanced. What it had in flight on
// the partitions it keeps is handed out again by its next Poll. ErrFenced if the group removed
// the member (session timeout): close it and join again.
func (m *Member) Assignment() (generation int64, partitions []int, err error) {
	const op = "assignment"
	p := m.acquire()
	if p == 0 {
		return 0, nil, memberClosed(op)
	}
	defer m.guard.release()
	var gen C.int64_t
	parts, err := ints(op, func(out *C.int32_t, cap C.size_t, count *C.size_t) C.mq_status {
		return C.mq_member_get_assignment(cMember(p), &gen, out, cap, count)
	})
	if err != nil {
		return 0, nil, err
	}
	return int64(gen), parts, nil
}

// Poll polls the member's partitions (starting at a different one each call) and returns
// messages of one of them (Message.Partition says which), waiting as Broker.Poll does: on
// every partition the member owns, parked without an OS thread (library 1.4), and until a
// message comes to any of them. ErrRebalanced: the generation changed (also during the wait,
// when a member joins or leaves); nothing was handed out. Close ends a waiting Poll with
// ErrClosed.
func (m *Member) Poll(ctx context.Context, max int) ([]Message, error) {
	var batch Batch
	if err := m.poll(ctx, max, &batch, false, nil); err != nil {
		return nil, err
	}
	return batch.Messages, nil
}

// PollBatch is Poll into reusable storage (see Broker.PollBatch).
func (m *Member) PollBatch(ctx context.Context, max int, into *Batch) error {
	return m.poll(ctx, max, into, true, nil)
}

// AckPoll acknowledges offset on a partition the member owns (as Ack) and then polls (as
// Poll), in one call (library 1.1): when the poll looks at that partition first (always, for a
// member owning one partition) the ack and the look share one critical section.
//
// The ack stands whatever the poll finds: ErrTimeout and ErrCancelled mean the offset is
// acked and nothing was handed out. An ack the library refuses polls nothing and waits for
// nothing: ErrNotInFlight, ErrFenced, or ErrRebalanced, which also comes when the group
// rebalances during the wait (after the ack); either way call Assignment, after which what is
// in flight on the partitions the member keeps is handed out again. It waits as Poll does;
// Close ends a waiting AckPoll with ErrClosed.
func (m *Member) AckPoll(ctx context.Context, partition int, offset int64, max int) ([]Message, error) {
	var batch Batch
	if err := m.poll(ctx, max, &batch, false, &memberAck{partition, offset}); err != nil {
		return nil, err
	}
	return batch.Messages, nil
}

// AckPollBatch is AckPoll into reusable storage (see Broker.PollBatch).
func (m *Member) AckPollBatch(ctx context.Context, partition int, offset int64, max int, into *Batch) error {
	return m.poll(ctx, max, into, true, &memberAck{partition, offset})
}

// memberAck is the ack an AckPoll makes before it polls.
type memberAck struct {
	partition int
	offset    int64
}

// poll is Poll, and AckPoll when ack is not nil.
//
// As Broker.poll: it first polls without waiting, into Go memory, and only when that finds
// nothing and ctx allows a wait does it wait, through the asynchronous poll (parkedPoll): the
// goroutine parks and holds no OS thread. While the call is pending the library keeps the
// member (mq_member_close completes the call with MQ_CLOSED and waits for its done), so the
// parked call lets go of its hold on m.guard: Close does not wait for it, and the call ends
// with ErrClosed. On the Kafka engine the blocking call waits (blockingPoll).
func (m *Member) poll(ctx context.Context, max int, into *Batch, reuse bool, ack *memberAck) error {
	op := "member poll"
	if ack != nil {
		op = "member ack poll"
	}
	into.Messages = into.Messages[:0]
	var part C.int32_t
	var doAck C.int
	var offset C.int64_t
	if ack != nil {
		var err error
		if part, err = partition32(op, ack.partition); err != nil {
			return err
		}
		doAck, offset = 1, C.int64_t(ack.offset)
	}
	n, err := pollMax(op, max)
	if err != nil {
		return err
	}
	p := m.acquire()
	if p == 0 {
		return memberClosed(op)
	}
	if !m.b.canPend() {
		defer m.guard.release()
		return m.blockingPoll(ctx, op, p, doAck, part, offset, n, into, reuse)
	}
	held := true // this call's hold of m.guard, which the calls below need to use p
	defer func() {
		if held {
			m.guard.release()
		}
	}()
	refused := false // m was closed while the call was pending: not called again
	now := func(ack C.int) func(unsafe.Pointer, C.size_t) C.mqgo_result {
		return func(buf unsafe.Pointer, size C.size_t) C.mqgo_result {
			if !held {
				if held = m.guard.acquire(); !held {
					refused = true
					return closedResult()
				}
			}
			return C.mqgo_member_poll_copy(p, ack, part, offset, buf, size, C.size_t(n), C.MQ_NO_WAIT, 0)
		}
	}
	r := copyPoll(into, reuse, n, now(doAck), now(0))
	if r.status == C.MQ_TIMEOUT && waitMs(ctx) != C.MQ_NO_WAIT {
		freeResult(r)
		start := func(st, buf C.mqgo_mem, size C.size_t, tok C.mqgo_cancel) C.mqgo_result {
			if !held {
				if held = m.guard.acquire(); !held {
					refused = true
					return closedResult()
				}
			}
			r := C.mqgo_member_poll_copy_async(p, st, 0, 0, 0, buf, size, C.size_t(n), waitMs(ctx), tok)
			if r.status == C.MQ_PENDING {
				m.guard.release()
				held = false
			}
			return r
		}
		r = parkedPoll(ctx, n, into, reuse, start, now(0))
	}
	if r.status != C.MQ_OK {
		into.Messages = into.Messages[:0]
		if refused {
			return memberClosed(op)
		}
		return waitFailure(op, r, ctx)
	}
	return nil
}

// closedResult is the result of a call not made because its handle was closed.
func closedResult() C.mqgo_result {
	var r C.mqgo_result
	r.status = C.MQ_CLOSED
	return r
}

// blockingPoll is poll on the Kafka engine: the blocking call, under a token of its own that
// Close triggers (then ErrClosed) as ctx does (ErrCancelled).
func (m *Member) blockingPoll(ctx context.Context, op string, p C.mqgo_member, doAck C.int, part C.int32_t, offset C.int64_t,
	n int, into *Batch, reuse bool) error {
	r, closed, err := m.wake.run(ctx, func(tok C.mqgo_cancel) C.mqgo_result {
		poll := func(ack C.int) func(unsafe.Pointer, C.size_t) C.mqgo_result {
			return func(buf unsafe.Pointer, size C.size_t) C.mqgo_result {
				return C.mqgo_member_poll_copy(p, ack, part, offset, buf, size, C.size_t(n), waitMs(ctx), tok)
			}
		}
		return copyPoll(into, reuse, n, poll(doAck), poll(0))
	})
	if err != nil {
		return err
	}
	if r.status != C.MQ_OK {
		into.Messages = into.Messages[:0]
		if closed {
			return memberClosed(op)
		}
		return waitFailure(op, r, ctx)
	}
	return nil
}

// Ack acknowledges, cumulatively, offsets up to offset on a partition the member owns.
func (m *Member) Ack(partition int, offset int64) error {
	const op = "member ack"
	part, err := partition32(op, partition)
	if err != nil {
		return err
	}
	p := m.acquire()
	if p == 0 {
		return memberClosed(op)
	}
	defer m.guard.release()
	return check(op, C.mqgo_member_ack(p, part, C.int64_t(offset)))
}

// Nack gives back the member's in-flight messages on a partition it owns.
func (m *Member) Nack(partition int) error { return m.NackAfter(partition, 0) }

// NackAfter is Nack with a delay on the broker clock (see Broker.NackAfter).
func (m *Member) NackAfter(partition int, delay time.Duration) error {
	const op = "member nack"
	part, err := partition32(op, partition)
	if err != nil {
		return err
	}
	p := m.acquire()
	if p == 0 {
		return memberClosed(op)
	}
	defer m.guard.release()
	return direct(op, func() C.mq_status { return C.mq_member_nack(cMember(p), part, C.int64_t(durationMs(delay))) })
}

// ExtendLease restarts the lease of the member's in-flight messages on a partition it owns.
func (m *Member) ExtendLease(partition int) error {
	const op = "member extend lease"
	part, err := partition32(op, partition)
	if err != nil {
		return err
	}
	p := m.acquire()
	if p == 0 {
		return memberClosed(op)
	}
	defer m.guard.release()
	return direct(op, func() C.mq_status { return C.mq_member_extend_lease(cMember(p), part) })
}

// Close leaves the group (the others rebalance; what this member had in flight goes to the new
// owners). A Poll or AckPoll waiting on another goroutine returns ErrClosed: Close waits for
// the member's calls in flight and for a running OnRebalance of it, and returns once the
// library has ended the waiting calls (their goroutines return a moment later). Idempotent.
// From the member's own OnRebalance callback it returns ErrDeadlock and does nothing.
func (m *Member) Close() error {
	if m.inOwnCallback() {
		return direct("member close", func() C.mq_status { return C.mq_member_close(cMember(m.cptr())) })
	}
	return m.close()
}

func (m *Member) inOwnCallback() bool {
	return m.rbBox != nil && !m.rbReleased.Load() && C.mqgo_current_rebalance_box() == m.rbBox
}

func (m *Member) close() error {
	m.closeOnce.Do(func() {
		m.wake.mu.Lock()
		joining := m.joining
		m.wake.closeLocked()
		m.wake.mu.Unlock()
		m.guard.close()
		if joining {
			return // Join leaves when the library returns
		}
		<-m.guard.drained
		m.closeErr = m.leave()
	})
	return m.closeErr
}

// leave closes the C member once no call of it is in flight.
func (m *Member) leave() error {
	err := m.core.leave()
	m.releaseCallback() // mq_member_close waited for a running callback
	m.b.unregister(nil, m)
	return err
}

//export mqgoRebalance
func mqgoRebalance(h C.uintptr_t, cm C.mqgo_member, generation C.int64_t) {
	m := cgo.Handle(h).Value().(*Member)
	// During its own join the callback comes before Join has stored the handle.
	m.core.ptr.CompareAndSwap(0, uintptr(cm))
	m.setID(cm)
	defer func() {
		if v := recover(); v != nil {
			log.Printf("mq: OnRebalance of member %s panicked: %v", C.GoString(C.mqgo_member_id(cm)), v)
		}
	}()
	m.rebalance(m, int64(generation))
}

//export mqgoAssign
func mqgoAssign(h C.uintptr_t, partitions C.int32_t, ids **C.char, count C.int32_t, owners *C.int32_t) {
	a := cgo.Handle(h).Value().(Assignor)
	out := unsafe.Slice(owners, int(partitions))
	names := make([]string, int(count))
	for i, p := range unsafe.Slice(ids, int(count)) {
		names[i] = C.GoString(p)
	}
	own := make([]int, int(partitions))
	for i := range own {
		own[i] = -1
	}
	defer func() {
		if v := recover(); v != nil {
			log.Printf("mq: assignor panicked (every partition is unowned until the next rebalance): %v", v)
			for i := range out {
				out[i] = -1
			}
		}
	}()
	a(names, own)
	for i, o := range own {
		if o < 0 || o >= int(count) {
			o = -1
		}
		out[i] = C.int32_t(o)
	}
}
