package mq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// offsets lists the messages as OFFSET:VALUE (delivery count after a slash when above 1).
func offsets(msgs []Message) string {
	var s []string
	for _, m := range msgs {
		e := fmt.Sprintf("%d:%s", m.Offset, m.Value)
		if m.DeliveryCount != 1 {
			e += fmt.Sprintf("/%d", m.DeliveryCount)
		}
		s = append(s, e)
	}
	return strings.Join(s, " ")
}

// statusText is an error's status and the library's message ("" for nil).
func statusText(err error) string {
	var e *Error
	if !errors.As(err, &e) {
		return fmt.Sprint(err)
	}
	return e.Status.String() + ": " + e.Message
}

// AckPoll is exactly Ack then Poll: two groups fed the same log, one acking through AckPoll and
// one through the pair, get the same messages, errors and state at every step, redeliveries
// after a nack included.
func TestAckPollIsAckThenPoll(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "one"))
	must(t, b.Subscribe("t", "pair"))
	for i := 0; i < 7; i++ {
		publish(t, b, "t", nil, fmt.Sprintf("m-%d", i))
	}
	both := func(f func(group string) ([]Message, error)) int64 {
		t.Helper()
		one, errOne := f("one")
		pair, errPair := f("pair")
		if offsets(one) != offsets(pair) || statusText(errOne) != statusText(errPair) {
			t.Fatalf("one %q %v, pair %q %v", offsets(one), errOne, offsets(pair), errPair)
		}
		must(t, errOne)
		return one[len(one)-1].Offset
	}
	last := both(func(g string) ([]Message, error) { return b.Poll(noWait(), "t", g, 0, 2) })
	for step := 0; ; step++ {
		if step == 1 {
			// In flight again after a nack: AckPoll acks part of the redelivery.
			last = both(func(g string) ([]Message, error) {
				must(t, b.Nack("t", g, 0))
				return b.Poll(noWait(), "t", g, 0, 1)
			})
		}
		got, errOne := b.AckPoll(noWait(), "t", "one", 0, last, 2)
		errPair := b.Ack("t", "pair", 0, last)
		var want []Message
		if errPair == nil {
			want, errPair = b.Poll(noWait(), "t", "pair", 0, 2)
		}
		if offsets(got) != offsets(want) || statusText(errOne) != statusText(errPair) {
			t.Fatalf("step %d: AckPoll %q %v, Ack+Poll %q %v", step, offsets(got), errOne, offsets(want), errPair)
		}
		gOne, _ := b.GroupInfo("t", "one", 0)
		gPair, _ := b.GroupInfo("t", "pair", 0)
		if gOne.Committed != gPair.Committed || gOne.Next != gPair.Next {
			t.Fatalf("step %d: AckPoll left %+v, Ack+Poll %+v", step, gOne, gPair)
		}
		if errOne != nil {
			wantStatus(t, errOne, ErrTimeout, StatusTimeout)
			if gOne.Committed != 7 || gOne.InFlight != 0 || step != 3 {
				t.Fatalf("step %d: the last ack did not stand: %+v", step, gOne)
			}
			return
		}
		if step == 1 && offsets(got) != "3:m-3/2 4:m-4" {
			t.Errorf("after a nack: %q", offsets(got))
		}
		last = got[len(got)-1].Offset
	}
}

