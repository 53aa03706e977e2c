package mq

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"fmt"
	"math"
	"time"
	"unsafe"
)

// Retention is what a topic does when a partition is full.
type Retention int32

const (
	// RetainUntilAcked (the default): the slowest group holds messages; publishers wait.
	RetainUntilAcked Retention = C.MQ_RETAIN_UNTIL_ACKED
	// RetainBounded: publishers never wait; the oldest messages are dropped, and a group that
	// falls behind is told how many it lost (Message.Lost, GroupInfo.Lost).
	RetainBounded Retention = C.MQ_RETAIN_BOUNDED
)

// Start is where a new group begins reading.
type Start int32

const (
	StartLatest   Start = C.MQ_START_LATEST   // what is published after it subscribes (default)
	StartEarliest Start = C.MQ_START_EARLIEST // the oldest retained message
)

// Seek targets besides an offset.
const (
	OffsetEnd      int64 = C.MQ_OFFSET_END      // skip everything retained
	OffsetEarliest int64 = C.MQ_OFFSET_EARLIEST // replay everything retained
)

// TopicOption configures a topic (CreateTopic). Options not given keep the library's
// defaults: 1 partition, capacity 1024, no byte budget, 30 s ack timeout, RetainUntilAcked,
// no maximum age.
type TopicOption func(*topicConfig)

type topicConfig struct{ c C.mq_topic_config }

// Partitions sets the number of partitions (1 to 65536).
func Partitions(n int) TopicOption {
	return func(c *topicConfig) { c.c.partitions = C.int32_t(clamp32(int64(n))) }
}

// Capacity sets the messages retained per partition: publishers wait (or, with
// RetainBounded, the oldest are dropped) when a partition holds that many.
func Capacity(n int64) TopicOption {
	return func(c *topicConfig) { c.c.capacity = C.int64_t(n) }
}

// MaxBytes sets a byte budget per partition (key + payload + headers); 0 = none.
func MaxBytes(n int64) TopicOption {
	return func(c *topicConfig) { c.c.max_bytes = C.int64_t(n) }
}

// AckTimeout sets the lease: messages not acked within it are delivered again.
func AckTimeout(d time.Duration) TopicOption {
	return func(c *topicConfig) { c.c.ack_timeout_ms = C.int64_t(durationMs(d)) }
}

// WithRetention sets the retention policy.
func WithRetention(r Retention) TopicOption {
	return func(c *topicConfig) { c.c.retention = C.int32_t(r) }
}

// MaxAge trims messages older than d whatever the groups' cursors (0 = no limit).
func MaxAge(d time.Duration) TopicOption {
	return func(c *topicConfig) { c.c.max_age_ms = C.int64_t(durationMs(d)) }
}

