package mq

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"context"
	"unsafe"
)

// Publisher is a topic looked up once (library 1.7, mq_publisher): its Publish and
// PublishBatch do exactly what the Broker's do for its topic (same options, waits, results and
// errors) without looking the name up on every call. Safe for concurrent use.
//
// It holds its topic, not the name: once the topic is deleted its calls return ErrNoTopic,
// even after a topic of that name is created again (open a new Publisher for that one). It
// outlives its broker: after the broker's Shutdown or Close its calls return ErrClosed.
//
// Unlike the Broker's, a Publish that must wait for room blocks its OS thread in the library
// (the handles have no asynchronous form): publish to a full partition from a few goroutines,
// or through the Broker's calls, when many would wait at once.
type Publisher struct {
	h     *handle
	topic string
}

// Publisher opens a publisher on topic. ErrInvalid for an illegal name, ErrNoTopic, ErrClosed.
func (b *Broker) Publisher(topic string) (*Publisher, error) {
	const op = "open publisher"
	h, err := b.openHandle(op, "publisher", func(p C.mqgo_broker) (unsafe.Pointer, error) {
		t, err := cname(op, "topic", topic)
		if err != nil {
			return nil, err
		}
		defer C.free(unsafe.Pointer(t))
		var out *C.mq_publisher
		err = direct(op, func() C.mq_status { return C.mq_publisher_open(cBroker(p), t, &out) })
		return unsafe.Pointer(out), err
	}, func(ptr unsafe.Pointer) { C.mq_publisher_close((*C.mq_publisher)(ptr)) })
	if err != nil {
		return nil, err
	}
	pub := &Publisher{h: h, topic: topic}
	collect(pub, h)
	return pub, nil
}

// Topic is the name of the publisher's topic.
func (p *Publisher) Topic() string { return p.topic }

// Publish is Broker.Publish on the publisher's topic. The wait holds the goroutine's OS
// thread; Close ends it with ErrClosed.
func (p *Publisher) Publish(ctx context.Context, key, value []byte, opts ...PublishOption) (partition int, offset int64, err error) {
	const op = "publish"
	o := publishOpts(opts)
	if o.delay != 0 {
		return publishDelayed(Record{Key: key, Value: value, Headers: o.headers, Delay: o.delay},
			func(rs []Record) ([]PublishResult, error) { return p.publishBatch(ctx, op, rs) })
	}
	r, err := withHeaders(op, o.headers, func(hdrs C.mqgo_mem) (C.mqgo_result, error) {
		// Only a keyed record is tried without waiting first: a keyless try that finds its
		// partition full would move the topic's round-robin on, and the publish would land
		// elsewhere than the named form's.
		return p.h.run(ctx, op, key != nil, func(ptr C.uintptr_t, tok C.mqgo_cancel, wait C.int64_t) C.mqgo_result {
			return C.mqgo_publisher_publish(C.mqgo_publisher(ptr), bytesPtr(key), C.size_t(len(key)), bytesPtr(value),
				C.size_t(len(value)), hdrs, C.size_t(len(o.headers)), wait, tok)
		})
	})
	return published(ctx, op, r, err)
}

// PublishBatch is Broker.PublishBatch on the publisher's topic. The wait holds the
// goroutine's OS thread; Close ends it with ErrClosed (and the results of what was appended).
func (p *Publisher) PublishBatch(ctx context.Context, records []Record) ([]PublishResult, error) {
	return p.publishBatch(ctx, "publish batch", records)
}

func (p *Publisher) publishBatch(ctx context.Context, op string, records []Record) ([]PublishResult, error) {
	return publishRecords(ctx, op, records, func(recs, res C.mqgo_mem, count C.size_t) (C.mqgo_result, error) {
		return p.h.run(ctx, op, false, func(ptr C.uintptr_t, tok C.mqgo_cancel, wait C.int64_t) C.mqgo_result {
			return C.mqgo_publisher_publish_batch(C.mqgo_publisher(ptr), recs, count, wait, tok, res)
		})
	})
}

// Close releases the publisher: a Publish or PublishBatch waiting on another goroutine returns
// ErrClosed, and so does every later call. The C handle is freed once the calls in flight have
// returned; Close does not wait for them. Idempotent; any order with the broker's Close is
// safe. A Publisher dropped without Close is closed when collected.
func (p *Publisher) Close() error {
	p.h.close()
	return nil
}