// A rejected ack polls nothing, waits for nothing and changes nothing; arguments refused
// before the ack (max 0, a negative max, no such group or partition) leave the ack undone.
func TestAckPollRejectedAck(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	publish(t, b, "t", nil, "a", "b", "c")
	if _, err := b.Poll(noWait(), "t", "g", 0, 2); err != nil {
		t.Fatal(err)
	}
	must(t, b.Ack("t", "g", 0, 0))
	before, _ := b.GroupInfo("t", "g", 0)
	for _, off := range []int64{0, 2, 9} {
		start := time.Now()
		msgs, err := b.AckPoll(within(t, 10*time.Second), "t", "g", 0, off, 10)
		e := wantStatus(t, err, ErrNotInFlight, StatusNotInFlight)
		if !strings.Contains(e.Message, "in flight: 1..1") || !strings.HasPrefix(err.Error(), "mq: ack poll: ") {
			t.Errorf("ack of %d: %v", off, err)
		}
		if msgs != nil || time.Since(start) > time.Second {
			t.Errorf("a rejected ack of %d polled %q after %v", off, offsets(msgs), time.Since(start))
		}
	}
	check := func(what string) {
		t.Helper()
		now, _ := b.GroupInfo("t", "g", 0)
		now.NextAge = before.NextAge // time passes
		if now != before {
			t.Errorf("%s changed the group: %+v, was %+v", what, now, before)
		}
	}
	check("rejected acks")
	_, err := b.AckPoll(noWait(), "t", "g", 0, 0, 0)
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	_, err = b.AckPoll(noWait(), "t", "g", 0, 0, -1)
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	_, err = b.AckPoll(noWait(), "t", "nobody", 0, 0, 1)
	wantStatus(t, err, ErrNoGroup, StatusNoGroup)
	_, err = b.AckPoll(noWait(), "t", "g", 3, 0, 1)
	wantStatus(t, err, ErrPartition, StatusPartition)
	_, err = b.AckPoll(noWait(), "t", "g", 1<<40, 0, 1)
	wantStatus(t, err, ErrPartition, StatusPartition)
	_, err = b.AckPoll(noWait(), "t\x00", "g", 0, 0, 1)
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	var batch Batch
	wantStatus(t, b.AckPollBatch(noWait(), "t", "g", 0, 4, 1, &batch), ErrNotInFlight, StatusNotInFlight)
	check("refused arguments")
	if msgs, err := b.Poll(noWait(), "t", "g", 0, 10); err != nil || offsets(msgs) != "2:c" {
		t.Errorf("the poll after the refusals: %q %v", offsets(msgs), err)
	}
	must(t, b.Close())
	_, err = b.AckPoll(noWait(), "t", "g", 0, 0, 1)
	wantStatus(t, err, ErrClosed, StatusClosed)
}

// The ack stands whatever the poll finds: a deadline, a cancel or Close ending the wait. A
// waiting AckPoll wakes on a publish.
func TestAckPollWaitsAfterTheAck(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	next := int64(0)
	handOut := func() {
		t.Helper()
		publish(t, b, "t", nil, fmt.Sprintf("m-%d", next))
		if msgs, err := b.Poll(noWait(), "t", "g", 0, 1); err != nil || msgs[0].Offset != next {
			t.Fatalf("poll: %q %v", offsets(msgs), err)
		}
		next++
	}
	type result struct {
		msgs []Message
		err  error
	}
	start := func(ctx context.Context) chan result {
		done := make(chan result, 1)
		go func() {
			msgs, err := b.AckPoll(ctx, "t", "g", 0, next-1, 10)
			done <- result{msgs, err}
		}()
		eventually(t, "the ack", func() bool { return committed(t, b, "t", "g", 0) == next })
		return done
	}
	wait := func(done chan result) result {
		t.Helper()
		select {
		case r := <-done:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("AckPoll did not return")
		}
		return result{}
	}

	// Woken by a publish.
	handOut()
	done := start(context.Background())
	publish(t, b, "t", nil, "late")
	if r := wait(done); r.err != nil || offsets(r.msgs) != "1:late" {
		t.Errorf("woken by a publish: %q %v", offsets(r.msgs), r.err)
	}
	next++

	// A deadline.
	handOut()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	msgs, err := b.AckPoll(ctx, "t", "g", 0, next-1, 10)
	wantStatus(t, err, ErrTimeout, StatusTimeout)
	if !errors.Is(err, context.DeadlineExceeded) || msgs != nil || time.Since(t0) < 50*time.Millisecond {
		t.Errorf("deadline: %v, %q after %v", err, offsets(msgs), time.Since(t0))
	}
	if c := committed(t, b, "t", "g", 0); c != next {
		t.Errorf("after a timed-out AckPoll committed is %d, want %d", c, next)
	}

	// A cancel, within 100 ms.
	handOut()
	ctx, cancel = context.WithCancel(context.Background())
	done = start(ctx)
	t0 = time.Now()
	cancel()
	r := wait(done)
	wantStatus(t, r.err, ErrCancelled, StatusCancelled)
	if !errors.Is(r.err, context.Canceled) || time.Since(t0) > 100*time.Millisecond {
		t.Errorf("cancel: %v after %v", r.err, time.Since(t0))
	}

	// Close.
	handOut()
	done = start(context.Background())
	must(t, b.Close())
	wantStatus(t, wait(done).err, ErrClosed, StatusClosed)
}

