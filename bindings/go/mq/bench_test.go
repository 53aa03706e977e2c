package mq

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The C suite's workloads 1, 2, 3 and 5 (bench/suite, docs/BENCHMARKS.md) through the Go API,
// beside what a Go program would otherwise use: a buffered channel of 64-byte []byte messages
// between two goroutines. One op is one message (per receiver); every receiver checks the
// sequence number each payload carries, so nothing fast is also wrong. bench.sh runs them with
// the C suite and prints the ratios.

const (
	benchPayload  = 64
	benchCapacity = 1024
	benchBatch    = 64
)

func benchMessage(seq uint64) []byte {
	m := make([]byte, benchPayload)
	binary.LittleEndian.PutUint64(m, seq)
	return m
}

func benchCheck(b *testing.B, what string, v []byte, want uint64) {
	if len(v) != benchPayload || binary.LittleEndian.Uint64(v) != want {
		b.Fatalf("%s: message %d is wrong (%d bytes, seq %d)", what, want, len(v), binary.LittleEndian.Uint64(v))
	}
}

func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mmsg/s")
}

// BenchmarkChannel is the peer: a buffered channel (1024 slots, mq's capacity) of 64-byte
// []byte messages, a fresh slice per message as a producer that hands off its buffers must.
func BenchmarkChannel(b *testing.B) {
	ch := make(chan []byte, benchCapacity)
	done := make(chan struct{})
	n := uint64(b.N)
	b.ResetTimer()
	go func() {
		defer close(done)
		for seq := uint64(0); seq < n; seq++ {
			benchCheck(b, "channel", <-ch, seq)
		}
	}()
	for seq := uint64(0); seq < n; seq++ {
		ch <- benchMessage(seq)
	}
	<-done
	reportRate(b)
}

// benchPull: 1 producer -> `groups` groups (a consumer goroutine each), 1 partition, through
// a Publisher and a Cursor per group (library 1.7: no name lookups). batch 1: Publish, Poll of
// 1, Ack; batch 64: PublishBatch of 64, Poll of up to 64, one cumulative Ack.
// The producer reuses its buffers (mq copies what it publishes, as the C suite's producer
// relies on); with reuse the consumers poll into a Batch (PollBatch) instead of fresh memory;
// with ackPoll each ack travels with the next poll (AckPollBatch: one call per batch).
func benchPull(b *testing.B, batch, groups int, reuse bool) {
	benchPullWith(b, batch, groups, reuse, false)
}

