package main

import (
	"context"
	"io"

	"github.com/mqlib/mq/bindings/go/mq"
)

// The handles of FORMAT.md "Handles (ABI 1.7)": publisher=NAME on publish and publish_batch,
// cursor=NAME on poll, ack and ack_poll route the call through that open handle; without it
// the call goes by name. Both spell the calls the same, so the verbs call them alike.

type publishVia interface {
	Publish(ctx context.Context, key, value []byte, opts ...mq.PublishOption) (int, int64, error)
	PublishBatch(ctx context.Context, records []mq.Record) ([]mq.PublishResult, error)
}

type pollVia interface {
	Poll(ctx context.Context, max int) ([]mq.Message, error)
	AckPoll(ctx context.Context, offset int64, max int) ([]mq.Message, error)
	Ack(offset int64) error
}

// byName is the broker's named calls on one topic, group and partition.
type byName struct {
	b            *mq.Broker
	topic, group string
	partition    int
}

func (n byName) Publish(ctx context.Context, key, value []byte, opts ...mq.PublishOption) (int, int64, error) {
	return n.b.Publish(ctx, n.topic, key, value, opts...)
}

func (n byName) PublishBatch(ctx context.Context, records []mq.Record) ([]mq.PublishResult, error) {
	return n.b.PublishBatch(ctx, n.topic, records)
}

func (n byName) Poll(ctx context.Context, max int) ([]mq.Message, error) {
	return n.b.Poll(ctx, n.topic, n.group, n.partition, max)
}

func (n byName) AckPoll(ctx context.Context, offset int64, max int) ([]mq.Message, error) {
	return n.b.AckPoll(ctx, n.topic, n.group, n.partition, offset, max)
}

func (n byName) Ack(offset int64) error { return n.b.Ack(n.topic, n.group, n.partition, offset) }

// via is the request's publisher or cursor (field kind), or the named calls.
func (w *world) via(r *request, kind string) any {
	name, ok := r.raw(kind)
	if !ok {
		if w.broker == nil {
			panic(testeeError("no broker"))
		}
		return byName{w.broker, r.str("topic"), r.str("group"), int(r.int("partition", 0))}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.handles[string(decode(name))]
	if h == nil {
		panic(testeeError("no open " + kind + " " + name))
	}
	return h
}

func (w *world) publisher(r *request) publishVia {
	p, ok := w.via(r, "publisher").(publishVia)
	if !ok {
		panic(testeeError("not a publisher: " + r.str("publisher")))
	}
	return p
}

func (w *world) cursor(r *request) pollVia {
	c, ok := w.via(r, "cursor").(pollVia)
	if !ok {
		panic(testeeError("not a cursor: " + r.str("cursor")))
	}
	return c
}

// handleOpen runs publisher_open and cursor_open.
func (w *world) handleOpen(r *request, out *reply) {
	if w.broker == nil {
		panic(testeeError("no broker"))
	}
	var h io.Closer
	var err error
	kind := "publisher"
	if r.verb == "publisher_open" {
		h, err = w.broker.Publisher(r.str("topic"))
	} else {
		kind = "cursor"
		h, err = w.broker.Cursor(r.str("topic"), r.str("group"), int(r.int("partition", 0)))
	}
	if status(out, err) {
		w.mu.Lock()
		name := r.str(kind)
		w.handles[name] = h
		w.order = append(w.order, name)
		w.mu.Unlock()
	}
}

// handleClose runs publisher_close and cursor_close.
func (w *world) handleClose(r *request, out *reply) {
	kind := "publisher"
	if r.verb == "cursor_close" {
		kind = "cursor"
	}
	name := r.str(kind)
	w.mu.Lock()
	h := w.handles[name]
	delete(w.handles, name)
	w.mu.Unlock()
	if h == nil {
		panic(testeeError("no open " + kind + " " + name))
	}
	status(out, h.Close())
}

// closeHandles closes what the scenario left open (after the broker is freed: a handle
// outlives its broker); false when a close failed.
func (w *world) closeHandles(names []string) bool {
	good := true
	for _, n := range names {
		w.mu.Lock()
		h := w.handles[n]
		delete(w.handles, n)
		w.mu.Unlock()
		if h != nil {
			good = h.Close() == nil && good
		}
	}
	return good
}