// The room an ack makes lets a blocked publisher in, and the same call's poll hands out what
// it published.
func TestAckPollLetsPublisherIn(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Capacity(2)))
	must(t, b.Subscribe("t", "g"))
	publish(t, b, "t", nil, "a", "b")
	if _, err := b.Poll(noWait(), "t", "g", 0, 1); err != nil {
		t.Fatal(err)
	}
	published := make(chan error, 1)
	go func() {
		_, _, err := b.Publish(within(t, 10*time.Second), "t", nil, []byte("c"))
		published <- err
	}()
	eventually(t, "the publisher to wait", func() bool {
		info, _ := b.PartitionInfo("t", 0)
		return info.ProducerWaits == 1
	})
	msgs, err := b.AckPoll(within(t, 10*time.Second), "t", "g", 0, 0, 1)
	must(t, err)
	must(t, <-published)
	if offsets(msgs) != "1:b" {
		t.Errorf("AckPoll: %q", offsets(msgs))
	}
	msgs, err = b.AckPoll(within(t, 10*time.Second), "t", "g", 0, 1, 5)
	must(t, err)
	if offsets(msgs) != "2:c" {
		t.Errorf("AckPoll after the publisher: %q", offsets(msgs))
	}
}

// AckPollBatch reuses the Batch's storage: a steady ack+poll loop allocates nothing.
func TestAckPollBatchAllocatesNothing(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Capacity(1<<16)))
	must(t, b.Subscribe("t", "g"))
	value := []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	for i := 0; i < 20000; i++ {
		if _, _, err := b.Publish(noWait(), "t", nil, value); err != nil {
			t.Fatal(err)
		}
	}
	var batch Batch
	must(t, b.PollBatch(noWait(), "t", "g", 0, 64, &batch))
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		last := batch.Messages[len(batch.Messages)-1].Offset
		if err := b.AckPollBatch(ctx, "t", "g", 0, last, 64, &batch); err != nil || len(batch.Messages) != 64 ||
			batch.Messages[0].Offset != last+1 || string(batch.Messages[63].Value) != string(value) {
			t.Fatalf("AckPollBatch after %d: %d messages, %v", last, len(batch.Messages), err)
		}
	})
	if allocs != 0 {
		t.Errorf("AckPollBatch allocated %.1f times per call", allocs)
	}
}

