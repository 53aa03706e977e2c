package mq

// #include "shim.h"
import "C"

import (
	"context"
	"time"
	"unsafe"
)

// Header is a message header: a name and a value, both byte strings. A message carries an
// ordered list of them; duplicates are allowed.
type Header struct {
	Key   string
	Value []byte
}

// Record is one message of a batch (PublishBatch). A nil Key means no key (round-robin over
// partitions); a non-nil empty Key is a key, hashed like any other.
type Record struct {
	Key     []byte
	Value   []byte
	Headers []Header
	// Delay (library 1.5) holds the record's delivery: it is appended at once, but no group is
	// handed it before the broker clock reaches its publish time + Delay (rounded up to whole
	// milliseconds; 0 hands it out at once). A group hands out a partition in offset order, so
	// a delayed record holds the records after it in its partition until it is due. A delay
	// below 0 or above 2^40 ms fails the batch with ErrInvalid naming the record; the Kafka
	// engine refuses any delay with ErrUnsupported. See WithDelay for a single Publish.
	Delay time.Duration
}

// PublishResult says where a record of a batch went: Offset is -1 for a record that was not
// appended (the batch stopped part-way).
type PublishResult struct {
	Partition int
	Offset    int64
}

// PublishOption configures one Publish.
type PublishOption func(*publishOptions)

type publishOptions struct {
	headers []Header
	delay   time.Duration
}

// WithHeaders attaches headers to the message, in order.
func WithHeaders(h ...Header) PublishOption {
	return func(o *publishOptions) { o.headers = append(o.headers, h...) }
}

// WithDelay delays the message's delivery (library 1.5): Publish appends it at once (it is
// counted and retained like any other), but no group is handed it before the broker clock
// reaches its publish time + d, rounded up to whole milliseconds; 0 hands it out at once.
// Polls waiting on its partition wake when it is due.
//
// A group hands out a partition in offset order, so a delayed message holds the messages after
// it in its partition, for every group, until it is due (per-key order is kept): publish
// delayed messages to a topic of their own, or with a key whose partition carries nothing
// urgent, when that matters. A delay below 0 or above 2^40 ms is ErrInvalid (nothing
// appended); the Kafka engine refuses any delay with ErrUnsupported. Record.Delay is the same
// for each record of a PublishBatch.
func WithDelay(d time.Duration) PublishOption {
	return func(o *publishOptions) { o.delay = d }
}

// Publish appends a message to a topic and returns where it went. The key picks the
// partition (Kafka's partitioner: murmur2(key) % partitions); a nil key goes round-robin.
// Key, value and headers are copied before Publish returns. WithHeaders adds headers,
// WithDelay a delivery delay (a delayed message goes to the library as a batch of one).
//
// While the partition is full, Publish waits until ctx's deadline (without one, for as long
// as it takes); then it fails with ErrFull and nothing is appended. A context that is already
// done means "do not wait". Cancelling ctx ends the wait at once with ErrCancelled (which
// also matches context.Canceled). The waiting goroutine holds no OS thread (library 1.4; on
// the Kafka engine it does).
func (b *Broker) Publish(ctx context.Context, topic string, key, value []byte, opts ...PublishOption) (partition int, offset int64, err error) {
	const op = "publish"
	o := publishOpts(opts)
	if o.delay != 0 {
		return publishDelayed(Record{Key: key, Value: value, Headers: o.headers, Delay: o.delay},
			func(rs []Record) ([]PublishResult, error) { return b.publishBatch(ctx, op, topic, rs) })
	}
	p := b.acquire()
	if p == 0 {
		return -1, -1, closedError(op)
	}
	var r C.mqgo_result
	if b.canPend(topic) {
		r, err = publishAsync(ctx, p, topic, key, value, o.headers)
	} else {
		r, err = publishBlocking(ctx, p, topic, key, value, o.headers)
	}
	b.release()
	return published(ctx, op, r, err)
}

