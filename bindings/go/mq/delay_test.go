package mq

import (
	"errors"
	"math"
	"testing"
	"time"
)

// Delayed delivery (library 1.5): WithDelay and Record.Delay hold a message's hand-out, not its
// append, until the broker clock reaches its publish time + delay.

// delayBroker is a broker on a manual clock with topic t (partitions) and group g.
func delayBroker(t *testing.T, partitions int) (*Broker, *ManualClock) {
	t.Helper()
	clock := NewManualClock(1_000_000_000)
	b := newBroker(t, WithClock(clock))
	must(t, b.CreateTopic("t", Partitions(partitions)))
	must(t, b.Subscribe("t", "g"))
	return b, clock
}

// pollNow polls without waiting: the payloads, or nil after ErrTimeout.
func pollNow(t *testing.T, b *Broker, group string, partition int) []string {
	t.Helper()
	msgs, err := b.Poll(noWait(), "t", group, partition, 10)
	if errors.Is(err, ErrTimeout) {
		return nil
	}
	must(t, err)
	return values(msgs)
}

func wantValues(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %q, want %q", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: got %q, want %q", what, got, want)
		}
	}
}

func TestDelayedMessageIsHandedOutAtItsTime(t *testing.T) {
	b, clock := delayBroker(t, 1)
	p, o, err := b.Publish(noWait(), "t", nil, []byte("later"), WithDelay(100*time.Millisecond))
	must(t, err)
	if p != 0 || o != 0 {
		t.Fatalf("published at %d:%d", p, o)
	}
	// Appended at once: in the backlog already.
	pi, err := b.PartitionInfo("t", 0)
	must(t, err)
	if pi.End != 1 || pi.Backlog != 1 {
		t.Fatalf("partition info %+v", pi)
	}
	wantValues(t, "before", pollNow(t, b, "g", 0))
	clock.Advance(99 * time.Millisecond)
	wantValues(t, "1 ms early", pollNow(t, b, "g", 0))
	clock.Advance(time.Millisecond)
	msgs, err := b.Poll(noWait(), "t", "g", 0, 10)
	must(t, err)
	wantValues(t, "due", values(msgs), "later")
	if msgs[0].DeliveryCount != 1 {
		t.Errorf("delivery count %d", msgs[0].DeliveryCount)
	}
}

func TestDelayedMessageHoldsTheOnesBehindIt(t *testing.T) {
	b, clock := delayBroker(t, 1)
	must(t, b.Subscribe("t", "h"))
	publish(t, b, "t", nil, "a")
	if _, _, err := b.Publish(noWait(), "t", nil, []byte("b"), WithDelay(time.Second)); err != nil {
		t.Fatal(err)
	}
	publish(t, b, "t", nil, "c")
	for _, g := range []string{"g", "h"} {
		wantValues(t, g+" first", pollNow(t, b, g, 0), "a")
		wantValues(t, g+": c waits behind b", pollNow(t, b, g, 0))
	}
	clock.Advance(time.Second)
	for _, g := range []string{"g", "h"} {
		wantValues(t, g+" once b is due", pollNow(t, b, g, 0), "b", "c")
	}
	// Once due it stays due: a redelivery does not wait again.
	must(t, b.Nack("t", "h", 0))
	wantValues(t, "redelivered", pollNow(t, b, "h", 0), "a", "b", "c")
}

func TestBatchRecordsCarryTheirOwnDelays(t *testing.T) {
	b, clock := delayBroker(t, 1)
	res, err := b.PublishBatch(noWait(), "t", []Record{
		{Value: []byte("x")},
		{Value: []byte("y"), Delay: 50 * time.Millisecond},
		{Value: []byte("z"), Delay: 10 * time.Millisecond},
		{Value: []byte("w"), Delay: 10*time.Millisecond + time.Microsecond}, // rounds up to 11 ms
	})
	must(t, err)
	for i, r := range res {
		if r.Offset != int64(i) {
			t.Fatalf("results %+v", res)
		}
	}
	wantValues(t, "at once", pollNow(t, b, "g", 0), "x")
	clock.Advance(10 * time.Millisecond)
	wantValues(t, "z is due but waits behind y", pollNow(t, b, "g", 0))
	clock.Advance(39 * time.Millisecond)
	wantValues(t, "49 ms", pollNow(t, b, "g", 0))
	clock.Advance(time.Millisecond)
	wantValues(t, "50 ms", pollNow(t, b, "g", 0), "y", "z", "w")
}

