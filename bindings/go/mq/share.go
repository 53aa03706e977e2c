package mq

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"fmt"
	"math"
	"time"
)

// SettleAction is how Settle settles a message a share group acquired (library 1.6,
// mq_settle).
type SettleAction int32

const (
	// SettleAccept: done; the message is never handed out again.
	SettleAccept SettleAction = C.MQ_SETTLE_ACCEPT
	// SettleRelease: hand it out again, at once (Settle) or after a delay (SettleAfter).
	SettleRelease SettleAction = C.MQ_SETTLE_RELEASE
	// SettleReject: never again; it goes to the group's dead-letter topic (DeadLetterTopic)
	// with its origin, as MaxDeliveries does, or is dropped without one. GroupInfo.Rejected
	// counts it.
	SettleReject SettleAction = C.MQ_SETTLE_REJECT
	// SettleRenew: keep it; its lock starts over (the topic's ack timeout).
	SettleRenew SettleAction = C.MQ_SETTLE_RENEW
)

// String is the action's constant name in mq.h, e.g. "MQ_SETTLE_ACCEPT".
func (a SettleAction) String() string {
	switch a {
	case SettleAccept:
		return "MQ_SETTLE_ACCEPT"
	case SettleRelease:
		return "MQ_SETTLE_RELEASE"
	case SettleReject:
		return "MQ_SETTLE_REJECT"
	case SettleRenew:
		return "MQ_SETTLE_RENEW"
	}
	return fmt.Sprintf("SettleAction(%d)", int32(a))
}

// Settle settles one message that a Poll of share group group acquired (library 1.6,
// mq_share_settle; see Share): partition, offset and deliveryCount are the Message's as the
// poll handed it out. The delivery count is the acquisition's token: once its lock has run out
// and another poll has acquired the message, the old acquisition's settlement is refused.
// Settlements may come in any order and from any goroutine; Settle never waits.
//
// ErrNotInFlight (the library's message says why) when the message is not held by that
// acquisition: never handed out, already settled, released, its lock ran out, or acquired
// again since. ErrInvalid for a group that is not a share group (ack it with Ack), an unknown
// action or a deliveryCount no C uint32 holds; ErrNoTopic, ErrNoGroup, ErrPartition, ErrClosed as usual. The Kafka engine:
// ErrUnsupported.
func (b *Broker) Settle(topic, group string, partition int, offset int64, deliveryCount int, action SettleAction) error {
	return b.settle(topic, group, partition, offset, deliveryCount, action, 0)
}

// SettleAfter is Settle with a delay: with SettleRelease the message is handed out again no
// sooner than delay later on the broker clock (rounded up to whole milliseconds; meanwhile it
// counts in GroupInfo.Delayed). Only SettleRelease takes a delay: any other action with a
// delay other than 0 is ErrInvalid, as is a negative delay.
func (b *Broker) SettleAfter(topic, group string, partition int, offset int64, deliveryCount int, action SettleAction, delay time.Duration) error {
	return b.settle(topic, group, partition, offset, deliveryCount, action, delay)
}

func (b *Broker) settle(topic, group string, partition int, offset int64, deliveryCount int, action SettleAction, delay time.Duration) error {
	const op = "settle"
	part, err := partition32(op, partition)
	if err != nil {
		return err
	}
	if deliveryCount < 0 || int64(deliveryCount) > math.MaxUint32 {
		return invalid(op, fmt.Sprintf("delivery count %d is out of range (0 to %d)", deliveryCount, uint32(math.MaxUint32)))
	}
	p := b.acquire()
	if p == 0 {
		return closedError(op)
	}
	defer b.release()
	return groupCall(op, topic, group, func(t, g *C.char) C.mq_status {
		return C.mq_share_settle(cBroker(p), t, g, part, C.int64_t(offset), C.uint32_t(deliveryCount),
			C.int32_t(action), C.int64_t(durationMs(delay)))
	})
}
