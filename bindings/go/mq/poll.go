package mq

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
	var w waiter
	if err := w.start(ctx); err != nil {
		b.release()
		return err
	}
	t, tl := cstr(topic)
	g, gl := cstr(group)
	var doAck C.int
	var offset C.int64_t
	if ack != nil {
		doAck, offset = 1, C.int64_t(*ack)
	}
	poll := func(ack C.int) func(unsafe.Pointer, C.size_t) C.mqgo_result {
		return func(buf unsafe.Pointer, size C.size_t) C.mqgo_result {
			return C.mqgo_poll_copy(p, t, tl, g, gl, part, ack, offset, buf, size, C.size_t(n), waitMs(ctx), w.tok)
		}
	}
	r := copyPoll(into, reuse, n, poll(doAck), poll(0))
	w.end()
	b.release()
	if r.status != C.MQ_OK {
		into.Messages = into.Messages[:0]
		return waitFailure(op, r, ctx)
	}
	return nil
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