// publishOpts applies a Publish's options.
func publishOpts(opts []PublishOption) (o publishOptions) {
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// published is a Publish's outcome from the shim's result.
func published(ctx context.Context, op string, r C.mqgo_result, err error) (partition int, offset int64, _ error) {
	if err != nil {
		return -1, -1, err
	}
	if r.status != C.MQ_OK {
		return -1, -1, waitFailure(op, r, ctx)
	}
	return int(r.partition), int64(r.offset), nil
}

// publishDelayed is a Publish with a delay: the C API's single publish has none, so the
// message goes as a batch of one through batch (same waits, same statuses; the record is
// named "record 0" in the library's text for a bad delay).
func publishDelayed(r Record, batch func([]Record) ([]PublishResult, error)) (partition int, offset int64, err error) {
	res, err := batch([]Record{r})
	if err != nil {
		return -1, -1, err
	}
	return res[0].Partition, res[0].Offset, nil
}

// publishAsync is Publish through mq_topic_publish_async: key, value and headers are copied
// into one C buffer (the library may read them until done), and a call that must wait parks.
func publishAsync(ctx context.Context, p C.mqgo_broker, topic string, key, value []byte, headers []Header) (C.mqgo_result, error) {
	const op = "publish"
	a := getAsync()
	if a == nil {
		return C.mqgo_result{}, noMemory(op)
	}
	// Key, value and headers in the call's own scratch when they fit, else in a buffer of
	// their own.
	var m marshal
	bytes := len(key) + len(value) + headerBytes(headers)
	own := marshalSize(bytes, len(headers)) > asyncScratch
	if !own {
		m.layoutAt(a.scratch(), bytes, len(headers))
	} else if !m.reserve(bytes, len(headers)) {
		putAsync(a)
		return C.mqgo_result{}, noMemory(op)
	}
	var hdrs C.mqgo_mem
	if len(headers) > 0 {
		m.fillHeaders(m.hdrs, headers)
		hdrs = C.mqgo_mem(uintptr(unsafe.Pointer(&m.hdrs[0])))
	}
	var k C.mqgo_mem
	if key != nil {
		k = C.mqgo_mem(uintptr(m.put(key)))
	}
	v := C.mqgo_mem(uintptr(m.put(value)))
	tok, err := asyncToken(ctx)
	if err != nil {
		putAsync(a)
		m.release()
		return C.mqgo_result{}, err
	}
	t, tl := cstr(topic)
	r := C.mqgo_publish_async(p, a.mem(), t, tl, k, C.size_t(len(key)), v, C.size_t(len(value)),
		hdrs, C.size_t(len(headers)), waitMs(ctx), tokenOf(tok))
	triggered := false
	if r.status == C.MQ_PENDING {
		r, triggered = a.wait(ctx, tok)
	}
	releaseToken(tok, triggered)
	putAsync(a)
	if own {
		m.release()
	}
	return r, nil
}

// publishBlocking is Publish through the blocking call (the Kafka engine): the key and value
// are passed as they are, for the call only.
func publishBlocking(ctx context.Context, p C.mqgo_broker, topic string, key, value []byte, headers []Header) (C.mqgo_result, error) {
	return withHeaders("publish", headers, func(hdrs C.mqgo_mem) (C.mqgo_result, error) {
		var w waiter
		if err := w.start(ctx); err != nil {
			return C.mqgo_result{}, err
		}
		t, tl := cstr(topic)
		r := C.mqgo_publish(p, t, tl, bytesPtr(key), C.size_t(len(key)), bytesPtr(value), C.size_t(len(value)),
			hdrs, C.size_t(len(headers)), waitMs(ctx), w.tok)
		w.end()
		return r, nil
	})
}

// withHeaders makes a blocking publish's call with its headers laid out in C memory (0: none),
// for the call only.
func withHeaders(op string, headers []Header, call func(hdrs C.mqgo_mem) (C.mqgo_result, error)) (C.mqgo_result, error) {
	if len(headers) == 0 {
		return call(0)
	}
	var m marshal
	if !m.headersOnly(headers) {
		return C.mqgo_result{}, noMemory(op)
	}
	defer m.release()
	return call(C.mqgo_mem(uintptr(unsafe.Pointer(&m.hdrs[0]))))
}

// PublishBatch appends records in one call, taking each partition's lock once for all of its
// records; records of one partition are appended in input order. It validates every record
// before appending any. The wait (ctx) covers the whole batch. If the batch stops part-way
// (ErrFull, ErrClosed, ErrCancelled), the results say which records went where: for each
// partition the published records are a prefix, and the others have Offset -1. A batch refused
// as a whole (ErrInvalid, ErrNoTopic, ErrTooLarge, ...) appended nothing and returns no
// results. Each record carries its own Delay; a record that is due still waits behind an
// earlier one of its partition that is not. The waiting goroutine holds no OS thread (library
// 1.4; on the Kafka engine it does).
func (b *Broker) PublishBatch(ctx context.Context, topic string, records []Record) ([]PublishResult, error) {
	return b.publishBatch(ctx, "publish batch", topic, records)
}

// publishBatch is PublishBatch, its errors named op.
func (b *Broker) publishBatch(ctx context.Context, op, topic string, records []Record) ([]PublishResult, error) {
	return publishRecords(ctx, op, records, func(recs, res C.mqgo_mem, count C.size_t) (C.mqgo_result, error) {
		p := b.acquire()
		if p == 0 {
			return C.mqgo_result{}, closedError(op)
		}
		defer b.release()
		t, tl := cstr(topic)
		if !b.canPend(topic) {
			var w waiter
			if err := w.start(ctx); err != nil {
				return C.mqgo_result{}, err
			}
			r := C.mqgo_publish_batch(p, t, tl, recs, count, waitMs(ctx), w.tok, res)
			w.end()
			return r, nil
		}
		// The records, their bytes and the results are in C memory already (packed).
		a := getAsync()
		if a == nil {
			return C.mqgo_result{}, noMemory(op)
		}
		tok, err := asyncToken(ctx)
		if err != nil {
			putAsync(a)
			return C.mqgo_result{}, err
		}
		r := C.mqgo_publish_batch_async(p, a.mem(), t, tl, recs, count, waitMs(ctx), tokenOf(tok), res)
		triggered := false
		if r.status == C.MQ_PENDING {
			r, triggered = a.wait(ctx, tok)
		}
		releaseToken(tok, triggered)
		putAsync(a)
		return r, nil
	})
}

// publishRecords lays records out in C memory (packed), makes call with them and the results
// array, and reads the results back. An error of call means nothing was called.
func publishRecords(ctx context.Context, op string, records []Record,
	call func(recs, res C.mqgo_mem, count C.size_t) (C.mqgo_result, error)) ([]PublishResult, error) {
	var pk packed
	if !pk.layout(records) {
		return nil, noMemory(op)
	}
	defer pk.release()
	var recs, res C.mqgo_mem
	if len(records) > 0 {
		recs, res = C.mqgo_mem(uintptr(unsafe.Pointer(&pk.recs[0]))), C.mqgo_mem(uintptr(unsafe.Pointer(&pk.res[0])))
	}
	r, err := call(recs, res, C.size_t(len(records)))
	if err != nil {
		return nil, err
	}
	var out []PublishResult
	// The library writes every result or none (a batch refused as a whole); none were
	// written if every partition is still the -1 layout put there.
	written := false
	for i := range pk.res {
		written = written || pk.res[i].partition != -1
	}
	if written {
		out = make([]PublishResult, len(records))
		for i := range out {
			out[i] = PublishResult{Partition: int(pk.res[i].partition), Offset: int64(pk.res[i].offset)}
		}
	}
	if r.status != C.MQ_OK {
		return out, waitFailure(op, r, ctx)
	}
	return out, nil
}

// bytesPtr passes a Go byte slice to C: nil stays NULL (no key), and a non-nil empty slice
// gets a non-NULL pointer (an empty key is a key). As a char pointer, cgo knows there is no
// Go pointer behind it to check.
func bytesPtr(b []byte) *C.char {
	return (*C.char)(unsafe.Pointer(unsafe.SliceData(b)))
}

// marshal lays out the headers of one Publish in C memory: the structs the library reads and,
// after them, the bytes they point to (copied from Go, so nothing needs pinning and cgo's
// pointer check has nothing to scan). The library copies everything before the call returns.
type marshal struct {
	buf  cbuf
	hdrs []C.mq_header
	data []byte // C memory
	used int
}

func headerBytes(hs []Header) int {
	n := 0
	for _, h := range hs {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// reserve lays out the buffer: headers, then the bytes (with one spare, so that every pointer,
// even that of an empty value at the very end, lies inside it). False when out of memory.
func (m *marshal) reserve(bytes, hdrs int) bool {
	m.buf = getCBuf(marshalSize(bytes, hdrs))
	if m.buf.p == nil {
		return false
	}
	m.layoutAt(m.buf.p, bytes, hdrs)
	return true
}

// marshalSize is the C memory reserve takes for bytes and hdrs headers.
func marshalSize(bytes, hdrs int) uintptr {
	return uintptr(hdrs)*C.sizeof_mq_header + uintptr(bytes) + 1
}

// layoutAt lays the buffer out in C memory p of at least marshalSize(bytes, hdrs) bytes that
// the caller owns (release then gives nothing back).
func (m *marshal) layoutAt(p unsafe.Pointer, bytes, hdrs int) {
	m.hdrs = unsafe.Slice((*C.mq_header)(p), hdrs)
	p = unsafe.Add(p, uintptr(hdrs)*C.sizeof_mq_header)
	m.data = unsafe.Slice((*byte)(p), bytes+1)
	m.used = 0
}

func (m *marshal) release() {
	putCBuf(m.buf)
	*m = marshal{}
}

// put copies b into data and returns its address there.
func (m *marshal) put(b []byte) unsafe.Pointer {
	p := unsafe.Pointer(&m.data[m.used])
	m.used += copy(m.data[m.used:], b)
	return p
}

func (m *marshal) putString(s string) unsafe.Pointer {
	p := unsafe.Pointer(&m.data[m.used])
	m.used += copy(m.data[m.used:], s)
	return p
}

func (m *marshal) fillHeaders(dst []C.mq_header, hs []Header) {
	for i, h := range hs {
		dst[i].name = m.putString(h.Key)
		dst[i].name_len = C.size_t(len(h.Key))
		dst[i].value = m.put(h.Value)
		dst[i].value_len = C.size_t(len(h.Value))
	}
}

func (m *marshal) headersOnly(hs []Header) bool {
	if !m.reserve(headerBytes(hs), len(hs)) {
		return false
	}
	m.fillHeaders(m.hdrs, hs)
	return true
}

// packed lays a batch out in one C buffer: the records, their headers and the results the
// library reads and writes, then the bytes the records point to (copied from Go, so nothing
// needs pinning and cgo's pointer check has nothing to scan).
type packed struct {
	marshal
	recs []C.mq_record
	res  []C.mq_publish_result
}

func (pk *packed) layout(records []Record) bool {
	bytes, nh := 0, 0
	for i := range records {
		r := &records[i]
		bytes += len(r.Key) + len(r.Value) + headerBytes(r.Headers)
		nh += len(r.Headers)
	}
	n := uintptr(len(records))
	// The records and results go first, where C's alignment is that of the buffer.
	head := n*C.sizeof_mq_record + n*C.sizeof_mq_publish_result
	if !pk.reserve(int(head)+bytes, nh) {
		return false
	}
	// reserve put the headers first: records and results come after them, then the bytes.
	base := unsafe.Pointer(unsafe.SliceData(pk.data))
	pk.recs = unsafe.Slice((*C.mq_record)(base), len(records))
	pk.res = unsafe.Slice((*C.mq_publish_result)(unsafe.Add(base, n*C.sizeof_mq_record)), len(records))
	pk.used = int(head)
	hdrs := pk.hdrs
	for i := range records {
		r, c := &records[i], &pk.recs[i]
		c.key, c.key_len = nil, 0
		if r.Key != nil {
			c.key, c.key_len = pk.put(r.Key), C.size_t(len(r.Key))
		}
		c.payload, c.payload_len = pk.put(r.Value), C.size_t(len(r.Value))
		c.headers, c.header_count = nil, C.size_t(len(r.Headers))
		if len(r.Headers) > 0 {
			c.headers = &hdrs[0]
			pk.fillHeaders(hdrs, r.Headers)
			hdrs = hdrs[len(r.Headers):]
		}
		c.delay_ms = C.int64_t(durationMs(r.Delay))
		pk.res[i].partition, pk.res[i].offset = -1, -1
	}
	return true
}