// durationMs is d in milliseconds, rounded up (a lease or delay never ends early); negative
// durations stay negative so the library refuses them.
func durationMs(d time.Duration) int64 {
	if d < 0 {
		return -int64(-(d+1)/time.Millisecond) - 1 // rounded away from zero, without overflow
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// clamp32 keeps a value the library range-checks inside int32, so an out-of-range int is
// refused by the library rather than wrapped around into a legal one.
func clamp32(n int64) int32 {
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	if n < math.MinInt32 {
		return math.MinInt32
	}
	return int32(n)
}

// cstr passes a Go string to the shim as pointer and length; the shim terminates it (and
// refuses a NUL byte inside, which a C string cannot carry).
func cstr(s string) (*C.char, C.size_t) {
	return (*C.char)(unsafe.Pointer(unsafe.StringData(s))), C.size_t(len(s))
}

// partition32 converts a partition number, refusing one no C int32 can hold.
func partition32(op string, p int) (C.int32_t, error) {
	if p < math.MinInt32 || p > math.MaxInt32 {
		return 0, &Error{Op: op, Status: StatusPartition, Message: fmt.Sprintf("partition %d is out of range", p)}
	}
	return C.int32_t(p), nil
}

// CreateTopic creates a topic. ErrExists if the name is taken, ErrInvalid for an illegal name
// (1 to 249 characters of [a-zA-Z0-9._-]) or configuration.
func (b *Broker) CreateTopic(name string, opts ...TopicOption) error {
	const op = "create topic"
	var cfg topicConfig
	C.mq_topic_config_init(&cfg.c, C.sizeof_mq_topic_config)
	for _, o := range opts {
		o(&cfg)
	}
	p := b.acquire()
	if p == 0 {
		return closedError(op)
	}
	defer b.release()
	n, err := cname(op, "topic", name)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(n))
	return direct(op, func() C.mq_status { return C.mq_topic_create(cBroker(p), n, &cfg.c) })
}

// DeleteTopic deletes a topic (library 1.1). When it returns the name is free: every call by
// name returns ErrNoTopic, and CreateTopic makes a new, empty topic that shares nothing with
// the old one (no messages, groups or offsets). What was using the topic:
//
//   - Publish, PublishBatch, Poll, AckPoll and Member polls blocked on it return ErrNoTopic at
//     once; a call that raced the deletion either took effect before it or returns ErrNoTopic.
//   - Its push subscriptions stop: no handler is called afterwards (one already running
//     finishes, its Message intact). The *Subscription stays valid; Close it as usual (its
//     OnRelease runs then).
//   - Members of its groups: every call but Close and ID returns ErrNoTopic, and OnRebalance
//     runs no more. Close them as usual.
//   - Messages already handed out are Go copies: they stay valid.
//   - A group of another topic that dead-letters into it: the poll that must dead-letter a
//     message returns ErrNoTopic and the message stays at the group's head.
//
// It never blocks on the topic's waiters (it wakes them) and is safe from a handler or
// callback. ErrNoTopic when there is no topic of that name, ErrInvalid for an illegal name,
// ErrClosed after Shutdown or Close.
func (b *Broker) DeleteTopic(name string) error {
	const op = "delete topic"
	p := b.acquire()
	if p == 0 {
		return closedError(op)
	}
	defer b.release()
	n, err := cname(op, "topic", name)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(n))
	return direct(op, func() C.mq_status { return C.mq_topic_delete(cBroker(p), n) })
}

// GroupOption configures a group subscription (Subscribe).
type GroupOption func(*groupOptions) error

type groupOptions struct {
	start         Start
	hasStart      bool
	maxDeliveries uint32
	hasMax        bool
	deadLetter    string
	hasDeadLetter bool
	share         ShareMode
	hasShare      bool
	maxAcquired   uint32
	hasAcquired   bool
}

// StartAt sets where a new group begins (default StartLatest).
func StartAt(s Start) GroupOption {
	return func(g *groupOptions) error { g.start, g.hasStart = s, true; return nil }
}

// MaxDeliveries caps how often a message is handed to the group: the poll that would hand it
// out once more moves it to the dead-letter topic instead (DeadLetterTopic, required with it).
func MaxDeliveries(n int) GroupOption {
	return func(g *groupOptions) error {
		if n < 0 || int64(n) > math.MaxUint32 {
			return invalid("subscribe", fmt.Sprintf("max deliveries %d is out of range (0 to %d)", n, uint32(math.MaxUint32)))
		}
		g.maxDeliveries, g.hasMax = uint32(n), true
		return nil
	}
}

// DeadLetterTopic names the existing topic that receives the group's poison messages.
func DeadLetterTopic(topic string) GroupOption {
	return func(g *groupOptions) error {
		g.deadLetter, g.hasDeadLetter = topic, true
		return nil
	}
}

// ShareMode is what kind of group Subscribe makes (library 1.6, Share).
type ShareMode int32

const (
	// ShareNone (the default): an ordered group. Each partition is handed out in offset order
	// under one lease; acks are cumulative.
	ShareNone ShareMode = C.MQ_SHARE_NONE
	// ShareAll: a share group (a task queue, Kafka's share groups). Any number of polls share a
	// partition; each acquires messages no other poll holds, each under its own lock, and
	// settles them one by one, in any order (Broker.Settle).
	ShareAll ShareMode = C.MQ_SHARE_ALL
	// ShareKey: a key-shared group (Pulsar's Key_Shared): a share group that does not acquire a
	// message while an earlier one with the same key is unsettled, so each key's messages are
	// handed out, and settled, one at a time in offset order. Keyless messages are free.
	ShareKey ShareMode = C.MQ_SHARE_KEY
)