func TestDelayedSinglePublishKeepsKeyAndHeaders(t *testing.T) {
	b, clock := delayBroker(t, 3)
	p, o, err := b.Publish(noWait(), "t", []byte("k"), []byte("v"),
		WithHeaders(Header{Key: "trace", Value: []byte("7")}), WithDelay(5*time.Millisecond))
	must(t, err)
	want, err := KeyPartition([]byte("k"), 3)
	must(t, err)
	if p != want || o != 0 {
		t.Fatalf("published at %d:%d, want %d:0", p, o, want)
	}
	wantValues(t, "before", pollNow(t, b, "g", p))
	clock.Advance(5 * time.Millisecond)
	msgs, err := b.Poll(noWait(), "t", "g", p, 10)
	must(t, err)
	m := msgs[0]
	if string(m.Key) != "k" || string(m.Value) != "v" || len(m.Headers) != 1 ||
		m.Headers[0].Key != "trace" || string(m.Headers[0].Value) != "7" {
		t.Fatalf("got %+v", m)
	}
}

func TestBadDelayIsRefusedWithTheLibraryText(t *testing.T) {
	b, _ := delayBroker(t, 1)
	text := func(record int, ms string) string {
		return "record " + string(rune('0'+record)) + ": delay_ms is " + ms +
			"; it must be 0 to 1099511627776 ms (2^40 ms)"
	}
	p, o, err := b.Publish(noWait(), "t", nil, []byte("bad"), WithDelay(-time.Millisecond))
	e := wantStatus(t, err, ErrInvalid, StatusInvalid)
	if e.Message != text(0, "-1") || e.Op != "publish" || p != -1 || o != -1 {
		t.Fatalf("got %d:%d %v", p, o, err)
	}
	// A negative duration rounds away from zero: -1 ns is -1 ms.
	_, _, err = b.Publish(noWait(), "t", nil, []byte("bad"), WithDelay(-1))
	if e := wantStatus(t, err, ErrInvalid, StatusInvalid); e.Message != text(0, "-1") {
		t.Fatalf("got %v", err)
	}
	res, err := b.PublishBatch(noWait(), "t", []Record{
		{Value: []byte("ok")},
		{Value: []byte("bad"), Delay: (1<<40 + 1) * time.Millisecond},
	})
	if e := wantStatus(t, err, ErrInvalid, StatusInvalid); e.Message != text(1, "1099511627777") || res != nil {
		t.Fatalf("got %v %v", res, err)
	}
	_, _, err = b.Publish(noWait(), "t", nil, []byte("far"), WithDelay(math.MaxInt64))
	wantStatus(t, err, ErrInvalid, StatusInvalid)
	pi, err := b.PartitionInfo("t", 0)
	must(t, err)
	if pi.End != 0 {
		t.Fatalf("appended %d", pi.End)
	}
	// 2^40 ms is the longest delay.
	_, _, err = b.Publish(noWait(), "t", nil, []byte("edge"), WithDelay((1<<40)*time.Millisecond))
	must(t, err)
}

// On the real clock, a Poll waiting with a long deadline returns when the delayed message is
// due, not at the deadline.
func TestWaitingPollWakesWhenDelayedMessageIsDue(t *testing.T) {
	b := newBroker(t)
	must(t, b.CreateTopic("t"))
	must(t, b.Subscribe("t", "g"))
	start := time.Now()
	if _, _, err := b.Publish(noWait(), "t", nil, []byte("soon"), WithDelay(50*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	msgs, err := b.Poll(within(t, 10*time.Second), "t", "g", 0, 10)
	took := time.Since(start)
	must(t, err)
	wantValues(t, "woken", values(msgs), "soon")
	if took < 50*time.Millisecond || took > 5*time.Second {
		t.Fatalf("the poll returned after %v", took)
	}
}
