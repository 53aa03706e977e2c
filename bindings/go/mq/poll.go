package mq

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"context"
	"fmt"
	"time"
	"unsafe"
)

// Poll hands out up to max messages of one partition to a group, from its next offset on, and
// starts a lease (the topic's ack timeout) on everything in flight: ack them before it runs
// out, or they are delivered again. The messages are copies (see Message).
//
// With nothing to hand out, Poll waits until ctx's deadline (without one, until something
// arrives) and then returns ErrTimeout. A context that is already done means "do not wait".
// Cancelling ctx ends the wait at once with ErrCancelled (which also matches
// context.Canceled). A max above 4096 is served 4096 at a time.
//
// In a share group (Share, library 1.6) Poll acquires up to max messages that no other poll
// holds, each under its own lock; settle each with Settle.
func (b *Broker) Poll(ctx context.Context, topic, group string, partition, max int) ([]Message, error) {
	var batch Batch
	if err := b.poll(ctx, topic, group, partition, max, &batch, false, nil); err != nil {
		return nil, err
	}
	return batch.Messages, nil
}

// PollBatch is Poll into reusable storage: the messages land in into.Messages, in the
// storage of the previous poll into it, so that a steady stream of polls allocates nothing.
// They are valid until the next poll into the same Batch. into.Messages is empty on error.
func (b *Broker) PollBatch(ctx context.Context, topic, group string, partition, max int, into *Batch) error {
	return b.poll(ctx, topic, group, partition, max, into, true, nil)
}

// AckPoll acknowledges offset (cumulatively, as Ack) and then polls the same partition (as
// Poll), in one call and one critical section of the library (1.1): a consumer loop that acks
// what it handled and asks for more makes one cgo crossing instead of two, and the publishers
// the ack makes room for are woken once. The messages are copies (see Message).
//
// The ack comes first and stands whatever the poll finds: ErrTimeout and ErrCancelled (ctx)
// mean the offset is acked and nothing was handed out. An ack the library refuses polls
// nothing and waits for nothing: ErrNotInFlight (with the in-flight range in the message),
// and nothing changes. Any other error (ErrNoTopic, ErrNoGroup, ErrPartition, ErrInvalid for
// max 0, ErrClosed) is raised before the ack, except ErrNoTopic from a topic deleted during
// the wait and ErrClosed from a Close during it.
func (b *Broker) AckPoll(ctx context.Context, topic, group string, partition int, offset int64, max int) ([]Message, error) {
	var batch Batch
	if err := b.poll(ctx, topic, group, partition, max, &batch, false, &offset); err != nil {
		return nil, err
	}
	return batch.Messages, nil
}

// AckPollBatch is AckPoll into reusable storage (see PollBatch): the messages of the previous
// poll into the Batch are valid until this call, which may ack them.
func (b *Broker) AckPollBatch(ctx context.Context, topic, group string, partition int, offset int64, max int, into *Batch) error {
	return b.poll(ctx, topic, group, partition, max, into, true, &offset)
}