// Share makes the group a share group (library 1.6; ShareAll or ShareKey), mq as a task queue:
// any number of consumers Poll the same partition, each poll acquires up to max messages that
// no other poll holds, each under its own lock of the topic's ack timeout, and each acquired
// message is settled on its own with Broker.Settle (accept, release, reject, renew), its
// Message.DeliveryCount proving that the acquisition is still the current one. A lock that
// runs out makes the message available again. MaxDeliveries and DeadLetterTopic work as for an
// ordered group; delayed messages (WithDelay) are skipped until due. In a share group Ack
// accepts one acquired message (no delivery-count check), Nack and NackAfter release all the
// group's acquired messages of the partition and ExtendLease renews their locks.
//
// Push subscriptions (SubscribeFunc) and members (Join) take partitions exclusively and
// refuse a share group with ErrInvalid; the Kafka engine refuses it with ErrUnsupported.
func Share(m ShareMode) GroupOption {
	return func(g *groupOptions) error { g.share, g.hasShare = m, true; return nil }
}

// MaxAcquired bounds how many messages of one partition a share group holds acquired at once
// (library 1.6; 0 = the library's default, 2000; at most 1,000,000). A poll that finds the
// limit reached waits until a message is settled or a lock runs out; publishers are not slowed
// by it. Only for share groups: with ShareNone, any n but 0 is ErrInvalid.
func MaxAcquired(n int) GroupOption {
	return func(g *groupOptions) error {
		if n < 0 || int64(n) > math.MaxUint32 {
			return invalid("subscribe", fmt.Sprintf("max acquired %d is out of range (0 to 1000000)", n))
		}
		g.maxAcquired, g.hasAcquired = uint32(n), true
		return nil
	}
}

// Subscribe subscribes a consumer group to a topic (at the end of the log, unless
// StartAt(StartEarliest)). Every group receives every message. ErrExists if it already is.
// Share(ShareAll) or Share(ShareKey) makes it a share group (see Share).
func (b *Broker) Subscribe(topic, group string, opts ...GroupOption) error {
	const op = "subscribe"
	var g groupOptions
	for _, o := range opts {
		if err := o(&g); err != nil {
			return err
		}
	}
	p := b.acquire()
	if p == 0 {
		return closedError(op)
	}
	defer b.release()
	var names cnames
	defer names.free()
	t, err := names.add(op, "topic", topic)
	if err != nil {
		return err
	}
	gr, err := names.add(op, "group", group)
	if err != nil {
		return err
	}
	var o C.mq_group_options
	C.mq_group_options_init(&o, C.sizeof_mq_group_options)
	if g.hasStart {
		o.start = C.int32_t(g.start)
	}
	if g.hasMax {
		o.max_deliveries = C.uint32_t(g.maxDeliveries)
	}
	if g.hasShare {
		o.share = C.int32_t(g.share)
	}
	if g.hasAcquired {
		o.max_acquired = C.uint32_t(g.maxAcquired)
	}
	if g.hasDeadLetter {
		if o.dead_letter_topic, err = names.add(op, "dead-letter topic", g.deadLetter); err != nil {
			return err
		}
	}
	return direct(op, func() C.mq_status { return C.mq_group_subscribe(cBroker(p), t, gr, &o) })
}

// Unsubscribe removes a group: its cursors go, and what only it held back is trimmed at once
// (blocked publishers wake). Its push subscriptions stop calling their handlers. Its members'
// calls return ErrNoGroup (a waiting member Poll at once) and their rebalance callbacks are not
// called any more; close them as usual.
func (b *Broker) Unsubscribe(topic, group string) error {
	const op = "unsubscribe"
	p := b.acquire()
	if p == 0 {
		return closedError(op)
	}
	defer b.release()
	var names cnames
	defer names.free()
	t, err := names.add(op, "topic", topic)
	if err != nil {
		return err
	}
	gr, err := names.add(op, "group", group)
	if err != nil {
		return err
	}
	return direct(op, func() C.mq_status { return C.mq_group_unsubscribe(cBroker(p), t, gr) })
}

func cbool(v bool) C.int {
	if v {
		return 1
	}
	return 0
}
