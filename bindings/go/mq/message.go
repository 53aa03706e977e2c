package mq

// #include "shim.h"
import "C"

import "unsafe"

// Message is a delivered message. Its Key, Value and header values are Go memory owned by the
// caller: the messages of one poll share one buffer, copied out of the log in the same cgo
// call as the poll, so they stay valid after the ack and for as long as they are referenced.
type Message struct {
	Partition int
	Offset    int64
	Key       []byte // nil when published without a key
	Value     []byte
	Headers   []Header // in publish order; nil when none
	// DeliveryCount is how many polls have handed this offset to this group, this one
	// included: 1 on first delivery. A Nack or an expired lease alone does not count; the poll
	// that hands the message out again does. In a push subscription, the rest of a polled batch
	// that the loop gives back unseen (after a handler fails, or when it stops) does not count,
	// so a failing message never takes the ones behind it to the dead-letter topic before a
	// handler saw them.
	DeliveryCount int
	// Timestamp is the broker clock (nanoseconds, monotonic: not wall time) at publish.
	Timestamp int64
	// Lost counts the messages of this partition the group lost (dropped by RetainBounded or
	// MaxAge before it acked them) since the message it was handed before this one.
	Lost int64
	// DeadLetter is non-nil when this message was dead-lettered into this topic: where it
	// came from.
	DeadLetter *DeadLetter
}

// DeadLetter says where a dead-lettered message came from.
type DeadLetter struct {
	Topic         string // the topic it was published to
	Group         string // the group that gave up on it
	Partition     int
	Offset        int64
	DeliveryCount int // times that group had been handed it
}

// maxPoll bounds one poll (a larger max is served in several polls), so that a huge max does
// not size a huge scratch array.
const maxPoll = 4096

// viewScratch is C memory for n message views (at least one).
func viewScratch(n int) cbuf {
	if n < 1 {
		n = 1
	}
	return getCBuf(uintptr(n) * C.sizeof_mq_message)
}

// views is the scratch of a poll: n message views in C memory.
func views(b cbuf, n int) []C.mq_message {
	return unsafe.Slice((*C.mq_message)(b.p), n)
}

// Batch is reusable storage for polls (Broker.PollBatch, Member.PollBatch): the messages of
// the last poll into it and the one buffer their bytes live in. A poll into a Batch reuses
// that storage, so in steady state it allocates nothing; the price is that its messages are
// valid only until the next poll into the same Batch (copy what you keep longer). The zero
// value is ready to use. A Batch is not safe for concurrent use.
type Batch struct {
	// Messages are those of the last poll into the Batch.
	Messages []Message
	buf      []byte
}

// fill copies views into the batch's storage, growing it as needed.
func (b *Batch) fill(views []C.mq_message) {
	b.Messages, b.buf = copyInto(views, b.Messages[:0], b.buf[:0])
}

// cbytes views n bytes of C memory (only read while the view is valid).
func cbytes(p unsafe.Pointer, n C.size_t) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(p), int(n))
}

// copyMessages copies views into Go memory: one buffer for every message's bytes, one slice
// of Messages. It runs before the call that polled them returns to its caller, while the
// views are valid (until the group acks past them).
func copyMessages(views []C.mq_message) []Message {
	msgs, _ := copyInto(views, nil, nil)
	return msgs
}

// copyInto is copyMessages into the storage of out and buf when they are large enough (a
// Batch being reused), else into new storage, which it returns.
func copyInto(views []C.mq_message, out []Message, buf []byte) ([]Message, []byte) {
	total := 0
	for i := range views {
		v := &views[i]
		total += int(v.key_len) + int(v.payload_len)
		if v.header_count > 0 {
			for _, h := range unsafe.Slice(v.headers, int(v.header_count)) {
				total += int(h.value_len)
			}
		}
	}
	if cap(buf) < total {
		buf = make([]byte, total+total/4)
	}
	buf = buf[:total]
	if cap(out) < len(views) {
		out = make([]Message, len(views))
	}
	out = out[:len(views)]
	off := 0
	for i := range views {
		v := &views[i]
		kl, pl := int(v.key_len), int(v.payload_len)
		var key []byte
		if v.key != nil && uintptr(v.payload) == uintptr(v.key)+uintptr(kl) {
			// Key and payload lie back to back in the log: one copy.
			copy(buf[off:off+kl+pl], unsafe.Slice((*byte)(v.key), kl+pl))
			key = buf[off : off+kl : off+kl]
			off += kl
		} else if v.key != nil {
			copy(buf[off:off+kl], cbytes(v.key, v.key_len))
			key = buf[off : off+kl : off+kl]
			off += kl
			copy(buf[off:off+pl], cbytes(v.payload, v.payload_len))
		} else {
			copy(buf[off:off+pl], cbytes(v.payload, v.payload_len))
		}
		out[i] = Message{
			Partition:     int(v.partition),
			Offset:        int64(v.offset),
			Key:           key,
			Value:         buf[off : off+pl : off+pl],
			DeliveryCount: int(v.delivery_count),
			Timestamp:     int64(v.timestamp_ns),
			Lost:          int64(v.lost),
		}
		off += pl
		if v.header_count > 0 || v.dead_letter != nil {
			off = copyRare(&out[i], v, buf, off)
		}
	}
	return out, buf
}

// copyRare copies a view's headers and dead-letter origin (most messages have neither).
func copyRare(m *Message, v *C.mq_message, buf []byte, off int) int {
	if v.header_count > 0 {
		hs := unsafe.Slice(v.headers, int(v.header_count))
		m.Headers = make([]Header, len(hs))
		for j, h := range hs {
			n := int(h.value_len)
			copy(buf[off:off+n], cbytes(h.value, h.value_len))
			m.Headers[j] = Header{Key: string(cbytes(h.name, h.name_len)), Value: buf[off : off+n : off+n]}
			off += n
		}
	}
	if d := v.dead_letter; d != nil {
		m.DeadLetter = &DeadLetter{
			Topic:         C.GoString(d.topic),
			Group:         C.GoString(d.group),
			Partition:     int(d.partition),
			Offset:        int64(d.offset),
			DeliveryCount: int(d.delivery_count),
		}
	}
	return off
}