func benchPullWith(b *testing.B, batch, groups int, reuse, ackPoll bool) {
	br := newBroker(b)
	must(b, br.CreateTopic("bench", Capacity(benchCapacity)))
	ctx := context.Background()
	n := uint64(b.N)
	done := make(chan error, groups)
	var polls atomic.Int64
	pub := benchPublisher(b, br)
	for g := 0; g < groups; g++ {
		group := fmt.Sprintf("g%d", g)
		must(b, br.Subscribe("bench", group))
		cur := benchCursor(b, br, group)
		go func() {
			var into Batch
			acked := int64(-1) // the ack the next AckPollBatch carries (none before the first)
			for next := uint64(0); next < n; {
				var msgs []Message
				var err error
				if ackPoll && acked >= 0 {
					err = cur.AckPollBatch(ctx, acked, batch, &into)
					msgs = into.Messages
				} else if reuse || ackPoll {
					err = cur.PollBatch(ctx, batch, &into)
					msgs = into.Messages
				} else {
					msgs, err = cur.Poll(ctx, batch)
				}
				if err != nil {
					done <- err
					return
				}
				polls.Add(1)
				for i := range msgs {
					benchCheck(b, group, msgs[i].Value, next)
					next++
				}
				if ackPoll && next < n {
					acked = msgs[len(msgs)-1].Offset
					continue
				}
				if err := cur.Ack(msgs[len(msgs)-1].Offset); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	b.ResetTimer()
	if batch == 1 {
		msg := benchMessage(0)
		for seq := uint64(0); seq < n; seq++ {
			binary.LittleEndian.PutUint64(msg, seq)
			if _, _, err := pub.Publish(ctx, nil, msg); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		recs := make([]Record, batch)
		for i := range recs {
			recs[i].Value = benchMessage(0)
		}
		for seq := uint64(0); seq < n; {
			k := 0
			for ; k < batch && seq < n; k, seq = k+1, seq+1 {
				binary.LittleEndian.PutUint64(recs[k].Value, seq)
			}
			if _, err := pub.PublishBatch(ctx, recs[:k]); err != nil {
				b.Fatal(err)
			}
		}
	}
	for g := 0; g < groups; g++ {
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportRate(b)
	b.ReportMetric(float64(b.N)*float64(groups)/float64(polls.Load()), "msg/poll")
}

// Workload 1: batches of 64; Poll copies each batch into new memory.
func BenchmarkBatch64(b *testing.B) { benchPull(b, benchBatch, 1, false) }

// Workload 1 with PollBatch: each batch lands in the storage of the last.
func BenchmarkBatch64Reuse(b *testing.B) { benchPull(b, benchBatch, 1, true) }

// Workload 1 with AckPollBatch: each ack travels with the next poll, one call per batch.
func BenchmarkBatch64AckPoll(b *testing.B) { benchPullWith(b, benchBatch, 1, true, true) }

// Workload 2 with AckPollBatch of 1.
func BenchmarkSingleAckPoll(b *testing.B) { benchPullWith(b, 1, 1, true, true) }

// Workload 2: one message at a time (Publish, Poll, Ack).
func BenchmarkSingle(b *testing.B) { benchPull(b, 1, 1, false) }

// Workload 2 with PollBatch.
func BenchmarkSingleReuse(b *testing.B) { benchPull(b, 1, 1, true) }

// Workload 3: fan-out to 2 groups, batches of 64 (per group: each receives every message),
// polling with PollBatch.
func BenchmarkFanOut2(b *testing.B) { benchPull(b, benchBatch, 2, true) }

// Workload 5: 1 producer (batches of 64) -> a push subscription.
func benchPush(b *testing.B, prefetch int) {
	br := newBroker(b)
	must(b, br.CreateTopic("bench", Capacity(benchCapacity)))
	n := uint64(b.N)
	var next atomic.Uint64
	done := make(chan struct{})
	sub, err := br.SubscribeFunc("bench", "push", func(m *Message) error {
		seq := next.Load()
		benchCheck(b, "push", m.Value, seq)
		if next.Add(1) == n {
			close(done)
		}
		return nil
	}, Prefetch(prefetch))
	must(b, err)
	b.ResetTimer()
	ctx := context.Background()
	recs := make([]Record, benchBatch)
	for i := range recs {
		recs[i].Value = benchMessage(0)
	}
	for seq := uint64(0); seq < n; {
		k := 0
		for ; k < benchBatch && seq < n; k, seq = k+1, seq+1 {
			binary.LittleEndian.PutUint64(recs[k].Value, seq)
		}
		if _, err := br.PublishBatch(ctx, "bench", recs[:k]); err != nil {
			b.Fatal(err)
		}
	}
	<-done
	b.StopTimer()
	must(b, sub.Close())
	reportRate(b)
}

func BenchmarkPushPrefetch10(b *testing.B) { benchPush(b, 10) }
func BenchmarkPushPrefetch64(b *testing.B) { benchPush(b, 64) }

// benchPublisher and benchCursor are the handles the pull benchmarks use on topic "bench".
func benchPublisher(b *testing.B, br *Broker) *Publisher {
	p, err := br.Publisher("bench")
	must(b, err)
	b.Cleanup(func() { p.Close() })
	return p
}

func benchCursor(b *testing.B, br *Broker, group string) *Cursor {
	c, err := br.Cursor("bench", group, 0)
	must(b, err)
	b.Cleanup(func() { c.Close() })
	return c
}

// The binding's own cost per message, without a second goroutine (so without the thread
// wake-ups that dominate, and vary most, in the two-goroutine workloads): Publish, PollBatch
// of 1 and Ack in one loop (context.Background: no token, no timer). cpu-ns/op is the process's
// CPU time per message (getrusage, garbage collector included); bench/oneloop.c runs the same
// loops through the C API for comparison. Through a Publisher and a Cursor, as benchPull.
func BenchmarkSingleOneGoroutine(b *testing.B) {
	benchOneGoroutine(b, context.Background())
}

// PublishBatch of 64, PollBatch of 64 and one Ack in one loop, as BenchmarkSingleOneGoroutine.
func BenchmarkBatch64OneGoroutine(b *testing.B) { benchBatchOneGoroutine(b, false) }

// BenchmarkBatch64OneGoroutine with the ack travelling with the next poll (AckPollBatch).
func BenchmarkBatch64AckPollOneGoroutine(b *testing.B) { benchBatchOneGoroutine(b, true) }

func benchBatchOneGoroutine(b *testing.B, ackPoll bool) {
	br := newBroker(b)
	must(b, br.CreateTopic("bench", Capacity(benchCapacity)))
	must(b, br.Subscribe("bench", "g"))
	pub, cur := benchPublisher(b, br), benchCursor(b, br, "g")
	recs := make([]Record, benchBatch)
	for i := range recs {
		recs[i].Value = benchMessage(0)
	}
	var into Batch
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuNow()
	for seq := uint64(0); seq < uint64(b.N); {
		k := 0
		for ; k < benchBatch && seq < uint64(b.N); k, seq = k+1, seq+1 {
			binary.LittleEndian.PutUint64(recs[k].Value, seq)
		}
		if _, err := pub.PublishBatch(ctx, recs[:k]); err != nil {
			b.Fatal(err)
		}
		var err error
		if ackPoll && len(into.Messages) > 0 {
			err = cur.AckPollBatch(ctx, into.Messages[len(into.Messages)-1].Offset, benchBatch, &into)
		} else {
			err = cur.PollBatch(ctx, benchBatch, &into)
		}
		if err != nil {
			b.Fatal(err)
		}
		for i := range into.Messages {
			benchCheck(b, "poll", into.Messages[i].Value, seq-uint64(k)+uint64(i))
		}
		if !ackPoll {
			if err := cur.Ack(into.Messages[len(into.Messages)-1].Offset); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	reportCPU(b, cpu)
}

// cpuNow is the process's CPU time (user + system) so far.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, since time.Duration) {
	b.ReportMetric(float64(cpuNow()-since)/float64(b.N), "cpu-ns/op")
}

// The cost of a cancellable context on a blocking call (a token and a context.AfterFunc per
// call), beside context.Background's nothing: workload 2 with a cancellable context.
func BenchmarkSingleCancellableContext(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	benchOneGoroutine(b, ctx)
}

// BenchmarkSingleOneGoroutine with the ack travelling with the next poll (AckPollBatch of 1).
func BenchmarkSingleAckPollOneGoroutine(b *testing.B) {
	benchOneGoroutineWith(b, context.Background(), true)
}

func benchOneGoroutine(b *testing.B, ctx context.Context) { benchOneGoroutineWith(b, ctx, false) }

func benchOneGoroutineWith(b *testing.B, ctx context.Context, ackPoll bool) {
	br := newBroker(b)
	must(b, br.CreateTopic("bench", Capacity(benchCapacity)))
	must(b, br.Subscribe("bench", "g"))
	pub, cur := benchPublisher(b, br), benchCursor(b, br, "g")
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuNow()
	msg := benchMessage(0)
	var into Batch
	for seq := uint64(0); seq < uint64(b.N); seq++ {
		binary.LittleEndian.PutUint64(msg, seq)
		if _, _, err := pub.Publish(ctx, nil, msg); err != nil {
			b.Fatal(err)
		}
		var err error
		if ackPoll && seq > 0 {
			err = cur.AckPollBatch(ctx, into.Messages[0].Offset, 1, &into)
		} else {
			err = cur.PollBatch(ctx, 1, &into)
		}
		if err != nil {
			b.Fatal(err)
		}
		msgs := into.Messages
		benchCheck(b, "poll", msgs[0].Value, seq)
		if !ackPoll {
			if err := cur.Ack(msgs[0].Offset); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	reportCPU(b, cpu)
}

// A wake-up of a goroutine parked in Poll (library 1.4: the asynchronous poll, completed on
// the broker's completer thread), in Broker.Poll and in Member.Poll, beside the same hand-off
// through Go channels, and beside a poll that blocks its thread in the library (Broker.Poll on
// a broker whose waits block, as on the Kafka engine): ping-pong, one message at a time. A
// producer publishes and waits for the consumer's reply on a channel; the consumer, waiting
// in its poll (nothing is there when it polls), wakes, acks and replies. The channel peer
// sends on an unbuffered channel to a goroutine waiting in a receive, which replies the same
// way. Reports the round trips and the ratios to the channel's (the OS thread wake-ups
// dominate mq's; the channel's stay inside the scheduler).
func BenchmarkWakeParkedPoll(b *testing.B) {
	br := newBroker(b)
	must(b, br.CreateTopic("parked", Capacity(benchCapacity)))
	must(b, br.Subscribe("parked", "g"))
	must(b, br.CreateTopic("member", Capacity(benchCapacity)))
	must(b, br.Subscribe("member", "g"))
	m, err := br.Join("member", "g")
	must(b, err)
	defer m.Close()
	blockingBroker := newBroker(b)
	blockingBroker.core.blocking = true // its waits are the blocking calls, as on Kafka
	must(b, blockingBroker.CreateTopic("blocking", Capacity(benchCapacity)))
	must(b, blockingBroker.Subscribe("blocking", "g"))
	ctx := context.Background()
	n := b.N
	msg := benchMessage(0)
	pingPong := func(br *Broker, topic string, poll func() ([]Message, error), ack func(int64) error) time.Duration {
		reply := make(chan error)
		go func() {
			for i := 0; i < n; i++ {
				msgs, err := poll()
				if err == nil {
					err = ack(msgs[0].Offset)
				}
				reply <- err
			}
		}()
		start := time.Now()
		for i := 0; i < n; i++ {
			if _, _, err := br.Publish(ctx, topic, nil, msg); err != nil {
				b.Fatal(err)
			}
			if err := <-reply; err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	b.ResetTimer()
	parked := pingPong(br, "parked", func() ([]Message, error) { return br.Poll(ctx, "parked", "g", 0, 1) },
		func(o int64) error { return br.Ack("parked", "g", 0, o) })
	member := pingPong(br, "member", func() ([]Message, error) { return m.Poll(ctx, 1) },
		func(o int64) error { return m.Ack(0, o) })
	blocking := pingPong(blockingBroker, "blocking",
		func() ([]Message, error) { return blockingBroker.Poll(ctx, "blocking", "g", 0, 1) },
		func(o int64) error { return blockingBroker.Ack("blocking", "g", 0, o) })

	in, out := make(chan []byte), make(chan struct{})
	go func() {
		for i := 0; i < n; i++ {
			<-in
			out <- struct{}{}
		}
	}()
	start := time.Now()
	for i := 0; i < n; i++ {
		in <- msg
		<-out
	}
	channel := time.Since(start)
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n) }
	b.ReportMetric(per(parked), "parked-ns/roundtrip")
	b.ReportMetric(per(member), "member-ns/roundtrip")
	b.ReportMetric(per(blocking), "blocking-ns/roundtrip")
	b.ReportMetric(per(channel), "chan-ns/roundtrip")
	b.ReportMetric(float64(parked)/float64(channel), "parked/chan")
	b.ReportMetric(float64(parked)/float64(blocking), "parked/blocking")
}
