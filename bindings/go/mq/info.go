package mq

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"strings"
	"time"
	"unsafe"
)

// TopicInfo is a topic's configuration.
type TopicInfo struct {
	Partitions int
	Capacity   int64
	MaxBytes   int64 // 0 = no byte budget
	AckTimeout time.Duration
	Retention  Retention
	MaxAge     time.Duration // 0 = no limit
}

// PartitionInfo is a partition's state.
type PartitionInfo struct {
	Start         int64 // oldest retained offset
	End           int64 // next offset to be published
	Backlog       int64 // End - slowest committed (0 with no groups)
	Capacity      int64
	RetainedBytes int64
	MaxBytes      int64 // 0 = none
	ProducerWaits int64 // publishes that found the partition full and started waiting
	MaxBacklog    int64 // largest backlog seen
	Dropped       int64 // messages trimmed before every group acked them
	// OldestTimestamp is the broker-clock time (ns) of the message at Start; -1 when empty.
	OldestTimestamp int64
	// OldestAge is the broker clock now minus OldestTimestamp; -1 when empty.
	OldestAge time.Duration
}

// GroupInfo is a group's cursor on one partition.
type GroupInfo struct {
	Committed    int64 // every offset below it is acked
	Next         int64 // next offset to hand out
	Lag          int64 // End - Committed
	InFlight     int64 // Next - Committed
	Lost         int64 // messages dropped before this group acked them
	DeadLettered int64 // messages this group sent to its dead-letter topic
	// NextAge is the age of the message at Next on the broker clock; -1 if none.
	NextAge time.Duration
	// PausedUntil is the broker-clock time (ns) a delayed nack holds the group until; 0 if
	// not paused.
	PausedUntil int64

	// Share groups (library 1.6, Share); 0 for an ordered group, OldestUnsettledAge -1. In a
	// share group Committed is the oldest unsettled offset, Next the first offset no poll has
	// looked at, and InFlight Next - Committed.
	Acquired  int64 // messages acquired and not settled (their locks still run)
	Available int64 // messages a poll could acquire now
	Delayed   int64 // messages not handed out before a later time (WithDelay, SettleAfter)
	Rejected  int64 // messages settled with SettleReject (dead-lettered or dropped)
	// OldestUnsettledAge is the age of the oldest unsettled message on the broker clock; -1
	// if none.
	OldestUnsettledAge time.Duration
	// Delivered is the delivery-count histogram of the unsettled messages: how many were
	// handed out once, twice, three times, and four times or more.
	Delivered [4]int64
}

// TopicInfo returns a topic's configuration. Works after Shutdown.
func (b *Broker) TopicInfo(topic string) (TopicInfo, error) {
	const op = "topic info"
	p := b.acquire()
	if p == 0 {
		return TopicInfo{}, closedError(op)
	}
	defer b.release()
	var ci C.mq_topic_info
	t, err := cname(op, "topic", topic)
	if err != nil {
		return TopicInfo{}, err
	}
	defer C.free(unsafe.Pointer(t))
	if err := direct(op, func() C.mq_status {
		return C.mq_topic_get_info(cBroker(p), t, &ci, C.sizeof_mq_topic_info)
	}); err != nil {
		return TopicInfo{}, err
	}
	return TopicInfo{
		Partitions: int(ci.partitions),
		Capacity:   int64(ci.capacity),
		MaxBytes:   int64(ci.max_bytes),
		AckTimeout: time.Duration(ci.ack_timeout_ms) * time.Millisecond,
		Retention:  Retention(ci.retention),
		MaxAge:     time.Duration(ci.max_age_ms) * time.Millisecond,
	}, nil
}

// PartitionInfo returns a partition's state. Works after Shutdown.
func (b *Broker) PartitionInfo(topic string, partition int) (PartitionInfo, error) {
	const op = "partition info"
	part, err := partition32(op, partition)
	if err != nil {
		return PartitionInfo{}, err
	}
	p := b.acquire()
	if p == 0 {
		return PartitionInfo{}, closedError(op)
	}
	defer b.release()
	var ci C.mq_partition_info
	t, err := cname(op, "topic", topic)
	if err != nil {
		return PartitionInfo{}, err
	}
	defer C.free(unsafe.Pointer(t))
	if err := direct(op, func() C.mq_status {
		return C.mq_partition_get_info(cBroker(p), t, part, &ci, C.sizeof_mq_partition_info)
	}); err != nil {
		return PartitionInfo{}, err
	}
	return PartitionInfo{
		Start:           int64(ci.start),
		End:             int64(ci.end),
		Backlog:         int64(ci.backlog),
		Capacity:        int64(ci.capacity),
		RetainedBytes:   int64(ci.retained_bytes),
		MaxBytes:        int64(ci.max_bytes),
		ProducerWaits:   int64(ci.producer_waits),
		MaxBacklog:      int64(ci.max_backlog),
		Dropped:         int64(ci.dropped),
		OldestTimestamp: int64(ci.oldest_timestamp_ns),
		OldestAge:       time.Duration(ci.oldest_age_ns),
	}, nil
}

