package mq

// #include "shim.h"
import "C"

import (
	"sync"
	"unsafe"
)

// Message is a delivered message. Its Key, Value and header values are Go memory owned by the
// caller: the library copies the messages of a poll into Go memory while it still holds the
// lock that keeps them alive, so they stay valid after the ack and for as long as they are
// referenced.
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
// not size a huge buffer.
const maxPoll = 4096

// Batch is reusable storage for polls (Broker.PollBatch, Member.PollBatch): the messages of
// the last poll into it and the buffer the library copied them into, which their bytes are
// slices of. A poll into a Batch reuses that storage, so in steady state it allocates nothing;
// the price is that its messages are valid only until the next poll into the same Batch (copy
// what you keep longer). The zero value is ready to use. A Batch is not safe for concurrent
// use.
type Batch struct {
	// Messages are those of the last poll into the Batch.
	Messages []Message
	buf      copyBuf
}

// copyBuf is what a copying poll (mq_*_poll_copy) writes into: Go memory, as uint64 words
// because the library wants it 8-byte aligned. It holds no pointers, so cgo may hand it to C
// for the call (and the poll's wait) without scanning it, and nothing in it points into the
// library once the call returns: its bytes are safe to read after any ack.
type copyBuf struct {
	words []uint64
	// small counts the polls in a row that stopped for want of room (see grow).
	small int
}

const (
	copyEntry = C.sizeof_mq_copied_message
	// The least a buffer starts with (room for 64 messages of 1 KiB); grow learns the rest.
	copyStart = 64 << 10
	// A buffer that outgrew this is not kept in the pool of Poll's buffers.
	copyKeep = 4 << 20
)

func (c *copyBuf) bytes() []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(c.words))), len(c.words)*8)
}

// ensure makes the buffer at least n bytes (and at least copyStart); its content goes.
func (c *copyBuf) ensure(n int) {
	if n < copyStart {
		n = copyStart
	}
	if len(c.words)*8 < n {
		c.words = make([]uint64, (n+7)/8)
	}
}

// grow sizes the buffer for the next poll after one that handed out count of max messages and
// left room bytes unused. Only what fits is handed out, so a poll that came back short with
// little room left probably stopped for want of room: after two of those in a row (one could
// be a partition running dry just as the room did) the buffer doubles, up to what max
// messages of the average size take.
func (c *copyBuf) grow(count, max int, used, room int) {
	if count == 0 || count >= max {
		c.small = 0
		return
	}
	avg := used/count + copyEntry
	if room >= 2*avg {
		c.small = 0
		return
	}
	if c.small++; c.small < 2 {
		return
	}
	c.small = 0
	want := len(c.words) * 16
	if limit := max*avg + C.sizeof_mq_copy_header; want > limit {
		want = limit
	}
	if want > len(c.words)*8 {
		c.words = make([]uint64, (want+7)/8)
	}
}

// copyBufs are the buffers of Poll and AckPoll (which copy the messages out of them, since
// the caller keeps those): per P, so a consumer goroutine in steady state reuses one.
var copyBufs = sync.Pool{New: func() any { return new(copyBuf) }}

