package mq

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"context"
	"time"
	"unsafe"
)

// Cursor is one group's position on one partition of a topic, looked up once (library 1.7,
// mq_cursor): its Poll, AckPoll and Ack do exactly what the Broker's do for that topic, group
// and partition (same waits, messages and errors) without looking the names up on every call.
// It and the Broker's calls share the group's position. Safe for concurrent use; in a share
// group any number of goroutines may poll one Cursor (Ack accepts; settle with Broker.Settle).
//
// It holds its topic and group, not their names: once the topic is deleted its calls return
// ErrNoTopic, once the group is unsubscribed ErrNoGroup, even after a topic or group of that
// name comes back (open a new Cursor for it). It outlives its broker: after the broker's
// Shutdown or Close its calls return ErrClosed.
//
// Unlike the Broker's, a poll that waits blocks its OS thread in the library (the handles have
// no asynchronous form): for many idle consumers, wait with Broker.Poll or a Member.
type Cursor struct {
	h         *handle
	topic     string
	group     string
	partition int
}

// Cursor opens a cursor on group's partition of topic. ErrInvalid for an illegal name,
// ErrNoTopic, ErrNoGroup, ErrPartition, ErrClosed.
func (b *Broker) Cursor(topic, group string, partition int) (*Cursor, error) {
	const op = "open cursor"
	part, err := partition32(op, partition)
	if err != nil {
		return nil, err
	}
	h, err := b.openHandle(op, "cursor", func(p C.mqgo_broker) (unsafe.Pointer, error) {
		var out *C.mq_cursor
		err := groupCall(op, topic, group, func(t, g *C.char) C.mq_status {
			return C.mq_cursor_open(cBroker(p), t, g, part, &out)
		})
		return unsafe.Pointer(out), err
	}, func(ptr unsafe.Pointer) { C.mq_cursor_close((*C.mq_cursor)(ptr)) })
	if err != nil {
		return nil, err
	}
	c := &Cursor{h: h, topic: topic, group: group, partition: partition}
	collect(c, h)
	return c, nil
}

// Topic, Group and Partition say what the cursor is on.
func (c *Cursor) Topic() string  { return c.topic }
func (c *Cursor) Group() string  { return c.group }
func (c *Cursor) Partition() int { return c.partition }

// Poll is Broker.Poll on the cursor's partition. The wait holds the goroutine's OS thread;
// Close ends it with ErrClosed.
func (c *Cursor) Poll(ctx context.Context, max int) ([]Message, error) {
	var batch Batch
	if err := c.poll(ctx, max, &batch, false, nil); err != nil {
		return nil, err
	}
	return batch.Messages, nil
}

// PollBatch is Poll into reusable storage (see Broker.PollBatch).
func (c *Cursor) PollBatch(ctx context.Context, max int, into *Batch) error {
	return c.poll(ctx, max, into, true, nil)
}

// AckPoll is Broker.AckPoll on the cursor's partition: offset acked, then a poll, in one call.
func (c *Cursor) AckPoll(ctx context.Context, offset int64, max int) ([]Message, error) {
	var batch Batch
	if err := c.poll(ctx, max, &batch, false, &offset); err != nil {
		return nil, err
	}
	return batch.Messages, nil
}

// AckPollBatch is AckPoll into reusable storage (see Broker.AckPollBatch).
func (c *Cursor) AckPollBatch(ctx context.Context, offset int64, max int, into *Batch) error {
	return c.poll(ctx, max, into, true, &offset)
}

// poll is Poll, and AckPoll when ack is not nil: the copying poll (copyPoll), waiting in the
// library under ctx.
func (c *Cursor) poll(ctx context.Context, max int, into *Batch, reuse bool, ack *int64) error {
	op := "poll"
	var doAck C.int
	var offset C.int64_t
	if ack != nil {
		op, doAck, offset = "ack poll", 1, C.int64_t(*ack)
	}
	into.Messages = into.Messages[:0]
	n, err := pollMax(op, max)
	if err != nil {
		return err
	}
	r, err := c.h.run(ctx, op, ack == nil, func(ptr C.uintptr_t, tok C.mqgo_cancel, wait C.int64_t) C.mqgo_result {
		poll := func(ack C.int) func(unsafe.Pointer, C.size_t) C.mqgo_result {
			return func(buf unsafe.Pointer, size C.size_t) C.mqgo_result {
				return C.mqgo_cursor_poll_copy(C.mqgo_cursor(ptr), ack, offset, buf, size, C.size_t(n), wait, tok)
			}
		}
		return copyPoll(into, reuse, n, poll(doAck), poll(0))
	})
	if err != nil {
		return err
	}
	if r.status != C.MQ_OK {
		into.Messages = into.Messages[:0]
		return waitFailure(op, r, ctx)
	}
	return nil
}

// Ack is Broker.Ack on the cursor's partition (in a share group it accepts one message).
func (c *Cursor) Ack(offset int64) error {
	const op = "ack"
	r, err := c.h.run(noWaitCtx, op, false, func(ptr C.uintptr_t, _ C.mqgo_cancel, _ C.int64_t) C.mqgo_result {
		return C.mqgo_cursor_ack(C.mqgo_cursor(ptr), C.int64_t(offset))
	})
	if err != nil {
		return err
	}
	return check(op, r)
}

// noWaitCtx is a context whose deadline has passed: the calls that never wait (Ack) run
// without a token.
var noWaitCtx, _ = context.WithDeadline(context.Background(), time.Unix(0, 0))

// Close releases the cursor: a poll waiting on another goroutine returns ErrClosed, and so
// does every later call. The C handle is freed once the calls in flight have returned; Close
// does not wait for them. Idempotent; any order with the broker's Close is safe. A Cursor
// dropped without Close is closed when collected.
func (c *Cursor) Close() error {
	c.h.close()
	return nil
}