// GroupInfo returns a group's cursor on a partition. Works after Shutdown.
func (b *Broker) GroupInfo(topic, group string, partition int) (GroupInfo, error) {
	const op = "group info"
	part, err := partition32(op, partition)
	if err != nil {
		return GroupInfo{}, err
	}
	p := b.acquire()
	if p == 0 {
		return GroupInfo{}, closedError(op)
	}
	defer b.release()
	var ci C.mq_group_info
	var names cnames
	defer names.free()
	t, err := names.add(op, "topic", topic)
	if err != nil {
		return GroupInfo{}, err
	}
	g, err := names.add(op, "group", group)
	if err != nil {
		return GroupInfo{}, err
	}
	if err := direct(op, func() C.mq_status {
		return C.mq_group_get_info(cBroker(p), t, g, part, &ci, C.sizeof_mq_group_info)
	}); err != nil {
		return GroupInfo{}, err
	}
	return GroupInfo{
		Committed:    int64(ci.committed),
		Next:         int64(ci.next),
		Lag:          int64(ci.lag),
		InFlight:     int64(ci.in_flight),
		Lost:         int64(ci.lost),
		DeadLettered: int64(ci.dead_lettered),
		NextAge:      time.Duration(ci.next_age_ns),
		PausedUntil:  int64(ci.paused_until_ns),

		Acquired:           int64(ci.acquired),
		Available:          int64(ci.available),
		Delayed:            int64(ci.delayed),
		Rejected:           int64(ci.rejected),
		OldestUnsettledAge: time.Duration(ci.oldest_unsettled_age_ns),
		Delivered: [4]int64{int64(ci.delivered_once), int64(ci.delivered_twice),
			int64(ci.delivered_thrice), int64(ci.delivered_more)},
	}, nil
}

// Describe prints a partition the way the specification's reference trace does, e.g.
// "log 1..3, backlog 3/3; billing 1/4; email 3/3" (groups as committed/next). Works after
// Shutdown.
func (b *Broker) Describe(topic string, partition int) (string, error) {
	const op = "describe"
	part, err := partition32(op, partition)
	if err != nil {
		return "", err
	}
	p := b.acquire()
	if p == 0 {
		return "", closedError(op)
	}
	defer b.release()
	t, err := cname(op, "topic", topic)
	if err != nil {
		return "", err
	}
	defer C.free(unsafe.Pointer(t))
	return text(op, func(buf *C.char, cap C.size_t, needed *C.size_t) C.mq_status {
		return C.mq_partition_describe(cBroker(p), t, part, buf, cap, needed)
	})
}

// Topics lists the topic names in creation order. Works after Shutdown.
func (b *Broker) Topics() ([]string, error) {
	const op = "topics"
	p := b.acquire()
	if p == 0 {
		return nil, closedError(op)
	}
	defer b.release()
	s, err := text(op, func(buf *C.char, cap C.size_t, needed *C.size_t) C.mq_status {
		return C.mq_topic_list(cBroker(p), buf, cap, needed)
	})
	if err != nil {
		return nil, err
	}
	return lines(s), nil
}

// Groups lists a topic's groups in subscription order. Works after Shutdown.
func (b *Broker) Groups(topic string) ([]string, error) {
	const op = "groups"
	p := b.acquire()
	if p == 0 {
		return nil, closedError(op)
	}
	defer b.release()
	t, err := cname(op, "topic", topic)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(t))
	s, err := text(op, func(buf *C.char, cap C.size_t, needed *C.size_t) C.mq_status {
		return C.mq_group_list(cBroker(p), t, buf, cap, needed)
	})
	if err != nil {
		return nil, err
	}
	return lines(s), nil
}

// lines splits the library's "name\n" lists.
func lines(s string) []string {
	names := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(names) == 1 && names[0] == "" {
		return []string{}
	}
	return names
}