// poll is Poll, and AckPoll when ack is not nil.
//
// It first polls without waiting, into Go memory (the blocking call with MQ_NO_WAIT: what a
// poll that finds messages costs, with no token and no callback). Only when that finds nothing
// and ctx allows a wait does it wait, through the asynchronous poll (parkedPoll): the
// goroutine parks and holds no OS thread. The ack of an AckPoll is made by the first call and
// stands whatever follows, as in the blocking form. On the Kafka engine the blocking call
// waits, as before 1.4.
func (b *Broker) poll(ctx context.Context, topic, group string, partition, max int, into *Batch, reuse bool, ack *int64) error {
	op := "poll"
	if ack != nil {
		op = "ack poll"
	}
	into.Messages = into.Messages[:0]
	part, err := partition32(op, partition)
	if err != nil {
		return err
	}
	n, err := pollMax(op, max)
	if err != nil {
		return err
	}
	p := b.acquire()
	if p == 0 {
		return closedError(op)
	}
	t, tl := cstr(topic)
	g, gl := cstr(group)
	var doAck C.int
	var offset C.int64_t
	if ack != nil {
		doAck, offset = 1, C.int64_t(*ack)
	}
	var r C.mqgo_result
	if b.canPend(topic, group) {
		now := func(ack C.int) func(unsafe.Pointer, C.size_t) C.mqgo_result {
			return func(buf unsafe.Pointer, size C.size_t) C.mqgo_result {
				return C.mqgo_poll_copy(p, t, tl, g, gl, part, ack, offset, buf, size, C.size_t(n), C.MQ_NO_WAIT, 0)
			}
		}
		r = copyPoll(into, reuse, n, now(doAck), now(0))
		if r.status == C.MQ_TIMEOUT && waitMs(ctx) != C.MQ_NO_WAIT {
			freeResult(r)
			start := func(st, buf C.mqgo_mem, size C.size_t, tok C.mqgo_cancel) C.mqgo_result {
				return C.mqgo_poll_copy_async(p, st, t, tl, g, gl, part, 0, 0, buf, size, C.size_t(n), waitMs(ctx), tok)
			}
			r = parkedPoll(ctx, n, into, reuse, start, now(0))
		}
	} else {
		var w waiter
		if err := w.start(ctx); err != nil {
			b.release()
			return err
		}
		poll := func(ack C.int) func(unsafe.Pointer, C.size_t) C.mqgo_result {
			return func(buf unsafe.Pointer, size C.size_t) C.mqgo_result {
				return C.mqgo_poll_copy(p, t, tl, g, gl, part, ack, offset, buf, size, C.size_t(n), waitMs(ctx), w.tok)
			}
		}
		r = copyPoll(into, reuse, n, poll(doAck), poll(0))
		w.end()
	}
	b.release()
	if r.status != C.MQ_OK {
		into.Messages = into.Messages[:0]
		return waitFailure(op, r, ctx)
	}
	return nil
}

// pendingCap is the size of the C buffer a waiting poll of max messages is given: room for
// max small messages, at most 64 KiB (what a pending call holds while it waits). A first
// message that does not fit is then polled at once into Go memory grown to fit (parkedPoll).
func pendingCap(max int) int {
	n := C.sizeof_mq_copy_header + max*(copyEntry+64)
	if n > 64<<10 {
		n = 64 << 10
	}
	return (n + 7) &^ 7
}

// asyncPoll makes the asynchronous form of a copying poll (without ack), with st as its state,
// into buf (C memory, size bytes), under the cancel token tok (0: none).
type asyncPoll func(st, buf C.mqgo_mem, size C.size_t, tok C.mqgo_cancel) C.mqgo_result

// parkedPoll is the waiting poll of a Broker or a Member (without ack: the first call made it):
// start into a C buffer, the goroutine parked until done (see asyncCall.wait). now is the poll
// without waiting into Go memory, for a first message too large for the C buffer. The result
// is the shim's; with MQ_OK into.Messages are the messages (copied out of the C buffer).
func parkedPoll(ctx context.Context, n int, into *Batch, reuse bool, start asyncPoll,
	now func(unsafe.Pointer, C.size_t) C.mqgo_result) C.mqgo_result {
	a := getAsync()
	if a == nil {
		return noMemoryResult()
	}
	size := pendingCap(n)
	buf := C.malloc(C.size_t(size))
	if buf == nil {
		putAsync(a)
		return noMemoryResult()
	}
	tok, err := asyncToken(ctx)
	if err != nil {
		C.free(buf)
		putAsync(a)
		return noMemoryResult()
	}
	triggered := false
	var r C.mqgo_result
	for {
		r = start(a.mem(), C.mqgo_mem(uintptr(buf)), C.size_t(size), tokenOf(tok))
		if r.status == C.MQ_PENDING {
			var trig bool
			r, trig = a.wait(ctx, tok)
			triggered = triggered || trig
		}
		if r.status == C.MQ_OK {
			cb := unsafe.Slice((*byte)(buf), size)
			count := int(r.count)
			if reuse {
				// A Batch's messages are slices of its own (Go) buffer: the layout's
				// positions are from the buffer's start, so the whole of it is copied.
				into.buf.ensure(size)
				gb := into.buf.bytes()[:size]
				copy(gb, cb)
				into.Messages = decode(gb, count, into.Messages[:0], true)
			} else {
				into.Messages = decode(cb, count, into.Messages[:0], false)
			}
			break
		}
		if r.status != C.MQ_ERR_TOO_LARGE || r.needed <= C.size_t(size) {
			break
		}
		// The first message is larger than the C buffer: it is there, so poll it at once into
		// Go memory grown to fit; should another consumer have taken it, wait again.
		freeResult(r)
		r = copyPoll(into, reuse, n, now, now)
		if r.status != C.MQ_TIMEOUT || ctx.Err() != nil || waitMs(ctx) == C.MQ_NO_WAIT {
			break
		}
		freeResult(r)
	}
	C.free(buf)
	putAsync(a)
	releaseToken(tok, triggered)
	return r
}