// Member.AckPoll: the ack, then the member's poll; a rejected ack (not in flight, a partition
// it does not own, a rebalance) polls nothing; the ack stands after a timeout, a cancel and
// Close.
func TestMemberAckPoll(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t", Partitions(2)))
	m, err := b.Join("t", "g", MemberID("a"))
	must(t, err)
	for i := 0; i < 3; i++ {
		publish(t, b, "t", []byte("k"), fmt.Sprintf("x-%d", i))
	}
	kp, _ := KeyPartition([]byte("k"), 2)
	msgs, err := m.Poll(noWait(), 1)
	must(t, err)
	if offsets(msgs) != "0:x-0" || msgs[0].Partition != kp {
		t.Fatalf("member poll: %q on %d", offsets(msgs), msgs[0].Partition)
	}
	msgs, err = m.AckPoll(noWait(), kp, 0, 10)
	must(t, err)
	if offsets(msgs) != "1:x-1 2:x-2" || msgs[0].Partition != kp {
		t.Fatalf("member AckPoll: %q", offsets(msgs))
	}
	_, err = m.AckPoll(noWait(), kp, 0, 10)
	wantStatus(t, err, ErrNotInFlight, StatusNotInFlight)
	_, err = m.AckPoll(noWait(), 7, 0, 10)
	wantStatus(t, err, ErrPartition, StatusPartition)
	_, err = m.AckPoll(noWait(), kp, 2, 0)
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	if c := committed(t, b, "t", "g", kp); c != 1 {
		t.Fatalf("refused member AckPolls moved committed to %d", c)
	}
	_, err = m.AckPoll(noWait(), kp, 2, 10)
	wantStatus(t, err, ErrTimeout, StatusTimeout)
	if c := committed(t, b, "t", "g", kp); c != 3 {
		t.Fatalf("after a timed-out member AckPoll committed is %d, want 3", c)
	}

	// Blocked in the wait after its ack: a cancel, then Close, wake it.
	publish(t, b, "t", []byte("k"), "x-3", "x-4")
	var batch Batch
	must(t, m.PollBatch(noWait(), 1, &batch))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.AckPollBatch(ctx, kp, 3, 1, &batch) }()
	// The ack (offset 3) stands and the poll hands out 4; then a second call acks 4 and waits.
	must(t, <-done)
	if offsets(batch.Messages) != "4:x-4" {
		t.Fatalf("member AckPollBatch: %q", offsets(batch.Messages))
	}
	go func() { _, err := m.AckPoll(ctx, kp, 4, 1); done <- err }()
	eventually(t, "the member's ack", func() bool { return committed(t, b, "t", "g", kp) == 5 })
	t0 := time.Now()
	cancel()
	err = <-done
	wantStatus(t, err, ErrCancelled, StatusCancelled)
	if !errors.Is(err, context.Canceled) || time.Since(t0) > 100*time.Millisecond {
		t.Errorf("cancelled member AckPoll: %v after %v", err, time.Since(t0))
	}

	// A rebalance refuses the ack.
	publish(t, b, "t", []byte("k"), "x-5")
	if msgs, err := m.Poll(noWait(), 1); err != nil || offsets(msgs) != "5:x-5" {
		t.Fatalf("member poll: %q %v", offsets(msgs), err)
	}
	other, err := b.Join("t", "g", MemberID("b"))
	must(t, err)
	_, err = m.AckPoll(noWait(), kp, 5, 1)
	wantStatus(t, err, ErrRebalanced, StatusRebalanced)
	if c := committed(t, b, "t", "g", kp); c != 5 {
		t.Fatalf("an AckPoll refused by a rebalance moved committed to %d", c)
	}
	must(t, other.Close())
	if _, _, err := m.Assignment(); err != nil {
		t.Fatal(err)
	}
	msgs, err = m.Poll(noWait(), 1) // what was in flight comes again after the rebalance
	must(t, err)
	if offsets(msgs) != "5:x-5/2" {
		t.Fatalf("after the rebalance: %q", offsets(msgs))
	}
	go func() { _, err := m.AckPoll(context.Background(), kp, 5, 1); done <- err }()
	eventually(t, "the member's ack", func() bool { return committed(t, b, "t", "g", kp) == 6 })
	must(t, m.Close())
	wantStatus(t, <-done, ErrClosed, StatusClosed)
	_, err = m.AckPoll(noWait(), kp, 5, 1)
	wantStatus(t, err, ErrClosed, StatusClosed)
}