// decode makes Messages of the count entries of a filled buffer. With keep, the messages'
// bytes are slices of buf itself (a Batch's buffer); without, the byte region is copied out
// once into a buffer of its own size, and they are slices of that.
func decode(buf []byte, count int, out []Message, keep bool) []Message {
	if cap(out) < count {
		out = make([]Message, count)
	}
	out = out[:count]
	if count == 0 {
		return out
	}
	head := (*C.mq_copy_header)(unsafe.Pointer(&buf[0]))
	data, base := buf, 0
	if !keep {
		base = int(head.bytes_at)
		data = make([]byte, len(buf)-base)
		copy(data, buf[base:])
	}
	span := func(at, n C.uint64_t) []byte {
		s := int(at) - base
		e := s + int(n)
		return data[s:e:e]
	}
	entries := unsafe.Slice((*C.mq_copied_message)(unsafe.Pointer(&buf[C.sizeof_mq_copy_header])), count)
	for i := range entries {
		e := &entries[i]
		m := Message{
			Partition:     int(e.partition),
			Offset:        int64(e.offset),
			Value:         span(e.payload_at, e.payload_len),
			DeliveryCount: int(e.delivery_count),
			Timestamp:     int64(e.timestamp_ns),
			Lost:          int64(e.lost),
		}
		if e.key_at != C.MQ_COPY_ABSENT {
			m.Key = span(e.key_at, e.key_len)
		}
		if e.headers_at != C.MQ_COPY_ABSENT && e.header_count > 0 {
			hs := unsafe.Slice((*C.mq_copied_header)(unsafe.Pointer(&buf[e.headers_at])), int(e.header_count))
			m.Headers = make([]Header, len(hs))
			for j := range hs {
				h := &hs[j]
				m.Headers[j] = Header{Key: string(span(h.name_at, h.name_len)), Value: span(h.value_at, h.value_len)}
			}
		}
		if e.dead_letter_at != C.MQ_COPY_ABSENT {
			d := (*C.mq_copied_dead_letter)(unsafe.Pointer(&buf[e.dead_letter_at]))
			m.DeadLetter = &DeadLetter{
				Topic:         string(span(d.topic_at, d.topic_len)),
				Group:         string(span(d.group_at, d.group_len)),
				Partition:     int(d.partition),
				Offset:        int64(d.offset),
				DeliveryCount: int(d.delivery_count),
			}
		}
		out[i] = m
	}
	return out
}

// copyPoll runs a copying poll: call makes it into the buffer it is given. The buffer is
// grown and the poll made again (by again, without the ack of an AckPoll, which stands) when
// not even the first message fits. It returns the final result; with MQ_OK, into.Messages
// are the messages (slices of into's buffer when keep, else of a copy).
func copyPoll(into *Batch, keep bool, max int, call, again func(buf unsafe.Pointer, size C.size_t) C.mqgo_result) C.mqgo_result {
	c := &into.buf
	if !keep {
		c = copyBufs.Get().(*copyBuf)
	}
	// Room for max entries of small messages at first; grow learns the rest.
	c.ensure(max*(copyEntry+32) + C.sizeof_mq_copy_header)
	for {
		b := c.bytes()
		r := call(unsafe.Pointer(&b[0]), C.size_t(len(b)))
		if r.status == C.MQ_ERR_TOO_LARGE && r.needed > C.size_t(len(b)) {
			failure("poll", r) // frees the message of the refusal
			c.ensure(int(r.needed))
			call = again
			continue
		}
		if r.status == C.MQ_OK {
			n := int(r.count)
			into.Messages = decode(b, n, into.Messages[:0], keep)
			head := (*C.mq_copy_header)(unsafe.Pointer(&b[0]))
			used := len(b) - int(head.bytes_at)
			c.grow(n, max, used, int(head.bytes_at)-C.sizeof_mq_copy_header-n*copyEntry)
		}
		if !keep && len(c.words)*8 <= copyKeep {
			copyBufs.Put(c)
		}
		return r
	}
}

// copyView copies a message view the library lends a push handler into Go memory (valid
// until the handler returns, on the thread that polled it: nothing acks past it meanwhile).
func copyView(v *C.mq_message) *Message {
	n := int(v.key_len) + int(v.payload_len)
	hs := unsafe.Slice(v.headers, int(v.header_count))
	for _, h := range hs {
		n += int(h.value_len)
	}
	buf := make([]byte, n)
	take := func(p unsafe.Pointer, l C.size_t) []byte {
		k := copy(buf, unsafe.Slice((*byte)(p), int(l)))
		s := buf[:k:k]
		buf = buf[k:]
		return s
	}
	m := &Message{
		Partition:     int(v.partition),
		Offset:        int64(v.offset),
		DeliveryCount: int(v.delivery_count),
		Timestamp:     int64(v.timestamp_ns),
		Lost:          int64(v.lost),
	}
	if v.key != nil {
		m.Key = take(v.key, v.key_len)
	}
	m.Value = take(v.payload, v.payload_len)
	if len(hs) > 0 {
		m.Headers = make([]Header, len(hs))
		for j, h := range hs {
			m.Headers[j] = Header{Key: C.GoStringN((*C.char)(h.name), C.int(h.name_len)), Value: take(h.value, h.value_len)}
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
	return m
}