// pollMax checks a poll's max; 0 is passed on for the library to refuse.
func pollMax(op string, max int) (int, error) {
	if max < 0 {
		return 0, invalid(op, fmt.Sprintf("max %d is negative; poll at least 1 message", max))
	}
	if max > maxPoll {
		return maxPoll, nil
	}
	if max == 0 {
		return 0, nil
	}
	return max, nil
}

// Ack acknowledges, cumulatively, every offset up to and including offset for the group on a
// partition. What every group has acked leaves memory at once, waking blocked publishers.
// ErrNotInFlight (with the in-flight range in the message) for an offset already acked or
// never handed out; nothing changes then.
func (b *Broker) Ack(topic, group string, partition int, offset int64) error {
	const op = "ack"
	part, err := partition32(op, partition)
	if err != nil {
		return err
	}
	p := b.acquire()
	if p == 0 {
		return closedError(op)
	}
	t, tl := cstr(topic)
	g, gl := cstr(group)
	r := C.mqgo_ack(p, t, tl, g, gl, part, C.int64_t(offset))
	b.release()
	return check(op, r)
}

// Nack gives back the group's in-flight messages on a partition: the next poll hands them out
// again.
func (b *Broker) Nack(topic, group string, partition int) error {
	return b.NackAfter(topic, group, partition, 0)
}

// NackAfter is Nack with a delay: the group's polls of that partition hand out nothing until
// delay has passed on the broker clock (order is kept: the group waits rather than skipping).
func (b *Broker) NackAfter(topic, group string, partition int, delay time.Duration) error {
	const op = "nack"
	part, err := partition32(op, partition)
	if err != nil {
		return err
	}
	p := b.acquire()
	if p == 0 {
		return closedError(op)
	}
	defer b.release()
	return groupCall(op, topic, group, func(t, g *C.char) C.mq_status {
		return C.mq_group_nack(cBroker(p), t, g, part, C.int64_t(durationMs(delay)))
	})
}

// ExtendLease restarts the lease of the group's in-flight messages on a partition, for work
// that outlives the ack timeout. ErrNotInFlight when nothing is in flight.
func (b *Broker) ExtendLease(topic, group string, partition int) error {
	const op = "extend lease"
	part, err := partition32(op, partition)
	if err != nil {
		return err
	}
	p := b.acquire()
	if p == 0 {
		return closedError(op)
	}
	defer b.release()
	return groupCall(op, topic, group, func(t, g *C.char) C.mq_status {
		return C.mq_group_extend_lease(cBroker(p), t, g, part)
	})
}

// Seek moves the group's cursor on a partition to offset (in the retained range, or
// OffsetEarliest / OffsetEnd): replay or skip. What was in flight is forgotten and delivery
// counts start over. ErrOutOfRange (naming the range) outside the retained log.
func (b *Broker) Seek(topic, group string, partition int, offset int64) error {
	const op = "seek"
	part, err := partition32(op, partition)
	if err != nil {
		return err
	}
	p := b.acquire()
	if p == 0 {
		return closedError(op)
	}
	defer b.release()
	return groupCall(op, topic, group, func(t, g *C.char) C.mq_status {
		return C.mq_group_seek(cBroker(p), t, g, part, C.int64_t(offset))
	})
}
